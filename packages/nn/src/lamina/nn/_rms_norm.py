"""Root-mean-square normalisation, as ``torch.nn.functional.rms_norm`` (composed ops).

The module, :class:`lamina.nn.RMSNorm`, lives in ``_norm`` beside the other norms.
"""

from __future__ import annotations

from lamina import ndarray as nd
from lamina.autograd import Tensor

from ._errors import ShapeError

__all__ = ["rms_norm"]


def rms_norm(x: Tensor, normalized_shape: int | tuple[int, ...] | list[int],
             weight: Tensor | None = None, eps: float | None = None) -> Tensor:
    """Root-mean-square normalisation over the last dims: ``x / sqrt(mean(x**2) + eps) * w``.

    Args:
        x: (*, *D).
        normalized_shape: D, an int or a sequence (not empty).
        weight: (*D) or None.
        eps: added to the mean square; None takes the machine epsilon of x's dtype
            (PyTorch's rule).

    Returns:
        (*, *D).
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) \
        else tuple(normalized_shape)
    xs = tuple(x.shape)
    k = len(shape)
    if not k:
        raise ShapeError("rms_norm: normalized_shape is empty; pass at least one trailing "
                         "dim to normalise over")
    if len(xs) < k or xs[len(xs) - k:] != shape:
        raise ShapeError(f"rms_norm: expected input of shape (*, "
                         f"{', '.join(map(str, shape))}), got {xs}")
    if weight is not None and tuple(weight.shape) != shape:
        raise ShapeError(f"rms_norm: weight must have shape {shape} (normalized_shape), got "
                         f"{tuple(weight.shape)}")
    if eps is None:
        eps = nd.finfo(x.dtype).eps
    dims = tuple(range(len(xs) - k, len(xs)))
    out = x / ((x * x).mean(dims, keepdim=True) + eps).sqrt()
    return out * weight if weight is not None else out
