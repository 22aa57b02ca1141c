"""MNIST from its IDX gz files, with a bundled real subset and an optional download.

IDX layout: big-endian uint32 magic (two zero bytes, a type code, the number
of dims), one big-endian uint32 per dim, then the raw values row-major.
"""

from __future__ import annotations

import gzip
import hashlib
import math
import os
import struct
import urllib.request
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._dataset import Dataset

__all__ = ["MNIST", "DatasetFileError", "bundled_mnist_dir", "read_idx"]

_IDX_TYPES: dict[int, Any] = {0x08: np.uint8, 0x09: np.int8, 0x0B: ">i2", 0x0C: ">i4",
                              0x0D: ">f4", 0x0E: ">f8"}
# Mirrors in the order torchvision tries them; files are checked by MD5 either way.
MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
FILES = {
    "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
    "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
    "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
    "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
}


class DatasetFileError(ValueError):
    """A dataset file that is truncated, corrupt or not in the expected format."""


def bundled_mnist_dir() -> Path:
    """The folder of the MNIST subset shipped with lamina-nn (5,000 train / 1,000 test)."""
    return Path(__file__).with_name("mnist_subset")


def read_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """Read an IDX file (gzip-compressed when the name ends in .gz).

    Args:
        path: the file.

    Returns:
        The array with the file's dims and dtype (native byte order).

    Raises:
        FileNotFoundError: the file does not exist.
        DatasetFileError: bad gzip data, bad magic, or a size that does not
            match the header.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"read_idx: no such file: {path}")
    try:
        if path.suffix == ".gz":
            with gzip.open(path, "rb") as f:
                raw = f.read()
        else:
            raw = path.read_bytes()
    except (OSError, EOFError, zlib.error) as exc:
        raise DatasetFileError(f"read_idx: {path} is not a valid gzip file "
                               f"(truncated or corrupt): {exc}") from exc
    return _parse_idx(raw, path)


def _parse_idx(raw: bytes, path: Path) -> np.ndarray:
    if len(raw) < 4:
        raise DatasetFileError(f"read_idx: {path} is too short ({len(raw)} bytes) to be IDX")
    zero, code, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or code not in _IDX_TYPES or ndim == 0:
        raise DatasetFileError(f"read_idx: {path} has bad IDX magic 0x{raw[:4].hex()} "
                               f"(expected 0x0000 then a type code and the number of dims)")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise DatasetFileError(f"read_idx: {path} is truncated inside its header")
    dims = struct.unpack(f">{ndim}I", raw[4:header])
    dtype = np.dtype(_IDX_TYPES[code])
    # math.prod in Python ints: numpy's prod of four uint32 dims wraps in int64.
    expected = header + math.prod(dims) * dtype.itemsize
    if len(raw) != expected:
        raise DatasetFileError(f"read_idx: {path} holds {len(raw)} bytes but its header "
                               f"{dims} needs {expected}; the file is truncated or corrupt")
    data = np.frombuffer(raw, dtype=dtype, offset=header).reshape(dims)
    return data.astype(dtype.newbyteorder("="), copy=True)


def download_mnist(root: str | os.PathLike[str], mirrors: Sequence[str] = MIRRORS) -> None:
    """Download the four MNIST files into ``root`` (skipping ones already there).

    Raises:
        RuntimeError: no mirror could deliver a file with the right MD5.
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for name, md5 in FILES.items():
        target = root / name
        if target.is_file() and _md5(target.read_bytes()) == md5:
            continue
        errors = []
        for mirror in mirrors:
            try:
                with urllib.request.urlopen(mirror + name, timeout=30) as response:
                    data = response.read()
            except OSError as exc:
                errors.append(f"{mirror}: {exc}")
                continue
            if _md5(data) != md5:
                errors.append(f"{mirror}: MD5 mismatch")
                continue
            tmp = target.with_suffix(".part")
            tmp.write_bytes(data)
            tmp.replace(target)
            break
        else:
            raise RuntimeError(f"MNIST download: could not fetch {name}: " + "; ".join(errors)
                               + ". Download it by hand into " + str(root))


def _md5(data: bytes) -> str:
    return hashlib.md5(data, usedforsecurity=False).hexdigest()


def _check_labels(labels: np.ndarray, path: Path, classes: int = 10) -> np.ndarray:
    """``labels`` as int64 after checking each is a class index in [0, classes)."""
    if labels.dtype.kind not in "iu":
        raise DatasetFileError(f"MNIST: {path} holds {labels.dtype} values; labels must be "
                               "integers (IDX type 0x08)")
    bad = np.flatnonzero((labels < 0) | (labels >= classes))
    if bad.size:
        raise DatasetFileError(f"MNIST: {path} has label {labels[bad[0]]} at index {bad[0]}; "
                               f"labels must be in [0, {classes})")
    return labels.astype(np.int64)


class MNIST(Dataset):
    """MNIST digits: samples are (uint8 image (28, 28), int64 label).

    Args:
        root: folder holding the four ``*-ubyte.gz`` files; None uses the
            subset bundled with lamina-nn (5,000 train / 1,000 test images).
        train: the training split (True) or the test split.
        transform: applied to each image (e.g. ``ToTensor()``).
        target_transform: applied to each label.
        download: fetch missing files from a standard MNIST mirror first.

    Attributes:
        data: uint8 array (N, 28, 28).
        targets: int64 array (N,).

    Raises:
        FileNotFoundError: a file is missing; the message names it.
        DatasetFileError: a file is truncated or corrupt, images and labels
            disagree in count, or a label is not in [0, 10); the message names
            the file.
    """

    def __init__(self, root: str | os.PathLike[str] | None = None, train: bool = True,
                 transform: Callable[[np.ndarray], Any] | None = None,
                 target_transform: Callable[[Any], Any] | None = None,
                 download: bool = False) -> None:
        self.root = bundled_mnist_dir() if root is None else Path(root)
        self.train = train
        self.transform = transform
        self.target_transform = target_transform
        prefix = "train" if train else "t10k"
        names = (f"{prefix}-images-idx3-ubyte.gz", f"{prefix}-labels-idx1-ubyte.gz")
        if download and root is not None:
            download_mnist(self.root)
        for name in names:
            if not (self.root / name).is_file():
                raise FileNotFoundError(
                    f"MNIST: missing file {name} in {self.root}; point root (--data) at the "
                    f"folder holding the MNIST .gz files, or pass download=True")
        self.data = read_idx(self.root / names[0])
        labels = read_idx(self.root / names[1])
        if self.data.ndim != 3 or labels.ndim != 1 or len(self.data) != len(labels):
            raise DatasetFileError(
                f"MNIST: {names[0]} has shape {self.data.shape} and {names[1]} shape "
                f"{labels.shape}; expected (N, 28, 28) images and N labels")
        self.targets = _check_labels(labels, self.root / names[1])

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
        return f"MNIST(split={split}, samples={len(self)}, root={str(self.root)!r})"
