"""Per-sample transforms on numpy arrays (images as (C, H, W) after ToTensor).

Random transforms draw from :func:`lamina.data.transform_rng`, which the
DataLoader reseeds for every batch, so augmented batches are reproducible
and the same with or without worker processes.

Example:
    >>> import numpy as np
    >>> t = Compose([ToTensor(), Normalize([0.5], [0.5])])
    >>> t(np.full((2, 2), 255, dtype=np.uint8)).tolist()
    [[[1.0, 1.0], [1.0, 1.0]]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._random import transform_rng

__all__ = ["Compose", "Lambda", "LinearTransformation", "Normalize", "RandomCrop",
           "RandomHorizontalFlip", "ToTensor"]


class Compose:
    """Apply transforms one after another.

    Args:
        transforms: callables, applied in order.
    """

    def __init__(self, transforms: Sequence[Callable[[Any], Any]]) -> None:
        self.transforms = list(transforms)

    def __call__(self, x: Any) -> Any:
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self) -> str:
        inner = "".join(f"\n    {t!r}," for t in self.transforms)
        return f"Compose([{inner}\n])"


class Lambda:
    """Wrap a function as a transform (define it at module level for workers)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, x: Any) -> Any:
        return self.fn(x)


class ToTensor:
    """uint8 (H, W) or (H, W, C) image in 0..255 -> float32 (C, H, W) in [0, 1].

    The result stays a numpy array; the DataLoader turns batches into Tensors.
    Float inputs are only transposed and cast, not rescaled.
    """

    def __call__(self, image: np.ndarray) -> np.ndarray:
        image = np.asarray(image)
        if image.ndim == 2:
            image = image[None]
        elif image.ndim == 3:
            image = image.transpose(2, 0, 1)
        else:
            raise ValueError(f"ToTensor: expected an (H, W) or (H, W, C) image, "
                             f"got shape {image.shape}")
        out = image.astype(np.float32)
        if image.dtype == np.uint8:
            out /= 255.0
        return np.ascontiguousarray(out)

    def __repr__(self) -> str:
        return "ToTensor()"


class Normalize:
    """(x - mean[c]) / std[c] per channel of a (C, H, W) image or (..., C, H, W) batch.

    Args:
        mean: C means (or one for all channels).
        std: C standard deviations, all > 0.
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        self.mean = np.asarray(mean, dtype=np.float32).reshape(-1, 1, 1)
        self.std = np.asarray(std, dtype=np.float32).reshape(-1, 1, 1)
        if np.any(self.std <= 0):
            raise ValueError(f"Normalize: std must be > 0, got {list(np.ravel(self.std))}")

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if x.ndim < 3 or self.mean.shape[0] not in (1, x.shape[-3]):
            raise ValueError(f"Normalize: expected a (..., C, H, W) array with C = "
                             f"{self.mean.shape[0]}, got shape {x.shape}")
        return ((x - self.mean) / self.std).astype(np.float32)

    def __repr__(self) -> str:
        return f"Normalize(mean={self.mean.ravel().tolist()}, std={self.std.ravel().tolist()})"


class RandomCrop:
    """Zero-pad a (C, H, W) array, then crop a random size x size window.

    Args:
        size: output height and width (an int or an (h, w) pair).
        padding: zeros added on every side before cropping.
    """

    def __init__(self, size: int | tuple[int, int], padding: int = 0) -> None:
        self.size = (size, size) if isinstance(size, int) else tuple(size)
        if padding < 0:
            raise ValueError(f"RandomCrop: padding must be >= 0, got {padding}")
        self.padding = padding

    def __call__(self, x: np.ndarray) -> np.ndarray:
        p = self.padding
        if p:
            x = np.pad(x, [(0, 0)] * (x.ndim - 2) + [(p, p), (p, p)])
        h, w = x.shape[-2:]
        th, tw = self.size
        if th > h or tw > w:
            raise ValueError(f"RandomCrop: crop {self.size} is larger than the padded "
                             f"image {(h, w)}")
        rng = transform_rng()
        top = int(rng.integers(0, h - th + 1))
        left = int(rng.integers(0, w - tw + 1))
        return np.ascontiguousarray(x[..., top:top + th, left:left + tw])

    def __repr__(self) -> str:
        return f"RandomCrop(size={self.size}, padding={self.padding})"


class RandomHorizontalFlip:
    """Flip the last axis (width) with probability p."""

    def __init__(self, p: float = 0.5) -> None:
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"RandomHorizontalFlip: p must be in [0, 1], got {p}")
        self.p = p

    def __call__(self, x: np.ndarray) -> np.ndarray:
        if transform_rng().random() < self.p:
            return np.ascontiguousarray(x[..., ::-1])
        return x

    def __repr__(self) -> str:
        return f"RandomHorizontalFlip(p={self.p})"


class LinearTransformation:
    """``(x.flatten() - mean) @ matrix``, reshaped back: a whitening transform.

    Works on one (C, H, W) image or on a batch (..., C, H, W) with C*H*W = D,
    so a whole dataset can be transformed with one matrix product.

    Args:
        matrix: (D, D).
        mean: (D,), subtracted first.

    Example:
        >>> import numpy as np
        >>> t = LinearTransformation(2 * np.eye(4), np.ones(4))
        >>> t(np.ones((1, 2, 2))).tolist()
        [[[0.0, 0.0], [0.0, 0.0]]]
    """

    def __init__(self, matrix: Any, mean: Any) -> None:
        self.matrix = np.asarray(matrix, dtype=np.float32)
        self.mean = np.asarray(mean, dtype=np.float32)
        d = self.mean.size
        if self.matrix.shape != (d, d) or self.mean.shape != (d,):
            raise ValueError(f"LinearTransformation: matrix must be (D, D) and mean (D,), got "
                             f"{self.matrix.shape} and {self.mean.shape}")

    @classmethod
    def zca(cls, images: np.ndarray, eps: float = 1.0) -> LinearTransformation:
        """ZCA whitening fitted on ``images`` (N, ...): ``U diag(1 / sqrt(s + eps)) U^T``
        from the eigendecomposition ``U diag(s) U^T`` of their covariance.

        ``eps`` (in the units of the data's variance) damps the directions of
        least variance, where most of the noise is; a large ``eps`` leaves the
        images nearly unchanged up to scale.
        """
        if eps <= 0:
            raise ValueError(f"LinearTransformation.zca: eps must be > 0, got {eps}")
        flat = np.asarray(images, dtype=np.float32).reshape(len(images), -1)
        if flat.shape[0] < 2:
            raise ValueError(f"LinearTransformation.zca: needs at least 2 images, got shape "
                             f"{np.shape(images)}")
        mean = flat.mean(0, dtype=np.float64)
        centred = flat - mean.astype(np.float32)
        # The covariance in float32 (half the time of float64, ample for eps ~ 1),
        # its eigendecomposition in float64.
        cov = (centred.T @ centred).astype(np.float64) / len(flat)
        s, u = np.linalg.eigh(cov)
        return cls((u / np.sqrt(np.maximum(s, 0.0) + eps)) @ u.T, mean)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        d = self.mean.size
        if x.ndim < 3 or int(np.prod(x.shape[-3:])) != d:
            raise ValueError(f"LinearTransformation: expected a (..., C, H, W) array with "
                             f"C*H*W = {d}, got shape {x.shape}")
        flat = np.asarray(x, dtype=np.float32).reshape(-1, d)
        return ((flat - self.mean) @ self.matrix).reshape(x.shape)

    def __repr__(self) -> str:
        return f"LinearTransformation(D={self.mean.size})"

