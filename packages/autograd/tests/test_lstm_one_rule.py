"""lstm_layer has one backward rule (issue 29): first and second derivatives vs PyTorch.

The fused LSTM layer's backward (backpropagation through time) runs on NDArrays for a
first-order backward and, with ``create_graph``, on Tensors recomputed from the inputs.
Both are checked against PyTorch in float64 on every device (``torch.nn.LSTM`` for a
whole layer, torch ops composing the same cell for the op alone), and the recorded
backward must not differentiate ``lstm_layer_reference``.
"""

from __future__ import annotations

from typing import Any

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from conftest import device_dtypes
from harness import to_numpy
from lamina.autograd._ops import rnn

DEVICES = [dev for dev, dt in device_dtypes() if dt == "float64"]
L, N, H = 4, 2, 3
TOL = 1e-9


def _torch_cell_layer(xp: torch.Tensor, h: torch.Tensor, c: torch.Tensor,
                      w_hh: torch.Tensor) -> torch.Tensor:
    """The LSTM recurrence with torch ops: [h_t | c_t] for every step, (L, N, 2H)."""
    outs = []
    for t in range(xp.shape[0]):
        i, f, g, o = (xp[t] + h @ w_hh.T).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(torch.cat([h, c], 1))
    return torch.stack(outs)


def _leaves(values: list[np.ndarray], device: str,
            need: list[bool]) -> tuple[list[ag.Tensor], list[torch.Tensor]]:
    ours = [ag.tensor(v, dtype="float64", device=device, requires_grad=r)
            for v, r in zip(values, need)]
    theirs = [torch.tensor(v, requires_grad=r) for v, r in zip(values, need)]
    return ours, theirs


def _first_and_second(out: Any, xs: list[Any], cot: np.ndarray, dirs: list[np.ndarray],
                      lib: Any, **like: Any) -> tuple[list[Any], list[Any]]:
    """Gradients of <out, cot> w.r.t. xs (recorded), then of <those, dirs> w.r.t. xs;
    ``lib`` is lamina.autograd or torch."""
    grad = ag.grad if lib is ag else torch.autograd.grad
    first = grad((out * lib.tensor(cot, **like)).sum(), xs, create_graph=True)
    total = sum((g * lib.tensor(d, **like)).sum() for g, d in zip(first, dirs))
    return list(first), list(grad(total, xs, allow_unused=True))


def _assert_close(got: list[Any], want: list[Any], what: str) -> None:
    for k, (g, w) in enumerate(zip(got, want)):
        expected = np.zeros(1) if w is None else w.detach().numpy()
        actual = np.zeros(1) if g is None else to_numpy(g)
        np.testing.assert_allclose(actual, expected, rtol=TOL, atol=TOL,
                                   err_msg=f"lstm_layer: {what} of input {k}")


def _compare_op(device: str, need: list[bool], scale: float = 1.0) -> None:
    rng = np.random.default_rng(36)
    shapes = [(L, N, 4 * H), (N, H), (N, H), (4 * H, H)]
    values = [rng.standard_normal(s) * scale for s in shapes]
    xs, txs = _leaves(values, device, need)
    out = ag.lstm_layer(*xs)
    assert type(out.grad_fn).__name__ == "LSTMLayer"  # the fused node, not a composite
    tout = _torch_cell_layer(*txs)
    cot = rng.standard_normal((L, N, 2 * H))
    wrt = [x for x, r in zip(xs, need) if r]
    twrt = [x for x, r in zip(txs, need) if r]
    dirs = [rng.standard_normal(x.shape) for x in wrt]
    first, second = _first_and_second(out, wrt, cot, dirs, ag, dtype="float64", device=device)
    tfirst, tsecond = _first_and_second(tout, twrt, cot, dirs, torch)
    _assert_close(first, tfirst, "first derivative")
    _assert_close(second, tsecond, "second derivative")
    # The first-order (NDArray) path of the same rule gives the same first derivative.
    plain = ag.grad((out * ag.tensor(cot, dtype="float64", device=device)).sum(), wrt)
    _assert_close(list(plain), tfirst, "first-order derivative")


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("need", [[True] * 4, [False, False, True, True],
                                  [True, False, False, False]],
                         ids=["all", "c0_w_hh", "xp_only"])
def test_lstm_layer_first_and_second_derivatives_match_torch(device: str,
                                                             need: list[bool]) -> None:
    _compare_op(device, need)


@pytest.mark.parametrize("device", DEVICES)
def test_lstm_layer_saturated_gates_second_derivatives_match_torch(device: str) -> None:
    """Gate pre-activations of size ~20: sigmoid and tanh saturate, nothing turns NaN."""
    _compare_op(device, [True] * 4, scale=20.0)


@pytest.mark.parametrize("device", DEVICES)
def test_lstm_module_second_derivatives_match_torch_nn_lstm(device: str) -> None:
    """A whole single-layer LSTM (input projection, then the fused op) against
    torch.nn.LSTM, to second order in all of its weights and initial states."""
    rng = np.random.default_rng(7)
    d_in = 2
    tlstm = torch.nn.LSTM(d_in, H, dtype=torch.float64)
    values = [rng.standard_normal((L, N, d_in)), rng.standard_normal((N, H)),
              rng.standard_normal((N, H))] + [p.detach().numpy() for p in tlstm.parameters()]
    xs, txs = _leaves(values, device, [True] * len(values))
    x, h0, c0, w_ih, w_hh, b_ih, b_hh = xs
    out = ag.lstm_layer(x @ w_ih.T + b_ih + b_hh, h0, c0, w_hh)[:, :, :H]
    tx, th0, tc0, *tparams = txs
    tout, _ = torch.func.functional_call(
        tlstm, dict(zip([n for n, _ in tlstm.named_parameters()], tparams)),
        (tx, (th0[None], tc0[None])))
    cot = rng.standard_normal((L, N, H))
    dirs = [rng.standard_normal(v.shape) for v in values]
    first, second = _first_and_second(out, xs, cot, dirs, ag, dtype="float64", device=device)
    tfirst, tsecond = _first_and_second(tout, txs, cot, dirs, torch)
    _assert_close(first, tfirst, "first derivative")
    _assert_close(second, tsecond, "second derivative")


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("lstm_layer's backward differentiated lstm_layer_reference")


@pytest.mark.parametrize("device", DEVICES)
def test_create_graph_backward_does_not_call_the_reference(
        device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With create_graph the backward runs the op's own rule on Tensors; the reference
    composite (still public, as an oracle) can raise and second derivatives still match."""
    monkeypatch.setattr(rnn, "lstm_layer_reference", _refuse)
    monkeypatch.setattr(ag, "lstm_layer_reference", _refuse, raising=False)
    _compare_op(device, [True] * 4)


def _value_and_grads(device: str, dtype: str, values: list[np.ndarray],
                     cot: np.ndarray) -> tuple[list[np.ndarray], bool]:
    """lstm_layer's output and first-order gradients of every input, and whether the
    forward ran the backend's fused cell kernels (the node kept their states)."""
    xs = [ag.tensor(v, dtype=dtype, device=device, requires_grad=True) for v in values]
    out = ag.lstm_layer(*xs)
    fused = out.grad_fn.state is not None
    out.backward(ag.tensor(cot, dtype=dtype, device=device))
    return [to_numpy(out)] + [to_numpy(x.grad) for x in xs], fused


@pytest.mark.parametrize("scale", [1.0, 30.0], ids=["normal", "saturating"])
@pytest.mark.parametrize("device, dtype", device_dtypes())
def test_lstm_layer_fused_cell_kernels_match_the_elementwise_path(
        device: str, dtype: str, scale: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the device has lstm_cell for the dtype the op runs it, forward and backward,
    and gives today's elementwise path's values and gradients (an odd H, so no vector
    width divides it); without the kernels (a third-party backend) that path runs."""
    rng = np.random.default_rng(11)
    steps, batch, hidden = 5, 3, 7
    values = [rng.standard_normal(s) * k for s, k in [((steps, batch, 4 * hidden), scale),
              ((batch, hidden), 1), ((batch, hidden), 1), ((4 * hidden, hidden), 1)]]
    cot = rng.standard_normal((steps, batch, 2 * hidden))
    got, fused = _value_and_grads(device, dtype, values, cot)
    assert fused == nd.has_recurrent_cells("lstm", nd.zeros(1, dtype=dtype, device=device))
    monkeypatch.setattr(nd, "has_recurrent_cells", lambda *args: False)
    want, fused = _value_and_grads(device, dtype, values, cot)
    assert not fused
    tol = {"float32": 2e-5, "float64": 1e-12}[dtype]
    for k, (g, w) in enumerate(zip(got, want)):
        assert np.isfinite(g).all()
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"output/gradient {k}")
