"""ag.compile on whole models: replayed training steps (forward and backward, dropout
included) give eager's losses and gradients exactly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import lamina.autograd as ag
import numpy as np
from lamina import nn, optim
from lamina.models import GPT, GPTConfig


def _twins(make: Callable[[], nn.Module], device: str) -> tuple[nn.Module, nn.Module]:
    ag.manual_seed(0)
    a = make().to(device)
    ag.manual_seed(0)
    return a, make().to(device)


def _train(model: nn.Module, forward: Callable[..., Any], batches: list[tuple[Any, Any]],
           loss_fn: Callable[[Any, Any], Any],
           optimizer: Callable[..., optim.Optimizer] = optim.AdamW,
           ) -> tuple[list[float], list[np.ndarray]]:
    opt = optimizer(model.parameters(), lr=1e-2)
    losses = []
    for step, (x, y) in enumerate(batches):
        ag.manual_seed(100 + step)  # the same dropout masks in both runs
        opt.zero_grad()
        loss = loss_fn(forward(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, [p.detach().numpy() for p in model.parameters()]


def _check(make: Callable[[], nn.Module], batches: list[tuple[Any, Any]],
           loss_fn: Callable[[Any, Any], Any], device: str) -> Any:
    # cuda's scatter-adds (embedding and gather backward) may add in the order its threads
    # arrive, so runs there agree to rounding, not bit for bit. Adam would turn a gradient
    # that is pure rounding noise (the attention key bias's is zero in exact arithmetic)
    # into a full step, so cuda trains with SGD, which keeps rounding at rounding's size.
    optimizer = optim.SGD if device == "cuda" else optim.AdamW
    eager_model, compiled_model = _twins(make, device)
    compiled = ag.compile(compiled_model)
    want = _train(eager_model, eager_model, batches, loss_fn, optimizer)
    got = _train(compiled_model, compiled, batches, loss_fn, optimizer)
    if device == "cuda":
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
        for g, w in zip(got[1], want[1]):
            np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-6)
        return compiled
    assert got[0] == want[0]
    for g, w in zip(got[1], want[1]):
        np.testing.assert_array_equal(g, w)
    return compiled


def test_mlp_with_dropout_trains_as_eager(device: str) -> None:
    def make() -> nn.Module:
        return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Dropout(0.3), nn.Linear(16, 4))

    rng = np.random.default_rng(0)
    batches = [(ag.tensor(rng.standard_normal((8, 12)), dtype="float32", device=device),
                ag.tensor(rng.integers(0, 4, 8), device=device)) for _ in range(4)]
    compiled = _check(make, batches, nn.functional.cross_entropy, device)
    assert compiled.stats["replays"] == 3 and not compiled.graph_breaks


def test_gpt_trains_as_eager(device: str) -> None:
    config = GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=16,
                       dropout=0.1)
    rng = np.random.default_rng(1)
    batches = [(ag.tensor(rng.integers(0, 11, (3, 8)), device=device),
                ag.tensor(rng.integers(0, 11, (3, 8)), device=device)) for _ in range(4)]

    def loss_fn(logits: Any, y: Any) -> Any:
        return nn.functional.cross_entropy(logits.reshape(-1, 11), y.reshape(-1))

    compiled = _check(lambda: GPT(config), batches, loss_fn, device)
    assert compiled.stats["replays"] >= 2 and not compiled.graph_breaks


def test_lstm_language_model_trains_as_eager(device: str) -> None:
    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(13, 8)
            self.lstm = nn.LSTM(8, 8, num_layers=2)
            self.head = nn.Linear(8, 13)

        def forward(self, x: Any) -> Any:
            out, _ = self.lstm(self.embed(x))
            return self.head(out)

    rng = np.random.default_rng(2)
    batches = [(ag.tensor(rng.integers(0, 13, (5, 3)), device=device),
                ag.tensor(rng.integers(0, 13, (5, 3)), device=device)) for _ in range(3)]

    def loss_fn(logits: Any, y: Any) -> Any:
        return nn.functional.cross_entropy(logits.reshape(-1, 13), y.reshape(-1))

    compiled = _check(Model, batches, loss_fn, device)
    assert compiled.stats["replays"] >= 1


def test_batch_norm_replays_in_training_and_in_eval(device: str) -> None:
    """Replayed training steps update the running statistics in place, as eager ones do;
    eval replays read them, and see them replaced."""
    def make() -> nn.Module:
        return nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.ReLU(), nn.Linear(5, 2))

    rng = np.random.default_rng(3)
    batches = [(ag.tensor(rng.standard_normal((7, 6)), dtype="float32", device=device),
                ag.tensor(rng.integers(0, 2, 7), device=device)) for _ in range(3)]
    eager_model, compiled_model = _twins(make, device)
    compiled = ag.compile(compiled_model)
    want = _train(eager_model, eager_model, batches, nn.functional.cross_entropy)
    got = _train(compiled_model, compiled, batches, nn.functional.cross_entropy)
    assert got[0] == want[0]
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        np.testing.assert_array_equal(getattr(compiled_model[1], name).numpy(),
                                      getattr(eager_model[1], name).numpy(), err_msg=name)
    assert int(compiled_model[1].num_batches_tracked.item()) == 3
    assert compiled.stats["replays"] == 2 and not compiled.graph_breaks
    compiled_model.eval()
    eager_model.eval()
    with ag.no_grad():
        x = batches[0][0]
        for _ in range(2):
            np.testing.assert_array_equal(compiled(x).numpy(), eager_model(x).numpy())
        assert compiled.stats["replays"] == 3
        for model in (compiled_model, eager_model):  # new statistics, new storage
            model[1].running_mean = ag.tensor(np.arange(5.0), dtype="float32", device=device)
        np.testing.assert_array_equal(compiled(x).numpy(), eager_model(x).numpy())


def test_batch_norm_cumulative_average_reads_the_count_and_runs_eagerly(device: str) -> None:
    """momentum=None divides by the batch count, a host value: that step runs eagerly,
    with eager's statistics."""
    eager_model, compiled_model = _twins(lambda: nn.BatchNorm1d(3, momentum=None), device)
    compiled = ag.compile(compiled_model)
    rng = np.random.default_rng(4)
    for _ in range(3):
        x = ag.tensor(rng.standard_normal((4, 3)), dtype="float32", device=device)
        np.testing.assert_array_equal(compiled(x).detach().numpy(),
                                      eager_model(x).detach().numpy())
    np.testing.assert_array_equal(compiled_model.running_var.numpy(),
                                  eager_model.running_var.numpy())
    assert compiled.stats["replays"] == 0 and compiled.graph_breaks


def test_a_parameter_assigned_anew_is_read_by_the_next_call(device: str) -> None:
    """Replays read the tensors captured, so assigning a module's parameter (or buffer,
    or submodule) makes the next call capture again rather than use the old one."""
    model = nn.Linear(3, 2).to(device)
    compiled = ag.compile(model)
    x = ag.tensor(np.ones((4, 3)), dtype="float32", device=device)
    with ag.no_grad():
        compiled(x), compiled(x)
        model.weight = nn.Parameter(ag.tensor(np.full((2, 3), 2.0), dtype="float32",
                                              device=device))
        np.testing.assert_array_equal(compiled(x).numpy(), model(x).numpy())
        model.bias.data = ag.tensor([5.0, 6.0], dtype="float32", device=device)
        np.testing.assert_array_equal(compiled(x).numpy(), model(x).numpy())
    assert compiled.stats["captures"] == 3 and compiled.stats["replays"] == 1
