"""A word-level language model with a GRU or a Transformer encoder.

Laid out like the classic PyTorch word-language-model script: a ``Dictionary``
and ``Corpus``, the text batchified into (seq_len, batch) columns, truncated
backpropagation through time with a detached hidden state for the GRU, a
square subsequent mask and sinusoidal positions for the Transformer, and
gradient clipping. Trains on a few built-in sentences; nothing is downloaded.

Run: ``python examples/pytorch-style/word_lm.py --model gru --steps 200``
"""

from __future__ import annotations

import argparse
import math

import lamina.autograd as ag
import lamina.nn.functional as F
from lamina import nn, optim

TEXT = """
the cat sat on the mat and the dog sat on the rug .
the cat saw the dog and the dog saw the cat .
a bird sang in the tree and the cat looked up at the bird .
the dog ran to the park and the cat stayed on the mat .
in the morning the sun came up and the bird sang again .
the children fed the dog and the cat and the bird .
"""


class Dictionary:
    """Maps each word to an id and back."""

    def __init__(self) -> None:
        self.word2idx: dict[str, int] = {}
        self.idx2word: list[str] = []

    def add_word(self, word: str) -> int:
        if word not in self.word2idx:
            self.word2idx[word] = len(self.idx2word)
            self.idx2word.append(word)
        return self.word2idx[word]

    def __len__(self) -> int:
        return len(self.idx2word)


class Corpus:
    """Tokenizes the text (one ``<eos>`` per line) into a flat int64 tensor."""

    def __init__(self, text: str) -> None:
        self.dictionary = Dictionary()
        ids = []
        for line in text.strip().splitlines():
            for word in line.split() + ["<eos>"]:
                ids.append(self.dictionary.add_word(word))
        self.ids = ag.tensor(ids, dtype=ag.int64)


def batchify(data: ag.Tensor, bsz: int, device: str) -> ag.Tensor:
    """Cut the stream into ``bsz`` columns: (N,) -> (N // bsz, bsz)."""
    nbatch = data.shape[0] // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous().to(device)


def get_batch(source: ag.Tensor, i: int, bptt: int) -> tuple[ag.Tensor, ag.Tensor]:
    """Inputs rows [i, i + len) and the targets one row later, flattened."""
    seq_len = min(bptt, len(source) - 1 - i)
    x = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].reshape(-1)
    return x, target


class GRUModel(nn.Module):
    """Embedding -> multi-layer GRU -> linear decoder (time-first layout)."""

    def __init__(self, ntoken: int, ninp: int, nhid: int, nlayers: int,
                 dropout: float = 0.2) -> None:
        super().__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.GRU(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.nhid, self.nlayers = nhid, nlayers

    def forward(self, x: ag.Tensor, hidden: ag.Tensor) -> tuple[ag.Tensor, ag.Tensor]:
        emb = self.drop(self.encoder(x))
        output, hidden = self.rnn(emb, hidden)
        return self.decoder(self.drop(output)), hidden

    def init_hidden(self, bsz: int) -> ag.Tensor:
        weight = next(self.parameters())
        return weight.new_zeros((self.nlayers, bsz, self.nhid))


class PositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal position signal of "Attention Is All You Need"."""

    def __init__(self, d_model: int, dropout: float = 0.1, max_len: int = 512) -> None:
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        position = ag.arange(max_len).unsqueeze(1)
        div_term = ag.exp(ag.arange(0, d_model, 2) * (-math.log(10000.0) / d_model))
        angles = position * div_term
        # Interleave sin and cos: (max_len, d/2, 2) -> (max_len, 1, d).
        pe = ag.stack([ag.sin(angles), ag.cos(angles)], dim=-1).reshape(max_len, 1, d_model)
        self.register_buffer("pe", pe)

    def forward(self, x: ag.Tensor) -> ag.Tensor:
        return self.dropout(x + self.pe[:x.shape[0]])


class TransformerModel(nn.Module):
    """Embedding + positions -> causal Transformer encoder stack -> linear decoder."""

    def __init__(self, ntoken: int, ninp: int, nhead: int, nhid: int, nlayers: int,
                 dropout: float = 0.2) -> None:
        super().__init__()
        self.ninp = ninp
        self.encoder = nn.Embedding(ntoken, ninp)
        self.pos_encoder = PositionalEncoding(ninp, dropout)
        layer = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers)
        self.decoder = nn.Linear(ninp, ntoken)

    def forward(self, src: ag.Tensor) -> ag.Tensor:
        seq_len = src.shape[0]
        mask = ag.triu(ag.full((seq_len, seq_len), float("-inf"), device=src.device),
                       diagonal=1)
        x = self.pos_encoder(self.encoder(src) * math.sqrt(self.ninp))
        return self.decoder(self.transformer_encoder(x, mask, is_causal=True))


def build_model(name: str, ntoken: int) -> nn.Module:
    if name == "gru":
        return GRUModel(ntoken, ninp=32, nhid=64, nlayers=2)
    if name == "transformer":
        return TransformerModel(ntoken, ninp=32, nhead=4, nhid=64, nlayers=2)
    raise ValueError(f"word_lm: unknown model {name!r}; choose 'gru' or 'transformer'")


def main(steps: int = 200, device: str = "cpu", model: str = "gru", batch_size: int = 4,
         bptt: int = 12, lr: float = 3e-3, clip: float = 0.5, seed: int = 0) -> list[float]:
    """Train ``model`` ("gru" or "transformer") for ``steps`` steps; return the losses."""
    ag.manual_seed(seed)
    corpus = Corpus(TEXT)
    train_data = batchify(corpus.ids, batch_size, device)
    ntokens = len(corpus.dictionary)
    net = build_model(model, ntokens).to(device)
    optimizer = optim.Adam(net.parameters(), lr=lr)
    scheduler = optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.995)

    losses: list[float] = []
    net.train()
    hidden = net.init_hidden(batch_size) if model == "gru" else None
    i = 0
    while len(losses) < steps:
        if i >= len(train_data) - 2:
            i = 0  # start a new pass over the text
            hidden = net.init_hidden(batch_size) if model == "gru" else None
        x, targets = get_batch(train_data, i, bptt)
        optimizer.zero_grad()
        if model == "gru":
            hidden = hidden.detach()  # truncated BPTT: keep the state, drop its history
            output, hidden = net(x, hidden)
        else:
            output = net(x)
        loss = F.cross_entropy(output.view(-1, ntokens), targets)
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), clip)
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if len(losses) % 25 == 1:
            print(f"{model} step {len(losses) - 1:4d} | loss {loss:.3f} | "
                  f"ppl {math.exp(loss.item()):7.2f}")
        i += bptt
    return losses


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["gru", "transformer"], default="gru")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    main(steps=args.steps, device=args.device, model=args.model)
