"""A tiny character-level GPT: train on a few built-in sentences, then sample.

Written the way a PyTorch user writes a nanoGPT-style script: a Module subclass,
random (x, y) windows drawn with ``randint``, AdamW with a cosine schedule, and
sampling with ``topk`` filtering and ``multinomial``.

Run: ``python examples/pytorch-style/char_gpt.py --steps 300``
"""

from __future__ import annotations

import argparse

import lamina.autograd as ag
import lamina.nn.functional as F
from lamina import nn, optim

TEXT = (
    "the quick brown fox jumps over the lazy dog. "
    "a small model reads a small text and learns which letter comes next. "
    "the dog sleeps in the sun and the fox runs into the woods. "
    "every morning the baker bakes bread and the children walk to school. "
)


class Block(nn.Module):
    """One pre-norm transformer block (self-attention + MLP), causal by mask."""

    def __init__(self, d_model: int, n_head: int, dropout: float) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(
            d_model, n_head, dim_feedforward=4 * d_model, dropout=dropout,
            activation="gelu", batch_first=True, norm_first=True)

    def forward(self, x: ag.Tensor, mask: ag.Tensor) -> ag.Tensor:
        return self.layer(x, src_mask=mask, is_causal=True)


class CharGPT(nn.Module):
    """Token + position embeddings, a stack of causal blocks, a final norm and a head."""

    def __init__(self, vocab_size: int, block_size: int, d_model: int = 48,
                 n_head: int = 4, n_layer: int = 2, dropout: float = 0.0) -> None:
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(block_size, d_model)
        self.blocks = nn.ModuleList([Block(d_model, n_head, dropout) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, idx: ag.Tensor, targets: ag.Tensor | None = None):
        b, t = idx.shape
        pos = ag.arange(t, dtype=ag.int64, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        # -inf above the diagonal: position i attends to positions <= i only.
        mask = ag.triu(ag.full((t, t), float("-inf"), device=idx.device), diagonal=1)
        for block in self.blocks:
            x = block(x, mask)
        logits = self.head(self.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(b * t, -1), targets.view(b * t))
        return logits, loss

    @ag.no_grad()
    def generate(self, idx: ag.Tensor, max_new_tokens: int, temperature: float = 1.0,
                 top_k: int | None = None) -> ag.Tensor:
        """Append ``max_new_tokens`` sampled tokens to ``idx`` (B, T)."""
        for _ in range(max_new_tokens):
            idx_cond = idx[:, -self.block_size:]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = ag.topk(logits, min(top_k, logits.shape[-1]))
                logits[logits < v[:, [-1]]] = -float("inf")
            probs = F.softmax(logits, dim=-1)
            idx_next = ag.multinomial(probs, num_samples=1)
            idx = ag.cat((idx, idx_next), dim=1)
        return idx


def get_batch(data: ag.Tensor, block_size: int, batch_size: int, device: str):
    """Random (x, y) windows where y is x shifted one character to the right."""
    ix = ag.randint(len(data) - block_size - 1, (batch_size,))
    x = ag.stack([data[i:i + block_size] for i in ix])
    y = ag.stack([data[i + 1:i + 1 + block_size] for i in ix])
    return x.to(device), y.to(device)


def main(steps: int = 300, device: str = "cpu", batch_size: int = 16,
         block_size: int = 32, lr: float = 3e-3, seed: int = 0) -> list[float]:
    """Train for ``steps`` steps, print a sample, return the training losses."""
    ag.manual_seed(seed)
    chars = sorted(set(TEXT))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = dict(enumerate(chars))
    data = ag.tensor([stoi[c] for c in TEXT], dtype=ag.int64)

    model = CharGPT(len(chars), block_size).to(device)
    optimizer = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(steps, 1))

    losses = []
    model.train()
    for step in range(steps):
        xb, yb = get_batch(data, block_size, batch_size, device)
        _, loss = model(xb, yb)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if step % 50 == 0 or step == steps - 1:
            print(f"step {step:4d} | loss {loss:.4f} | lr {scheduler.get_last_lr()[0]:.2e}")

    model.eval()
    context = ag.tensor([[stoi["t"]]], dtype=ag.int64, device=device)
    out = model.generate(context, max_new_tokens=60, temperature=0.8, top_k=5)
    print("sample:", "".join(itos[int(i)] for i in out[0].tolist()))
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    main(steps=args.steps, device=args.device)
