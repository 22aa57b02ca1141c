"""The attention kernels (optional, v2.2) against the float64 formulas.

``attention`` and ``attention_backward`` on small and long rows, L != S,
E != Ev, no mask, a shared and a per-batch mask, causal rows (and rows that
see more keys than one block holds), queries whose every key is masked (out
and gradients 0), NaN scores, empty layouts, trailing buffer elements that
must stay untouched, and the documented errors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from lamina.ndarray._interface import OPTIONAL
from lamina.ndarray.conformance._harness import assert_close, get, put

KERNELS = ("attention", "attention_backward")
EXTRA = 3  # trailing elements on every buffer

# (batch, L, S, E, Ev)
SHAPES = [(1, 1, 1, 1, 1), (2, 3, 5, 4, 6), (3, 7, 7, 8, 8), (4, 64, 64, 32, 32),
          (2, 70, 33, 16, 5), (1, 5, 300, 3, 4), (2, 130, 130, 8, 8)]


def _need(backend: Any) -> None:
    for kernel in KERNELS:
        assert kernel in OPTIONAL
        if not hasattr(backend, kernel):
            pytest.skip(f"backend has no {kernel} (optional)")


def _inputs(dtype: str, batch: int, L: int, S: int, E: int, Ev: int,  # noqa: N803
            mask_batch: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = {"q": rng.standard_normal((batch, L, E)), "k": rng.standard_normal((batch, S, E)),
         "v": rng.standard_normal((batch, S, Ev)), "g": rng.standard_normal((batch, L, Ev)),
         "mask": rng.standard_normal((max(mask_batch, 1), L, S))}
    if mask_batch and L > 1:
        x["mask"][:, 1, :] = -np.inf  # query 1 sees no key
        x["mask"][:, 0, ::3] = -np.inf
    return {k: v.astype(dtype) for k, v in x.items()}


def _want(x: dict[str, np.ndarray], mask_batch: int, scale: float, causal: bool
          ) -> dict[str, np.ndarray]:
    """out, lse, dq, dk, dv in float64, p = 0 where a query sees no key."""
    q, k, v, g = (x[n].astype(np.float64) for n in ("q", "k", "v", "g"))
    s = q @ k.transpose(0, 2, 1) * scale
    if mask_batch:
        s = s + x["mask"].astype(np.float64)
    if causal:
        s[:, np.arange(s.shape[2])[None, :] > np.arange(s.shape[1])[:, None]] = -np.inf
    top = s.max(axis=2, keepdims=True, initial=-np.inf)
    shift = np.where(np.isfinite(top), top, 0)
    with np.errstate(divide="ignore"):
        lse = np.log(np.exp(s - shift).sum(axis=2, keepdims=True)) + shift
    p = np.exp(s - np.where(np.isinf(lse), 0, lse))
    dp = g @ v.transpose(0, 2, 1)
    ds = p * (dp - (p * dp).sum(axis=2, keepdims=True))
    return {"out": p @ v, "lse": lse[..., 0], "dq": ds @ k * scale,
            "dk": ds.transpose(0, 2, 1) @ q * scale, "dv": p.transpose(0, 2, 1) @ g}


def _run(backend: Any, x: dict[str, np.ndarray], mask_batch: int, scale: float,
         causal: bool) -> dict[str, np.ndarray]:
    """Both kernels on ``backend``; the backward reads the forward's lse."""
    batch, L, E = x["q"].shape  # noqa: N806
    S, Ev = x["v"].shape[1:]  # noqa: N806
    dtype = x["q"].dtype.name
    b = {k: put(backend, v, EXTRA) for k, v in x.items()}
    sizes = {"out": batch * L * Ev, "lse": batch * L, "dq": batch * L * E, "dk": batch * S * E,
             "dv": batch * S * Ev}
    outs = {k: put(backend, np.full(n + EXTRA, 7, dtype)) for k, n in sizes.items()}
    layout = (batch, L, S, E, Ev, mask_batch, scale, causal)
    backend.attention(b["q"], b["k"], b["v"], b["mask"], outs["out"], outs["lse"], *layout)
    backend.attention_backward(b["g"], b["q"], b["k"], b["v"], b["mask"], outs["lse"],
                               outs["dq"], outs["dk"], outs["dv"], *layout)
    got = {}
    for name, buf in outs.items():
        values = get(backend, buf)
        assert (values[sizes[name]:] == 7).all(), f"attention wrote past {name}"
        got[name] = values[:sizes[name]]
    return got


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("mask", ["none", "shared", "per-batch"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_attention_kernels(lamina_backend, lamina_float, shape, mask, causal):
    _need(lamina_backend)
    batch = shape[0]
    mask_batch = {"none": 0, "shared": 1, "per-batch": batch}[mask]
    x = _inputs(lamina_float, *shape, mask_batch, seed=sum(shape))
    scale = 1 / np.sqrt(shape[3])
    got = _run(lamina_backend, x, mask_batch, scale, causal)
    for name, want in _want(x, mask_batch, scale, causal).items():
        # products and row sums in another order: "matmul"'s tolerance
        assert_close(got[name], want.reshape(-1).astype(lamina_float), "matmul",
                     f"attention {name} {shape} {mask} causal={causal}")


def test_attention_query_without_keys_gives_zeros(lamina_backend, lamina_float):
    _need(lamina_backend)
    x = _inputs(lamina_float, 2, 4, 6, 3, 5, 1, seed=3)
    got = _run(lamina_backend, x, 1, 0.5, False)
    assert (got["out"].reshape(2, 4, 5)[:, 1] == 0).all()
    assert (got["lse"].reshape(2, 4)[:, 1] == -np.inf).all()
    assert (got["dq"].reshape(2, 4, 3)[:, 1] == 0).all()
    assert np.isfinite(got["dk"]).all() and np.isfinite(got["dv"]).all()


def test_attention_nan_score_gives_a_nan_row(lamina_backend, lamina_float):
    _need(lamina_backend)
    x = _inputs(lamina_float, 1, 3, 4, 2, 2, 0, seed=4)
    x["q"][0, 2, 0] = np.nan
    got = _run(lamina_backend, x, 0, 1.0, False)
    out = got["out"].reshape(3, 2)
    assert np.isnan(out[2]).all() and np.isfinite(out[:2]).all()
    assert np.isnan(got["lse"][2])


@pytest.mark.parametrize("shape", [(0, 3, 4, 2, 2), (2, 0, 4, 2, 2), (2, 3, 0, 2, 2),
                                   (2, 3, 4, 0, 2), (2, 3, 4, 2, 0)], ids=str)
def test_attention_empty_layouts(lamina_backend, lamina_float, shape):
    _need(lamina_backend)
    x = _inputs(lamina_float, *shape, 0, seed=5)
    got = _run(lamina_backend, x, 0, 1.0, True)
    for name, want in _want(x, 0, 1.0, True).items():
        assert_close(got[name], want.reshape(-1).astype(lamina_float), "matmul",
                     f"attention {name} {shape}")


def _args(backend: Any, dtype: str, sizes: dict[str, int] | None = None) -> list[Any]:
    """Forward buffers of (batch 2, L 3, S 4, E 5, Ev 6), ``sizes`` overriding some."""
    need = {"q": 30, "k": 40, "v": 48, "mask": 12, "out": 36, "lse": 6}
    need.update(sizes or {})
    return [backend.Array(n, dtype) for n in need.values()]


@pytest.mark.parametrize("arg", ["q", "k", "v", "mask", "out", "lse"])
def test_attention_rejects_a_buffer_too_small(lamina_backend, lamina_float, arg):
    _need(lamina_backend)
    args = _args(lamina_backend, lamina_float, {arg: 2})
    with pytest.raises(ValueError, match=f"attention: {arg} has 2 elements, .* needs"):
        lamina_backend.attention(*args, 2, 3, 4, 5, 6, 1, 1.0, False)


def test_attention_rejects_bad_sizes(lamina_backend, lamina_float):
    _need(lamina_backend)
    args = _args(lamina_backend, lamina_float)
    with pytest.raises(ValueError, match="attention: L must be >= 0"):
        lamina_backend.attention(*args, 2, -1, 4, 5, 6, 0, 1.0, False)
    with pytest.raises(ValueError, match="attention: mask_batch must be 0"):
        lamina_backend.attention(*args, 2, 3, 4, 5, 6, 3, 1.0, False)


def test_attention_backward_rejects_a_buffer_too_small(lamina_backend, lamina_float):
    _need(lamina_backend)
    g, q, k, v, mask, lse = (lamina_backend.Array(n, lamina_float)
                             for n in (36, 30, 40, 48, 12, 6))
    dq, dk, dv = (lamina_backend.Array(n, lamina_float) for n in (30, 40, 2))
    with pytest.raises(ValueError, match="attention_backward: dv has 2 elements"):
        lamina_backend.attention_backward(g, q, k, v, mask, lse, dq, dk, dv, 2, 3, 4, 5, 6, 1,
                                          1.0, False)


@pytest.mark.parametrize("kernel", KERNELS)
def test_attention_rejects_mixed_dtypes(lamina_backend, kernel):
    _need(lamina_backend)
    if "float64" not in lamina_backend.dtypes:
        pytest.skip("backend lists no float64")
    count = 6 if kernel == "attention" else 9
    args: list[Any] = [lamina_backend.Array(64, "float32") for _ in range(count)]
    args[1] = lamina_backend.Array(64, "float64")
    with pytest.raises(TypeError, match=kernel):
        getattr(lamina_backend, kernel)(*args, 1, 2, 2, 2, 2, 0, 1.0, False)
