"""``gradcheck``: compares autograd's gradients with central finite differences.

Small inputs get the full Jacobian, one column per perturbed element. Large
inputs get a random-direction check, which is as strong against a wrong rule
and costs two function evaluations per input instead of two per element: for
a random unit direction ``v`` and output cotangent ``u``,
``u . (f(x + eps v) - f(x - eps v)) / (2 eps)`` must equal ``(J^T u) . v``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import lamina.ndarray as nd
import numpy as np

from ._engine import grad
from ._tensor import Tensor
from ._tensor_base import TensorBase


class GradcheckError(RuntimeError):
    """Analytical and numerical gradients disagree."""


def _outputs(fn: Callable[..., Any], inputs: Sequence[Tensor]) -> list[Tensor]:
    out = fn(*inputs)
    return [out] if isinstance(out, Tensor) else list(out)


def _flat(t: TensorBase) -> np.ndarray:
    return np.asarray(t._data.numpy(), dtype=np.float64).reshape(-1)  # raw values: no graph


def _with(inputs: Sequence[Tensor], j: int, values: np.ndarray) -> list[Tensor]:
    """``inputs`` with input ``j`` replaced by ``values`` (same shape, device, flag).

    The copy keeps ``requires_grad`` so that a function which itself calls
    ``grad`` (a first-order gradient under a second-order check) still works.
    """
    x = inputs[j]
    new = Tensor(nd.array(values.reshape(x.shape), dtype=x.dtype, device=x.device),
                 requires_grad=x.requires_grad)
    return [new if k == j else t for k, t in enumerate(inputs)]


def _numerical(fn: Callable[..., Any], inputs: Sequence[Tensor], j: int, direction: np.ndarray,
               eps: float) -> list[np.ndarray]:
    """d(outputs)/d(input j) along ``direction``, by central differences."""
    base = _flat(inputs[j])
    plus = _outputs(fn, _with(inputs, j, base + eps * direction))
    minus = _outputs(fn, _with(inputs, j, base - eps * direction))
    return [(_flat(p) - _flat(m)) / (2 * eps) for p, m in zip(plus, minus)]


def _fail(i: int, j: int, what: str, analytical: Any, numerical: Any) -> GradcheckError:
    return GradcheckError(
        f"Jacobian mismatch for output {i} with respect to input {j} ({what}),\n"
        f"numerical: {numerical}\nanalytical: {analytical}")


def gradcheck(fn: Callable[..., Any], inputs: Tensor | Sequence[Tensor], eps: float = 1e-6,
              atol: float = 1e-5, rtol: float = 1e-3, raise_exception: bool = True,
              max_full_elements: int = 64, seed: int = 0) -> bool:
    """Checks ``fn``'s gradients against finite differences, in float64.

    Args:
        fn: maps the input tensors to a tensor or a tuple of tensors.
        inputs: float64 tensors; those with ``requires_grad`` are checked.
        eps: finite-difference step.
        atol, rtol: tolerances of ``|analytical - numerical| <= atol + rtol * |numerical|``.
        raise_exception: raise ``GradcheckError`` on mismatch (else return False).
        max_full_elements: when an input and an output both have at most this
            many elements, their full Jacobian is compared; otherwise one
            random direction with one random output cotangent.
        seed: seed of the random directions and cotangents.

    Returns:
        True when every gradient matches.

    Raises:
        GradcheckError: "Jacobian mismatch for output i with respect to input
            j", with both values.

    Example:
        >>> import lamina.autograd as ag
        >>> x = ag.rand(3, dtype="float64", requires_grad=True)
        >>> ag.gradcheck(lambda t: (t * t.sin()).sum(), [x])
        True
    """
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    for j, t in enumerate(inputs):
        if t.requires_grad and t.dtype != "float64":
            raise nd.DTypeError(f"gradcheck: input {j} is {t.dtype}; gradcheck needs float64 "
                                "inputs (use .double())")
    rng = np.random.default_rng(seed)
    outputs = _outputs(fn, inputs)
    try:
        for j, x in enumerate(inputs):
            if not x.requires_grad:
                continue
            for i, out in enumerate(outputs):
                small = max(x._data.size, out._data.size) <= max_full_elements
                check = _check_full if small else _check_direction
                check(fn, inputs, outputs, i, j, eps, atol, rtol, rng)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _vjp(out: Tensor, x: Tensor, u: np.ndarray) -> np.ndarray:
    """``u^T J`` by autograd (zeros when ``out`` does not depend on ``x``)."""
    if not out.requires_grad:
        return np.zeros(x._data.size)
    cot = Tensor(nd.array(u.reshape(out.shape), dtype=out.dtype, device=out.device))
    (g,) = grad(out, [x], cot, retain_graph=True, allow_unused=True)
    return np.zeros(x._data.size) if g is None else _flat(g)


def _check_full(fn: Callable[..., Any], inputs: list[Tensor], outputs: list[Tensor], i: int,
                j: int, eps: float, atol: float, rtol: float, rng: np.random.Generator) -> None:
    """Compares the whole Jacobian, shape ``(outputs[i].size, inputs[j].size)``."""
    n_in, n_out = inputs[j]._data.size, outputs[i]._data.size
    numerical = np.empty((n_out, n_in))
    for k in range(n_in):
        numerical[:, k] = _numerical(fn, inputs, j, np.eye(n_in)[k], eps)[i]
    analytical = np.stack([_vjp(outputs[i], inputs[j], row) for row in np.eye(n_out)]
                          ) if n_out else np.zeros((0, n_in))
    if not np.allclose(analytical, numerical, rtol=rtol, atol=atol):
        raise _fail(i, j, "full Jacobian", analytical, numerical)


def _check_direction(fn: Callable[..., Any], inputs: list[Tensor], outputs: list[Tensor],
                     i: int, j: int, eps: float, atol: float, rtol: float,
                     rng: np.random.Generator) -> None:
    """Compares ``u^T J v`` for a random cotangent ``u`` and unit direction ``v``."""
    u = rng.standard_normal(outputs[i]._data.size)
    v = rng.standard_normal(inputs[j]._data.size)
    v /= np.linalg.norm(v)
    numerical = float(_numerical(fn, inputs, j, v, eps)[i] @ u)
    analytical = float(_vjp(outputs[i], inputs[j], u) @ v)
    if not np.isclose(analytical, numerical, rtol=rtol, atol=atol):
        raise _fail(i, j, "random direction", analytical, numerical)
