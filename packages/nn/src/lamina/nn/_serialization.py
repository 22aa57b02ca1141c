"""Checkpoints: ``save(obj, path)`` / ``load(path)`` in safetensors (no pickle).

A checkpoint is a safetensors file. Array leaves of ``obj`` (Tensors, NDArrays,
numpy arrays) become tensor entries named by their path (``"fc.weight"``,
``"state.0.exp_avg"``); everything else (numbers, strings, None, lists,
nested dicts with str or int keys, which an optimizer's state dict has) is
stored as JSON in the file's metadata, with each array replaced by a
reference to its entry. A SHA-256 over the format, that JSON and the entries'
bytes is stored too, so a damaged or edited file (an array, a stored number,
a renamed key) is rejected before anything is built from it. Files of the
first format (``lamina-checkpoint-1``), whose checksum covers the arrays
only, still load, with a warning. Any plain safetensors file loads as a flat
dict.

Lamina computes in float32, float64, int64 and bool, so a loaded entry of
another dtype is converted only where no value changes: float16 to float32;
the 8- to 32-bit integers, and uint64 entries below 2**63, to int64. Anything
else (a uint64 value of 2**63 or more, complex numbers) raises
:class:`CheckpointError` naming the entry; ``as_numpy=True`` returns every
entry in its stored dtype.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from lamina import ndarray as nd
from lamina.autograd import Tensor
from safetensors import SafetensorError, safe_open
from safetensors.numpy import save_file

from ._errors import CheckpointError

__all__ = ["load", "save"]

_FORMAT = "lamina-checkpoint-2"
# The first format's checksum covers the arrays only (not the structure record).
_LEGACY_FORMAT = "lamina-checkpoint-1"


def save(obj: Any, path: str | os.PathLike[str]) -> None:
    """Write ``obj`` (a state dict, an optimizer state dict, or a dict of them) to ``path``.

    The file is written to a temporary file next to ``path`` (its name unique
    to this save, so concurrent saves to one path never share it), flushed to
    disk and renamed into place: an interrupted save never leaves a
    half-written checkpoint under ``path``, a failed one leaves no temporary
    file behind, and of concurrent saves the last rename wins whole.

    Args:
        obj: nested dicts/lists/tuples of arrays, numbers, strings, bools and None.
        path: the file to write (conventionally ``*.safetensors``).

    Raises:
        FileNotFoundError: the folder of ``path`` does not exist.

    Example:
        >>> import numpy as np, tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "ck.safetensors")
        >>> save({"w": np.ones(2, np.float32), "step": 3}, p)
        >>> sorted(load(p, as_numpy=True).items(), key=str)[1]
        ('w', array([1., 1.], dtype=float32))
    """
    tensors: dict[str, np.ndarray] = {}
    tree = json.dumps(_encode(obj, (), tensors))
    metadata = {"format": _FORMAT, "tree": tree,
                "sha256": _digest(tensors, _header(_FORMAT, tree))}
    path = Path(path)
    if not path.parent.is_dir():
        raise FileNotFoundError(f"save: the folder of {path} does not exist")
    # In the same folder (a rename across file systems is not atomic); hidden,
    # so that a glob of *.safetensors never sees a half-written file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        save_file(tensors, str(tmp), metadata=metadata)
        _fsync(tmp)  # the data reaches the disk before the name points at it
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync(path.parent)  # and the rename itself survives a power cut


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _encode(obj: Any, where: tuple[str, ...], tensors: dict[str, np.ndarray]) -> Any:
    if isinstance(obj, (Tensor, nd.NDArray, np.ndarray)):
        kind = "tensor" if isinstance(obj, Tensor) else \
            "ndarray" if isinstance(obj, nd.NDArray) else "numpy"
        # np.ascontiguousarray would turn 0-d arrays into shape (1,).
        raw = obj if isinstance(obj, np.ndarray) else obj.numpy()
        array = np.array(raw, order="C", copy=True)
        name = ".".join(where) or "value"
        while name in tensors:
            name += "_"
        tensors[name] = array
        return {"__array__": name, "kind": kind}
    if isinstance(obj, Mapping):
        if all(isinstance(k, str) for k in obj):
            return {"__dict__": [[k, _encode(v, where + (k,), tensors)] for k, v in obj.items()]}
        if all(isinstance(k, int) for k in obj):
            return {"__intdict__": [[k, _encode(v, where + (str(k),), tensors)]
                                    for k, v in obj.items()]}
        raise TypeError(f"save: dict keys must be all str or all int, got {list(obj)[:5]}")
    if isinstance(obj, (list, tuple)):
        items = [_encode(v, where + (str(i),), tensors) for i, v in enumerate(obj)]
        return {"__tuple__": items} if isinstance(obj, tuple) else {"__list__": items}
    if isinstance(obj, (np.generic,)):
        obj = obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"__value__": obj}
    raise TypeError(f"save: cannot store a {type(obj).__name__} at "
                    f"'{'.'.join(where) or '<root>'}'; checkpoints hold arrays, numbers, "
                    f"strings, None and lists/dicts of them (no pickle)")


def _header(fmt: str, tree: str) -> str:
    """What the checksum covers besides the arrays; the length keeps the parts apart."""
    return f"{fmt}:{len(tree)}:{tree};"


def _digest(tensors: Mapping[str, np.ndarray], header: str = "") -> str:
    """SHA-256 over ``header`` and every entry (name, dtype, shape, bytes) in name order;
    an empty header gives the first format's arrays-only checksum."""
    h = hashlib.sha256(header.encode())
    for name in sorted(tensors):
        array = np.asarray(tensors[name], order="C")
        h.update(f"{name}:{array.dtype.str}:{array.shape};".encode())
        h.update(array.tobytes())
    return h.hexdigest()


def load(path: str | os.PathLike[str], device: Any = None, as_numpy: bool = False) -> Any:
    """Read a checkpoint written by :func:`save` (or any safetensors file).

    Args:
        path: the file.
        device: where loaded Tensors live (default device when None).
        as_numpy: return every array as a numpy array instead of its saved kind.

    Returns:
        The saved object; a plain safetensors file gives a flat dict.

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: the file is truncated, corrupt, edited (its arrays or
            metadata do not match its checksum), or not safetensors; nothing
            is returned.

    Warns:
        UserWarning: the file predates the metadata checksum
            (``lamina-checkpoint-1``); it loads with its arrays verified.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"load: no such checkpoint: {path}")
    try:
        with safe_open(str(path), framework="numpy") as f:
            metadata = f.metadata() or {}
            tensors = {name: f.get_tensor(name) for name in f.keys()}  # noqa: SIM118
    except (SafetensorError, OSError, ValueError) as exc:
        raise CheckpointError(f"load: {path} is not a readable safetensors checkpoint "
                              f"(truncated or corrupt?): {exc}") from exc
    if metadata.get("format") not in (_FORMAT, _LEGACY_FORMAT):
        return {name: _restore(array, "numpy" if as_numpy else "tensor", device, name, path)
                for name, array in tensors.items()}
    _verify(metadata, tensors, path)
    try:
        tree = json.loads(metadata["tree"])
        return _decode(tree, tensors, device, as_numpy, path)
    except RecursionError:
        # json.loads and _decode recurse once per level; a hostile file nests
        # deeper than Python's stack, which no checkpoint of ours does.
        raise CheckpointError(f"load: {path} has a damaged structure record: nested deeper "
                              f"than the interpreter's recursion limit") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"load: {path} has a damaged structure record: {exc}") from exc


def _verify(metadata: dict[str, str], tensors: dict[str, np.ndarray], path: Path) -> None:
    """Raise CheckpointError unless the checksum matches what was read."""
    tree = metadata.get("tree")
    if not isinstance(tree, str):
        raise CheckpointError(f"load: {path} is corrupt: its metadata has no 'tree' "
                              f"structure record (keys: {sorted(metadata)})")
    legacy = metadata["format"] == _LEGACY_FORMAT
    header = "" if legacy else _header(metadata["format"], tree)
    if _digest(tensors, header) != metadata.get("sha256"):
        covered = "data" if legacy else "data or metadata"
        raise CheckpointError(f"load: {path} is corrupt or was edited: its {covered} does "
                              f"not match the checksum written with it")
    if legacy:
        warnings.warn(f"load: {path} predates the metadata checksum ({_LEGACY_FORMAT}): "
                      f"its arrays are verified, its other values are not; save it again "
                      f"to protect them", UserWarning, stacklevel=3)


def _decode(node: Any, tensors: dict[str, np.ndarray], device: Any, as_numpy: bool,
            path: Path) -> Any:
    if "__array__" in node:
        kind = "numpy" if as_numpy else node["kind"]
        return _restore(tensors[node["__array__"]], kind, device, node["__array__"], path)
    if "__dict__" in node:
        return {k: _decode(v, tensors, device, as_numpy, path) for k, v in node["__dict__"]}
    if "__intdict__" in node:
        return {int(k): _decode(v, tensors, device, as_numpy, path)
                for k, v in node["__intdict__"]}
    if "__list__" in node:
        return [_decode(v, tensors, device, as_numpy, path) for v in node["__list__"]]
    if "__tuple__" in node:
        return tuple(_decode(v, tensors, device, as_numpy, path) for v in node["__tuple__"])
    return node["__value__"]


def _restore(array: np.ndarray, kind: str, device: Any, name: str, path: Path) -> Any:
    if kind == "numpy":
        return array
    data = nd.array(_lossless(array, name, path), device=device)
    return data if kind == "ndarray" else Tensor(data)


def _lossless(array: np.ndarray, name: str, path: Path) -> np.ndarray:
    """``array`` in the Lamina dtype that holds each of its values exactly."""
    kind, size = array.dtype.kind, array.dtype.itemsize
    if kind == "f":
        return array if size >= 4 else array.astype(np.float32)
    if kind == "b":
        return array  # a mask stays a mask: as int64, x[mask] would gather rows
    if (kind in "iu" and size < 8) or array.dtype == np.int64:
        return array.astype(np.int64)
    if array.dtype == np.uint64 and (array.size == 0 or int(array.max()) < 2**63):
        return array.astype(np.int64)
    why = ("has values of 2**63 or more, which int64 cannot hold" if kind == "u"
           else "has no Lamina dtype (float32, float64, int64, bool)")
    raise CheckpointError(f"load: entry {name!r} of {path} is {array.dtype.name} and {why}; "
                          "load it with as_numpy=True to get the stored values")
