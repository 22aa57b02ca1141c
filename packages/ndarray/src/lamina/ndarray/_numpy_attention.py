"""The numpy reference backend's attention kernels (interface v2.2, optional).

Scaled dot-product attention in two kernels, ``attention`` and
``attention_backward``; ``_numpy_backend`` sets them on its backend class and
they are the specification the compiled backends follow
(docs/backend-interface.md). Layouts, every buffer compact from element 0
(``B`` batches of ``L`` queries and ``S`` keys, ``E`` features per query and
key, ``Ev`` per value):

- ``q`` (B, L, E), ``k`` (B, S, E), ``v`` (B, S, Ev), ``out`` and ``g`` (B, L, Ev);
- ``lse`` (B, L): each query's log-sum-exp of its scores;
- ``mask`` (mask_batch, L, S), added to the scores: ``mask_batch`` 0 (no mask;
  the buffer is not read), 1 (one mask for every batch) or B (one each);
- ``causal``: key ``j`` is hidden from query ``i`` where ``j > i`` (PyTorch's
  ``is_causal``, top-left aligned).

``attention(q, k, v, mask, out, lse, batch, L, S, E, Ev, mask_batch, scale,
causal)``: ``scores = scale * q @ k^T + mask`` (hidden keys -inf), ``lse =
logsumexp(scores)`` over the keys, ``out = exp(scores - lse) @ v``. A query
that sees no key (every score -inf) gets ``lse = -inf`` and an output of 0,
as PyTorch's ``scaled_dot_product_attention``.

``attention_backward(g, q, k, v, mask, lse, dq, dk, dv, batch, L, S, E, Ev,
mask_batch, scale, causal)``: the gradients from ``g``, the output's
gradient, recomputing ``p = exp(scores - lse)`` (0 for a query with ``lse =
-inf``) from the forward's ``lse``, so that nothing of size L x S is kept
between the two: ``dv = p^T @ g``, ``dp = g @ v^T``, ``ds = p * (dp -
rowsum(p * dp))``, ``dq = scale * ds @ k``, ``dk = scale * ds^T @ q``.

The reference computes in float64 and rounds once into the outputs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_FLOATS = ("float32", "float64")
KERNEL_DTYPES = dict.fromkeys(("attention", "attention_backward"), _FLOATS)
"""The dtypes of the attention kernels."""


def _views(op: str, batch: int, L: int, S: int, E: int, Ev: int,  # noqa: N803
           mask_batch: int, buffers: dict[str, tuple[Any, str]], outputs: tuple[str, ...]
           ) -> dict[str, np.ndarray]:
    """Each input buffer as its (batch, rows, cols) float64 array (``mask`` only when
    ``mask_batch``), after the checks the compiled backends make
    (lamina/kernel_checks.h's ``check_attention``) of every buffer, outputs too.

    ``buffers`` maps a name to ``(buffer, layout)``, the layout one of ``"LE"``,
    ``"SE"``, ``"SV"`` (S x Ev), ``"LV"``, ``"L"`` and ``"mask"``; ``outputs`` name the
    buffers the kernel only writes (checked, not read: they may hold any bits).
    """
    dtypes = {b.data.dtype.name for b, _ in buffers.values()}
    if len(dtypes) != 1 or not dtypes <= set(_FLOATS):
        raise TypeError(f"{op}: every buffer must have one dtype, float32 or float64, got "
                        f"{', '.join(b.data.dtype.name for b, _ in buffers.values())}")
    for name, value in (("batch", batch), ("L", L), ("S", S), ("E", E), ("Ev", Ev)):
        if value < 0:
            raise ValueError(f"{op}: {name} must be >= 0, got {value}")
    if mask_batch not in (0, 1, batch):
        raise ValueError(f"{op}: mask_batch must be 0 (no mask), 1 or batch ({batch}), got "
                         f"{mask_batch}")
    dims = {"LE": (batch, L, E), "SE": (batch, S, E), "SV": (batch, S, Ev),
            "LV": (batch, L, Ev), "L": (batch, L, 1), "mask": (mask_batch, L, S)}
    out = {}
    for name, (buf, layout) in buffers.items():
        shape = dims[layout]
        if layout == "mask" and not mask_batch:
            continue
        need = shape[0] * shape[1] * shape[2]
        if buf.data.size < need:
            raise ValueError(f"{op}: {name} has {buf.data.size} elements, (batch {batch}, L {L}, "
                             f"S {S}, E {E}, Ev {Ev}) needs {need}")
        if name in outputs:
            continue  # written, not read (and its old contents may be any bits)
        out[name] = buf.data[:need].reshape(shape).astype(np.float64)
    return out


def _scores(x: dict[str, np.ndarray], scale: float, causal: bool) -> np.ndarray:
    """``scale * q @ k^T + mask``, hidden keys -inf: (B, L, S) float64."""
    scores = (x["q"] @ x["k"].transpose(0, 2, 1)) * scale
    if "mask" in x:
        scores = scores + x["mask"]
    if causal:
        L, S = scores.shape[1:]  # noqa: N806
        scores[:, np.arange(S)[None, :] > np.arange(L)[:, None]] = -np.inf
    return scores


def _probabilities(scores: np.ndarray, lse: np.ndarray) -> np.ndarray:
    """exp(scores - lse), 0 on a row whose lse is -inf (no key seen)."""
    with np.errstate(invalid="ignore"):
        return np.exp(scores - np.where(lse == -np.inf, 0.0, lse))


def attention(q: Any, k: Any, v: Any, mask: Any, out: Any, lse: Any, batch: int, L: int,  # noqa: N803
              S: int, E: int, Ev: int, mask_batch: int, scale: float, causal: bool) -> None:  # noqa: N803
    """out (B, L, Ev) and lse (B, L) of softmax(scale * q k^T + mask) v (module docstring)."""
    x = _views("attention", batch, L, S, E, Ev, mask_batch,
               {"q": (q, "LE"), "k": (k, "SE"), "v": (v, "SV"), "mask": (mask, "mask"),
                "out": (out, "LV"), "lse": (lse, "L")}, ("out", "lse"))
    scores = _scores(x, float(scale), bool(causal))
    peak = scores.max(axis=2, keepdims=True, initial=-np.inf)
    shift = np.where(np.isfinite(peak), peak, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):  # a row with no key: log(0) = -inf
        row_lse = np.log(np.exp(scores - shift).sum(axis=2, keepdims=True)) + shift
    result = _probabilities(scores, row_lse) @ x["v"]
    np.copyto(out.data[:result.size], result.reshape(-1), casting="unsafe")
    np.copyto(lse.data[:row_lse.size], row_lse.reshape(-1), casting="unsafe")


def attention_backward(g: Any, q: Any, k: Any, v: Any, mask: Any, lse: Any, dq: Any, dk: Any,
                       dv: Any, batch: int, L: int, S: int, E: int, Ev: int,  # noqa: N803
                       mask_batch: int, scale: float, causal: bool) -> None:
    """dq, dk and dv of :func:`attention` from the output's gradient g (module docstring)."""
    x = _views("attention_backward", batch, L, S, E, Ev, mask_batch,
               {"g": (g, "LV"), "q": (q, "LE"), "k": (k, "SE"), "v": (v, "SV"),
                "mask": (mask, "mask"), "lse": (lse, "L"), "dq": (dq, "LE"),
                "dk": (dk, "SE"), "dv": (dv, "SV")}, ("dq", "dk", "dv"))
    p = _probabilities(_scores(x, float(scale), bool(causal)), x["lse"])
    dp = x["g"] @ x["v"].transpose(0, 2, 1)
    ds = p * (dp - (p * dp).sum(axis=2, keepdims=True))
    grads = {"dq": (ds @ x["k"]) * scale, "dk": (ds.transpose(0, 2, 1) @ x["q"]) * scale,
             "dv": p.transpose(0, 2, 1) @ x["g"]}
    for buf, value in ((dq, grads["dq"]), (dk, grads["dk"]), (dv, grads["dv"])):
        np.copyto(buf.data[:value.size], value.reshape(-1), casting="unsafe")
