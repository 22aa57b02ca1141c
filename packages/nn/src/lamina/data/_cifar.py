"""CIFAR-10 from its "python version" batch files, through a restricted unpickler.

Each batch is a Python-2 pickle of a dict ``{b"batch_label", b"labels",
b"data", b"filenames"}`` whose ``data`` is a pickled uint8 ndarray (10000,
3072), one image per row as 1024 red, 1024 green, then 1024 blue values.
Plain ``pickle.load`` would run any callable a tampered file names; here
:class:`SafeUnpickler` resolves only the three globals a numpy array needs,
and those only in harmless forms (a plain ndarray, a dtype without Python
objects), so a CIFAR file can build arrays, bytes, ints, lists and dicts and
nothing else.
"""

from __future__ import annotations

import io
import os
import pickle
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._dataset import Dataset
from ._mnist import DatasetFileError

__all__ = ["CIFAR10", "CIFAR10_MEAN", "CIFAR10_STD", "SafeUnpickler", "load_cifar_batch"]

TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_FILES = ("test_batch",)
# Per-channel statistics of the training set in 0..1 units (see ../shared/data/README.md).
CIFAR10_MEAN = (0.4914, 0.4822, 0.4465)
CIFAR10_STD = (0.2470, 0.2435, 0.2616)

try:
    from numpy._core.multiarray import _reconstruct as _np_reconstruct
except ImportError:  # numpy < 2
    from numpy.core.multiarray import _reconstruct as _np_reconstruct  # type: ignore[no-redef]

# The array class is handed out as this token, which cannot be called, only
# passed to the _reconstruct below: the file never gets the class itself.
_NDARRAY_TOKEN = ("numpy", "ndarray")


def _reconstruct(subtype: Any, shape: Any, dtype: Any) -> np.ndarray:
    if subtype is not _NDARRAY_TOKEN:
        raise pickle.UnpicklingError("numpy _reconstruct may only build a plain ndarray")
    array = _np_reconstruct(np.ndarray, shape, _safe_dtype(dtype))
    assert isinstance(array, np.ndarray)  # numpy's own constructor, not user input
    return array


def _safe_dtype(spec: Any, align: Any = False, copy: Any = False) -> np.dtype:
    if not isinstance(spec, (str, bytes)):
        raise pickle.UnpicklingError(f"dtype spec must be a string, got {type(spec).__name__}")
    dtype = np.dtype(spec.decode("ascii") if isinstance(spec, bytes) else spec)
    if dtype.hasobject:
        raise pickle.UnpicklingError("arrays of Python objects are not allowed")
    return dtype


_ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): _NDARRAY_TOKEN,
    ("numpy", "dtype"): _safe_dtype,
}


class SafeUnpickler(pickle.Unpickler):
    """An unpickler that resolves only what CIFAR batches contain.

    Allowed globals: ``numpy.core.multiarray._reconstruct`` (plain ndarrays
    only), ``numpy.ndarray`` (as an opaque token for that call) and
    ``numpy.dtype`` (no object dtypes). Anything else raises
    ``pickle.UnpicklingError`` before it is looked up, so no code runs.
    """

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refusing to load global {module}.{name}: a CIFAR batch holds only numpy "
                f"arrays, lists, ints and bytes") from None


def load_cifar_batch(path: str | os.PathLike[str]) -> tuple[np.ndarray, np.ndarray]:
    """Read one CIFAR-10 batch file.

    Args:
        path: a ``data_batch_k`` or ``test_batch`` file.

    Returns:
        images uint8 (N, 3, 32, 32) and labels int64 (N,).

    Raises:
        FileNotFoundError: the file does not exist.
        DatasetFileError: the file is truncated, corrupt, names a forbidden
            global, or does not hold a CIFAR batch.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"CIFAR10: no such file: {path}")
    raw = path.read_bytes()
    try:
        batch = SafeUnpickler(io.BytesIO(raw), encoding="bytes").load()
    except pickle.UnpicklingError as exc:
        raise DatasetFileError(f"CIFAR10: {path} is not a valid CIFAR batch: {exc}") from exc
    except (EOFError, ValueError, TypeError, IndexError, KeyError, AttributeError,
            OverflowError, RecursionError, MemoryError) as exc:
        raise DatasetFileError(f"CIFAR10: {path} is truncated or corrupt "
                               f"({type(exc).__name__}: {exc})") from exc
    return _check_batch(batch, path)


def _check_batch(batch: Any, path: Path) -> tuple[np.ndarray, np.ndarray]:
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        keys = sorted(batch) if isinstance(batch, dict) else type(batch).__name__
        raise DatasetFileError(f"CIFAR10: {path} holds {keys}, not a dict with b'data' and "
                               f"b'labels'")
    data, labels = batch[b"data"], batch[b"labels"]
    if not isinstance(data, np.ndarray) or data.dtype != np.uint8 or data.ndim != 2 \
            or data.shape[1] != 3 * 32 * 32:
        shape = getattr(data, "shape", None)
        raise DatasetFileError(f"CIFAR10: {path}: data should be uint8 (N, 3072), got "
                               f"{getattr(data, 'dtype', type(data).__name__)} {shape}")
    if not isinstance(labels, list) or len(labels) != data.shape[0]:
        count = len(labels) if isinstance(labels, list) else type(labels).__name__
        raise DatasetFileError(f"CIFAR10: {path}: {data.shape[0]} images but labels {count}")
    # Checked one by one before any conversion: a string or a 2**70 among them
    # would make numpy raise its own ValueError/OverflowError without the file.
    for i, label in enumerate(labels):
        if not isinstance(label, int) or isinstance(label, bool) or not 0 <= label <= 9:
            raise DatasetFileError(f"CIFAR10: {path}: labels must be 0..9, found "
                                   f"{label!r} ({type(label).__name__}) at index {i}")
    return data.reshape(-1, 3, 32, 32), np.asarray(labels, dtype=np.int64)


class CIFAR10(Dataset):
    """CIFAR-10: samples are (uint8 image (3, 32, 32) CHW, int64 label).

    Args:
        root: folder with ``data_batch_1`` .. ``data_batch_5`` and ``test_batch``
            (e.g. ``../shared/data/cifar10``).
        train: the 50,000 training images (True) or the 10,000 test images.
        transform: applied to each (3, 32, 32) uint8 image, e.g.
            ``Compose([RandomCrop(32, 4), RandomHorizontalFlip(), Normalize(...)])``.
        target_transform: applied to each label.

    Attributes:
        data: uint8 (N, 3, 32, 32).
        targets: int64 (N,).
        classes: the ten class names (from ``batches.meta`` when present).

    Raises:
        FileNotFoundError: a batch file is missing; the message names it.
        DatasetFileError: a file is truncated, corrupt or tampered with.
    """

    classes = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
               "ship", "truck")

    def __init__(self, root: str | os.PathLike[str], train: bool = True,
                 transform: Callable[[np.ndarray], Any] | None = None,
                 target_transform: Callable[[Any], Any] | None = None) -> None:
        self.root, self.train = Path(root), train
        self.transform, self.target_transform = transform, target_transform
        names = TRAIN_FILES if train else TEST_FILES
        for name in names:
            if not (self.root / name).is_file():
                raise FileNotFoundError(
                    f"CIFAR10: missing file {name} in {self.root}; point root (--data) at the "
                    f"folder of the CIFAR-10 python version (data_batch_1..5, test_batch)")
        parts = [load_cifar_batch(self.root / name) for name in names]
        self.data = np.concatenate([p[0] for p in parts])
        self.targets = np.concatenate([p[1] for p in parts])

    def __len__(self) -> int:
        return int(self.targets.shape[0])

    def __getitem__(self, index: int) -> tuple[Any, Any]:
        image: Any = self.data[index]
        target: Any = self.targets[index]
        if self.transform is not None:
            image = self.transform(image)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return image, target

    def __getitems__(self, indices: Sequence[int]) -> list[tuple[Any, Any]]:
        if self.transform is not None or self.target_transform is not None:
            return [self[i] for i in indices]
        idx = np.asarray(indices, dtype=np.int64)
        images, targets = self.data[idx], self.targets[idx]
        return [(images[i], targets[i]) for i in range(len(idx))]

    def __repr__(self) -> str:
        split = "train" if self.train else "test"
        return f"CIFAR10(split={split}, samples={len(self)}, root={str(self.root)!r})"
