"""gru_layer, GRU's time loop as one op (issue 30): values, first and second derivatives.

The fused op's one backward rule (backpropagation through time on NDArrays; on Tensors
recomputed from the inputs with ``create_graph``) is checked against PyTorch (torch ops
composing torch.nn.GRU's cell, and torch.nn.GRU itself) and against
``gru_layer_reference``, on every device and dtype; the recorded backward must not
differentiate the reference.
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
from lamina.autograd._ops import gru, gru_layer_reference
from lamina.ndarray import ShapeError

DEVICES64 = [dev for dev, dt in device_dtypes() if dt == "float64"]
L, N, H = 4, 2, 3
SHAPES = [(L, N, 3 * H), (N, H), (3 * H, H), (3 * H,)]
TOL = {"float32": 2e-5, "float64": 1e-9}


def _torch_gru(xp: torch.Tensor, h: torch.Tensor, w_hh: torch.Tensor,
               b_hh: torch.Tensor) -> torch.Tensor:
    """torch.nn.GRU's recurrence with torch ops, from the input projections: (L, N, H)."""
    outs = []
    for t in range(xp.shape[0]):
        xr, xz, xn = xp[t].chunk(3, 1)
        hr, hz, hn = (h @ w_hh.T + b_hh).chunk(3, 1)
        r, z = torch.sigmoid(xr + hr), torch.sigmoid(xz + hz)
        h = (1 - z) * torch.tanh(xn + r * hn) + z * h
        outs.append(h)
    return torch.stack(outs)


def _leaves(values: list[np.ndarray], device: str, need: list[bool], dtype: str = "float64"
            ) -> tuple[list[ag.Tensor], list[torch.Tensor]]:
    ours = [ag.tensor(v, dtype=dtype, device=device, requires_grad=r)
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


def _assert_close(got: list[Any], want: list[Any], what: str, tol: float = 1e-9) -> None:
    for k, (g, w) in enumerate(zip(got, want)):
        expected = np.zeros(1) if w is None else to_numpy(w.detach())
        actual = np.zeros(1) if g is None else to_numpy(g)
        np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol,
                                   err_msg=f"gru_layer: {what} of input {k}")


def _compare_op(device: str, need: list[bool], scale: float = 1.0) -> None:
    rng = np.random.default_rng(30)
    values = [rng.standard_normal(s) * scale for s in SHAPES]
    xs, txs = _leaves(values, device, need)
    out = ag.gru_layer(*xs)
    assert type(out.grad_fn).__name__ == "GRULayer"  # the fused node, not a composite
    tout = _torch_gru(*txs)
    _assert_close([out.detach()], [tout], "value")
    cot = rng.standard_normal((L, N, H))
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


@pytest.mark.parametrize("device", DEVICES64)
@pytest.mark.parametrize("need", [[True] * 4, [False, True, False, True],
                                  [True, False, False, False], [False, False, True, False]],
                         ids=["all", "h0_b_hh", "xp_only", "w_hh_only"])
def test_gru_layer_first_and_second_derivatives_match_torch(device: str,
                                                            need: list[bool]) -> None:
    _compare_op(device, need)


@pytest.mark.parametrize("device", DEVICES64)
def test_gru_layer_saturated_gates_second_derivatives_match_torch(device: str) -> None:
    """Gate pre-activations of size ~20: sigmoid and tanh saturate, nothing turns NaN."""
    _compare_op(device, [True] * 4, scale=20.0)


@pytest.mark.parametrize("device, dtype", device_dtypes())
@pytest.mark.parametrize("steps", [1, 5])
def test_gru_layer_matches_reference_and_torch(device: str, dtype: str, steps: int) -> None:
    """Values and first-order gradients of every input against gru_layer_reference and
    torch, in the device's dtypes (float32 on every device)."""
    rng = np.random.default_rng(steps)
    values = [rng.standard_normal((steps, *SHAPES[0][1:]))] + [
        rng.standard_normal(s) for s in SHAPES[1:]]
    cot = rng.standard_normal((steps, N, H))
    xs, txs = _leaves(values, device, [True] * 4, dtype)
    ref_xs = [ag.tensor(v, dtype=dtype, device=device, requires_grad=True) for v in values]
    out, ref, tout = ag.gru_layer(*xs), gru_layer_reference(*ref_xs), _torch_gru(*txs)
    assert out.shape == (steps, N, H) and out.dtype == dtype
    tol = TOL[dtype]
    _assert_close([out.detach()], [ref], "value vs reference", tol)
    _assert_close([out.detach()], [tout], "value vs torch", tol)
    for y in (out, ref):
        y.backward(ag.tensor(cot, dtype=dtype, device=device))
    tout.backward(torch.tensor(cot))
    _assert_close([x.grad for x in xs], [x.grad for x in ref_xs], "gradient vs reference", tol)
    _assert_close([x.grad for x in xs], [x.grad for x in txs], "gradient vs torch", tol)


@pytest.mark.parametrize("device", DEVICES64)
def test_gru_layer_second_derivatives_match_the_reference(device: str) -> None:
    rng = np.random.default_rng(5)
    values = [rng.standard_normal(s) for s in SHAPES]
    xs, _ = _leaves(values, device, [True] * 4)
    cot = rng.standard_normal((L, N, H))
    dirs = [rng.standard_normal(s) for s in SHAPES]
    like = {"dtype": "float64", "device": device}
    first, second = _first_and_second(ag.gru_layer(*xs), xs, cot, dirs, ag, **like)
    rfirst, rsecond = _first_and_second(gru_layer_reference(*xs), xs, cot, dirs, ag, **like)
    _assert_close(first, rfirst, "first derivative vs reference")
    _assert_close(second, rsecond, "second derivative vs reference")


@pytest.mark.parametrize("device", DEVICES64)
def test_gru_layer_in_a_layer_second_derivatives_match_torch_nn_gru(device: str) -> None:
    """A whole single-layer GRU (input projection, then the fused op) against
    torch.nn.GRU, to second order in all of its weights, biases and initial state."""
    rng = np.random.default_rng(7)
    d_in = 2
    tgru = torch.nn.GRU(d_in, H, dtype=torch.float64)
    values = [rng.standard_normal((L, N, d_in)), rng.standard_normal((N, H))] + [
        p.detach().numpy() for p in tgru.parameters()]
    xs, txs = _leaves(values, device, [True] * len(values))
    x, h0, w_ih, w_hh, b_ih, b_hh = xs
    out = ag.gru_layer(x @ w_ih.T + b_ih, h0, w_hh, b_hh)
    tx, th0, *tparams = txs
    tout, _ = torch.func.functional_call(
        tgru, dict(zip([n for n, _ in tgru.named_parameters()], tparams)), (tx, th0[None]))
    cot = rng.standard_normal((L, N, H))
    dirs = [rng.standard_normal(v.shape) for v in values]
    first, second = _first_and_second(out, xs, cot, dirs, ag, dtype="float64", device=device)
    tfirst, tsecond = _first_and_second(tout, txs, cot, dirs, torch)
    _assert_close(first, tfirst, "first derivative")
    _assert_close(second, tsecond, "second derivative")


def _refuse(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("gru_layer's backward differentiated gru_layer_reference")


@pytest.mark.parametrize("device", DEVICES64)
def test_create_graph_backward_does_not_call_the_reference(
        device: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gru, "gru_layer_reference", _refuse)
    _compare_op(device, [True] * 4)


@pytest.mark.parametrize("shapes, bad", [
    ([(L, N, 3 * H + 1), (N, H), (3 * H, H), (3 * H,)], r"\(L, N, 3H\).*\(4, 2, 10\)"),
    ([(0, N, 3 * H), (N, H), (3 * H, H), (3 * H,)], r"L >= 1.*\(0, 2, 9\)"),
    ([(L, N, 3 * H), (N + 1, H), (3 * H, H), (3 * H,)], r"h0 of shape \(2, 3\).*\(3, 3\)"),
    ([(L, N, 3 * H), (N, H), (H, 3 * H), (3 * H,)], r"w_hh of shape \(9, 3\).*\(3, 9\)"),
    ([(L, N, 3 * H), (N, H), (3 * H, H), (H,)], r"b_hh of shape \(9,\).*\(3,\)"),
], ids=["gates", "empty", "h0", "w_hh", "b_hh"])
def test_gru_layer_bad_shapes_name_the_op_and_the_shapes(shapes: list[tuple[int, ...]],
                                                         bad: str) -> None:
    args = [ag.zeros(*s) for s in shapes]
    for fn in (ag.gru_layer, gru_layer_reference):
        with pytest.raises(ShapeError, match="gru_layer: .*" + bad):
            fn(*args)


def _value_and_grads(device: str, dtype: str, values: list[np.ndarray],
                     cot: np.ndarray) -> tuple[list[np.ndarray], bool]:
    """gru_layer's output and first-order gradients of every input, and whether the
    forward ran the backend's fused cell kernels (the node kept their states)."""
    xs = [ag.tensor(v, dtype=dtype, device=device, requires_grad=True) for v in values]
    out = ag.gru_layer(*xs)
    fused = out.grad_fn.state is not None
    out.backward(ag.tensor(cot, dtype=dtype, device=device))
    return [to_numpy(out)] + [to_numpy(x.grad) for x in xs], fused


@pytest.mark.parametrize("scale", [1.0, 30.0], ids=["normal", "saturating"])
@pytest.mark.parametrize("device, dtype", device_dtypes())
def test_gru_layer_fused_cell_kernels_match_the_elementwise_path(
        device: str, dtype: str, scale: float, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the device has gru_cell for the dtype the op runs it, forward and backward,
    and gives today's elementwise path's values and gradients (an odd H, so no vector
    width divides it); without the kernels (a third-party backend) that path runs."""
    rng = np.random.default_rng(12)
    steps, batch, hidden = 5, 3, 7
    values = [rng.standard_normal(s) * k for s, k in [((steps, batch, 3 * hidden), scale),
              ((batch, hidden), 1), ((3 * hidden, hidden), 1), ((3 * hidden,), scale)]]
    cot = rng.standard_normal((steps, batch, hidden))
    got, fused = _value_and_grads(device, dtype, values, cot)
    assert fused == nd.has_recurrent_cells("gru", nd.zeros(1, dtype=dtype, device=device))
    monkeypatch.setattr(nd, "has_recurrent_cells", lambda *args: False)
    want, fused = _value_and_grads(device, dtype, values, cot)
    assert not fused
    tol = {"float32": 2e-5, "float64": 1e-12}[dtype]
    for k, (g, w) in enumerate(zip(got, want)):
        assert np.isfinite(g).all()
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=f"output/gradient {k}")
