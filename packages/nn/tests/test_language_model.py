"""LanguageModel vs a PyTorch twin, the gathered token loss, training steps, the ptb recipe."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from _torch_helpers import assert_close
from lamina import autograd as ag
from lamina import nn, optim
from lamina.data import BPTTBatches, TextCorpus, batchify
from lamina.models import LanguageModel, detach_hidden, evaluate_lm, train_lm_epoch
from lamina.models._language_model import token_nll
from lamina.models.recipes.ptb import zaremba_lr_factor

_rng = np.random.default_rng(3)


class _TorchLM(torch.nn.Module):
    def __init__(self, vocab, hidden, layers, cell):
        super().__init__()
        self.encoder = torch.nn.Embedding(vocab, hidden)
        self.rnn = (torch.nn.LSTM(hidden, hidden, layers) if cell == "lstm"
                    else torch.nn.RNN(hidden, hidden, layers, nonlinearity=cell[4:]))
        self.decoder = torch.nn.Linear(hidden, vocab)

    def forward(self, x, hidden=None):
        out, hidden = self.rnn(self.encoder(x), hidden)
        return self.decoder(out), hidden


@pytest.mark.parametrize("cell", ["lstm", "rnn-tanh"])
def test_matches_pytorch_over_two_truncated_bptt_steps(cell):
    vocab, hidden = 30, 8
    model = LanguageModel(vocab, hidden, hidden, num_layers=2, cell=cell, init_range=0.1)
    twin = _TorchLM(vocab, hidden, 2, cell)
    twin.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                          for k, v in model.state_dict().items()})
    opt, topt = optim.SGD(model.parameters(), lr=0.5), torch.optim.SGD(twin.parameters(), lr=0.5)
    data = batchify(_rng.integers(0, vocab, 61), 3)
    h, th = None, None
    for x, y in BPTTBatches(data, 6):
        h = detach_hidden(h)
        th = None if th is None else (th[0].detach(), th[1].detach()) if cell == "lstm" \
            else th.detach()
        opt.zero_grad()
        topt.zero_grad()
        logits, h = model(x, h)
        tlogits, th = twin(torch.from_numpy(x.numpy()), th)
        assert_close(logits, tlogits, 1e-4, 1e-5)
        loss = token_nll(logits.reshape(-1, vocab), y.reshape(-1))
        tloss = torch.nn.functional.cross_entropy(tlogits.reshape(-1, vocab),
                                                  torch.from_numpy(y.numpy()).reshape(-1))
        assert abs(loss.item() - tloss.item()) < 1e-5
        (loss * 6).backward()
        (tloss * 6).backward()
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
        torch.nn.utils.clip_grad_norm_(twin.parameters(), 0.5)
        opt.step()
        topt.step()
    for k, v in model.state_dict().items():
        assert_close(v, twin.state_dict()[k], 1e-4, 1e-5)


def test_token_nll_equals_cross_entropy_and_checks_ids():
    logits = ag.tensor(_rng.standard_normal((7, 5)).astype(np.float32), requires_grad=True)
    target = ag.tensor(_rng.integers(0, 5, 7))
    a = token_nll(logits, target)
    b = nn.functional.cross_entropy(logits, target)
    assert abs(a.item() - b.item()) < 1e-6
    (ga,) = ag.grad(a, logits)
    (gb,) = ag.grad(b, logits)
    assert_close(ga, gb)
    with pytest.raises(IndexError, match=r"target id 5 .* vocabulary of size 5"):
        token_nll(logits, ag.tensor(np.array([0, 1, 2, 3, 4, 5, 0])))


def test_tied_weights_and_bad_arguments():
    model = LanguageModel(20, 6, 6, tie_weights=True)
    assert model.decoder.weight is model.encoder.weight
    assert model.num_parameters() == 20 * 6 + 20 + 2 * (4 * 6 * 6 * 2 + 4 * 6 * 2)
    with pytest.raises(ValueError, match="tie_weights"):
        LanguageModel(20, 6, 8, tie_weights=True)
    with pytest.raises(ValueError, match="cell"):
        LanguageModel(20, cell="gru")
    with pytest.raises(IndexError, match=r"token id 20 .* size 20"):
        model(ag.tensor(np.array([[1], [20]])))


def test_init_range_and_init_hidden():
    model = LanguageModel(40, 8, 8, cell="rnn-relu", init_range=0.1)
    assert max(float(np.abs(p.detach().numpy()).max()) for p in model.parameters()) <= 0.1
    h = model.init_hidden(3)
    assert h.shape == (2, 3, 8)
    h, c = LanguageModel(40, 8, 8).init_hidden(3)
    assert h.shape == c.shape == (2, 3, 8)


def test_a_few_training_epochs_lower_the_loss():
    text = "the cat sat on the mat\nthe dog sat on the log\n" * 20
    corpus = TextCorpus(text, text, text)
    ag.manual_seed(0)
    model = LanguageModel(len(corpus.vocab), 16, 16, num_layers=2)
    opt = optim.SGD(model.parameters(), lr=1.0)
    train = BPTTBatches(batchify(corpus.train, 4), 10)
    before = evaluate_lm(model, train, 4)["loss"]
    for _ in range(6):
        stats = train_lm_epoch(model, train, opt, 4, clip=5.0)
    after = evaluate_lm(model, train, 4)["loss"]
    assert after < 0.5 * before and stats["ppl"] == pytest.approx(np.exp(stats["loss"]))


def test_zaremba_schedule():
    f = zaremba_lr_factor(0.5, 4)
    assert [f(e) for e in range(7)] == [1, 1, 1, 1, 0.5, 0.25, 0.125]


def test_lamina_train_ptb_cli(tmp_path, capsys):
    from lamina.models._cli import main

    for split, n in (("train", 60), ("valid", 10), ("test", 10)):
        words = " ".join(f"w{i % 7}" for i in range(n))
        (tmp_path / f"ptb.{split}.txt").write_text((words + "\n") * 3)
    log = tmp_path / "log.csv"
    code = main(["ptb", "--data", str(tmp_path), "--epochs", "2", "--hidden", "8",
                 "--bptt", "5", "--batch-size", "4", "--no-progress", "--log", str(log)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "valid ppl" in out and "final test perplexity" in out
    assert log.read_text().splitlines()[0].startswith("epoch,train_loss,train_ppl,valid_loss")


@pytest.mark.parametrize("name", ["lamina.nn._rnn", "lamina.data._ptb",
                                  "lamina.models._language_model", "lamina.models.recipes.ptb"])
def test_docstring_examples_run(name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
