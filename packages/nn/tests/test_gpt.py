"""GPT against a PyTorch twin with copied weights, its configuration and errors, the
Shakespeare reader, the training recipe (loss falls) and checkpoints for lamina-generate."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _torch_gpt import Block as TorchBlock
from _torch_gpt import TorchGPT
from _torch_helpers import assert_close
from conftest import shared_data_dir
from lamina import autograd as ag
from lamina.data import Shakespeare
from lamina.models import GPT, GPTConfig
from lamina.models._cli import main as train_main
from lamina.models._generate import main as generate_main
from lamina.models._gpt import Block

SMALL = GPTConfig(vocab_size=11, block_size=16, n_layer=2, n_head=4, n_embd=32)
TOL = {"rtol": 1e-4, "atol": 2e-5}


def _state(module):
    return {k: v.detach().numpy() for k, v in module.state_dict().items()}


def test_block_matches_torch():
    torch.manual_seed(0)
    ref = TorchBlock(SMALL)
    ours = Block(SMALL)
    assert list(ours.state_dict()) == list(ref.state_dict())
    ours.load_state_dict(_state(ref))
    x_np = np.random.default_rng(0).standard_normal((3, 10, 32)).astype(np.float32)
    x, tx = ag.tensor(x_np, requires_grad=True), torch.tensor(x_np, requires_grad=True)
    out, tout = ours(x), ref(tx)
    assert_close(out, tout, **TOL)
    g = np.random.default_rng(1).standard_normal(out.shape).astype(np.float32)
    out.backward(ag.tensor(g))
    tout.backward(torch.from_numpy(g))
    assert_close(x.grad, tx.grad, **TOL)
    grads = dict(ours.named_parameters())
    for name, p in ref.named_parameters():
        assert_close(grads[name].grad, p.grad, rtol=1e-4, atol=1e-4)


def test_gpt_matches_torch_with_tied_head():
    ag.manual_seed(0)
    ours = GPT(SMALL)
    ref = TorchGPT(SMALL)
    ref.load_lamina_state(_state(ours))
    rng = np.random.default_rng(2)
    idx, tgt = rng.integers(0, 11, (2, 16)), rng.integers(0, 11, (2, 16))
    logits, loss = ours(ag.tensor(idx), ag.tensor(tgt))
    tlogits, tloss = ref(torch.from_numpy(idx), torch.from_numpy(tgt))
    assert_close(logits, tlogits, **TOL)
    assert loss.item() == pytest.approx(tloss.item(), rel=1e-5)
    loss.backward()
    tloss.backward()
    assert ours.lm_head.weight is ours.wte.weight
    assert_close(ours.wte.weight.grad, ref.wte.weight.grad, rtol=1e-4, atol=1e-5)
    assert_close(ours.h[0].attn.c_attn.weight.grad, ref.h[0].attn.c_attn.weight.grad,
                 rtol=1e-4, atol=1e-5)
    assert ours.num_parameters() == sum(p.numel() for p in ref.parameters())
    assert ours.num_parameters(non_embedding=True) == ours.num_parameters() - 16 * 32


def test_cached_decoding_matches_torch_twin():
    # The PyTorch twin's cache (used by bench_gpt) and ours: prefill 5, then 1, then 3.
    ag.manual_seed(0)
    ours = GPT(SMALL).eval()
    ref = TorchGPT(SMALL).eval()
    ref.load_lamina_state(_state(ours))
    idx = np.random.default_rng(3).integers(0, 11, (2, 9))
    cache, tcache = ours.new_cache(), ref.new_cache()
    with ag.no_grad(), torch.no_grad():
        full = ref(torch.from_numpy(idx))
        for lo, hi in ((0, 5), (5, 6), (6, 9)):
            logits = ours(ag.tensor(idx[:, lo:hi]), cache=cache)
            tlogits = ref(torch.from_numpy(idx[:, lo:hi]), cache=tcache)
            assert_close(logits, tlogits, **TOL)
            assert_close(logits, full[:, lo:hi], **TOL)
    assert cache.length == tcache.length == 9


def test_gpt2_initialisation_and_weight_decay_groups():
    ag.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=65, n_layer=4, n_embd=128))
    assert model.h[0].attn.c_attn.weight.detach().numpy().std() == pytest.approx(0.02, rel=0.05)
    proj = model.h[0].mlp.c_proj.weight.detach().numpy().std()
    assert proj == pytest.approx(0.02 / np.sqrt(8), rel=0.05)
    assert np.all(model.h[0].attn.c_attn.bias.detach().numpy() == 0)
    decay, no_decay = model.parameter_groups(0.1)
    assert all(p.ndim == 2 for p in decay["params"]) and decay["weight_decay"] == 0.1
    assert all(p.ndim == 1 for p in no_decay["params"]) and no_decay["weight_decay"] == 0.0
    assert len(decay["params"]) == 2 + 4 * 4  # wte (tied head), wpe, 4 linears per block


@pytest.mark.parametrize("call, error, message", [
    (lambda m: m(ag.tensor(np.zeros((1, 17), np.int64))), ValueError,
     "length 17 .*longer than the context block_size=16"),
    (lambda m: m(ag.tensor(np.zeros(5, np.int64))), ValueError, r"shape \(N, T\), got \(5,\)"),
    (lambda m: m(ag.tensor(np.zeros((2, 4), np.int64)), ag.tensor(np.zeros((2, 3), np.int64))),
     ValueError, r"targets must have the shape of idx \(2, 4\), got \(2, 3\)"),
    (lambda m: GPTConfig(n_embd=30, n_head=4), ValueError, "n_head 4 must divide n_embd 30"),
    (lambda m: m.load_state_dict(_state(GPT(GPTConfig(11, 16, 2, 4, 16)))), RuntimeError,
     "size mismatch"),
])
def test_bad_input_names_the_sizes(call, error, message):
    with pytest.raises(error, match=message):
        call(GPT(SMALL))


def _write_text(tmp_path, n_chars=6000):
    words = ["the ", "king ", "and ", "queen ", "shall ", "go\n"]
    rng = np.random.default_rng(0)
    text = "".join(rng.choice(words, n_chars // 4))
    (tmp_path / "input.txt").write_text(text)
    return text


def test_shakespeare_reader_splits_90_10(tmp_path):
    text = _write_text(tmp_path)
    train, val = Shakespeare(tmp_path, "train", 8), Shakespeare(tmp_path, "val", 8)
    cut = int(len(text) * 0.9)
    assert train.tokenizer.decode(train.data) == text[:cut]
    assert val.tokenizer.decode(val.data) == text[cut:]
    x, y = train[3]
    np.testing.assert_array_equal(x[1:], y[:-1])
    xb, yb = train.get_batch(4, np.random.default_rng(0))
    assert xb.shape == yb.shape == (4, 8) and (xb[:, 1:] == yb[:, :-1]).all()
    with pytest.raises(FileNotFoundError, match="input.txt"):
        Shakespeare(tmp_path / "missing")


def test_real_tiny_shakespeare():
    root = shared_data_dir() / "shakespeare"
    if not (root / "input.txt").is_file():
        pytest.skip(f"Tiny Shakespeare not found at {root} (set LAMINA_DATA)")
    train, val = Shakespeare(root, "train"), Shakespeare(root, "val")
    assert train.vocab_size == 65
    assert len(train.data) == 1003854 and len(val.data) == 111540


def test_training_steps_lower_the_loss_and_checkpoint_generates(tmp_path, capsys):
    _write_text(tmp_path, 20000)
    ckpt, log = tmp_path / "gpt.safetensors", tmp_path / "log.csv"
    code = train_main(["shakespeare", "--data", str(tmp_path), "--iters", "40",
                       "--eval-interval", "20", "--eval-iters", "4", "--n-layer", "1",
                       "--n-embd", "32", "--block-size", "16", "--batch-size", "8",
                       "--lr", "3e-3", "--warmup-iters", "5", "--no-progress",
                       "--sample-tokens", "20", "--save", str(ckpt), "--log", str(log)])
    assert code == 0
    out = capsys.readouterr().out
    assert "final val loss" in out and "sample:" in out
    rows = log.read_text().splitlines()
    assert rows[0].startswith("iter,train_loss,val_loss")
    first, last = (float(r.split(",")[2]) for r in (rows[1], rows[-1]))
    assert last < first < np.log(8)  # 8 distinct characters: chance is log 8
    assert generate_main(["--checkpoint", str(ckpt), "--prompt", "the ",
                          "--max-new-tokens", "12", "--temperature", "0"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("the ") and len(text.rstrip("\n")) >= 4 + 12 - 2
    assert generate_main(["--checkpoint", str(ckpt), "--prompt", "the ", "--compile",
                          "--max-new-tokens", "12", "--temperature", "0"]) == 0
    assert capsys.readouterr().out == text  # replayed steps, the same characters


def test_recipe_rejects_epochs(tmp_path, capsys):
    _write_text(tmp_path)
    assert train_main(["shakespeare", "--data", str(tmp_path), "--epochs", "1"]) == 1
    assert "use --iters" in capsys.readouterr().err


def test_docstring_examples():
    import doctest

    import lamina.models._gpt
    import lamina.models._sampling
    for module in (lamina.models._gpt, lamina.models._sampling):
        assert doctest.testmod(module).failed == 0
