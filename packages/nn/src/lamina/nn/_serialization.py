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

Every dtype is stored as safetensors' own, so ``safetensors.torch.load_file``
gives PyTorch the same dtypes: a float16 tensor as an F16 entry, a bfloat16
one as a BF16 entry (numpy has no bfloat16: the bits are written and read here,
and in memory a bfloat16 entry is a float32 array holding its exact values).
An entry of any file loads in its dtype where Lamina has it (F16 and BF16
included); the 8- to 32-bit integers, and uint64 entries below 2**63, become
int64. Anything else (a uint64 value of 2**63 or more, complex numbers, 8-bit
floats) raises :class:`CheckpointError` naming the entry; ``as_numpy=True``
returns every entry in its stored dtype (BF16: float32).

Both functions take a path or a binary file object (``io.BytesIO``, ``open(p, "rb")``).
A whole :class:`~lamina.nn.Module` saves as its state dict plus its class path
and, where they can be read back from the module, its constructor arguments;
see :func:`save` for what loading it back does and does not run.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import io
import json
import os
import secrets
import sys
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Union

import numpy as np
from lamina import ndarray as nd
from lamina.autograd import Tensor
from safetensors import SafetensorError, TensorSpec, deserialize, serialize, serialize_file

from ._errors import CheckpointError, StateDictError
from ._module import Module

__all__ = ["load", "save"]

_FORMAT = "lamina-checkpoint-2"
# The first format's checksum covers the arrays only (not the structure record).
_LEGACY_FORMAT = "lamina-checkpoint-1"

# Where a checkpoint goes or comes from: a path, or a binary file object.
Target = Union[str, "os.PathLike[str]", Any]


def save(obj: Any, f: Target) -> None:
    """Write ``obj`` (a state dict, an optimizer state dict, a dict of them, or a whole
    Module) to ``f``, a path or a binary file object.

    To a path, the file is written to a temporary file next to it (its name
    unique to this save, so concurrent saves to one path never share it),
    flushed to disk and renamed into place: an interrupted save never leaves
    a half-written checkpoint under the path, a failed one leaves no
    temporary file behind, and of concurrent saves the last rename wins
    whole. To a file object, the bytes go to ``f.write`` in one call.

    A whole Module is stored as its ``state_dict()``, its class path
    (``"package.module:QualName"``), its class tree and training flag, and
    its constructor arguments where they can be read back: every argument
    of the class's ``__init__`` (no ``*args``/``**kwargs``) must be kept on
    the module as an attribute of the same name holding plain values
    (numbers, strings, bools, None, tuples/lists of them), or be a bool
    ``bias``-like flag whose same-named parameter exists or is None (as
    ``Linear(..., bias=False)`` keeps it). ``Linear``, ``Conv2d``,
    ``BatchNorm1d``, ``LSTM`` and classes that keep their settings that way
    qualify; ``Sequential`` and a class that does not keep its arguments
    store the class path only, and :func:`load` then wants ``module=``.
    Nothing is pickled: unlike ``torch.save(model)``, arbitrary Python
    attributes (hooks, lambdas) are not stored.

    Args:
        obj: a Module, or nested dicts/lists/tuples of arrays, numbers,
            strings, bools and None.
        f: the file to write (conventionally ``*.safetensors``), or a
            binary file object with ``write``.

    Raises:
        FileNotFoundError: the folder of the path does not exist.
        TypeError: ``f`` is a text-mode file, or ``obj`` holds something
            a checkpoint cannot store.

    Example:
        >>> import io, numpy as np
        >>> buffer = io.BytesIO()
        >>> save({"w": np.ones(2, np.float32), "step": 3}, buffer)
        >>> sorted(load(io.BytesIO(buffer.getvalue()), as_numpy=True).items(), key=str)[1]
        ('w', array([1., 1.], dtype=float32))
    """
    tensors: dict[str, np.ndarray] = {}
    record = _module_record(obj, tensors) if isinstance(obj, Module) \
        else _encode(obj, (), tensors)
    tree = json.dumps(record)
    metadata = {"format": _FORMAT, "tree": tree,
                "sha256": _digest(tensors, _header(_FORMAT, tree))}
    if hasattr(f, "write"):
        _check_binary(f, "save", "wb")
        keep: list[np.ndarray] = []
        f.write(bytes(serialize(_specs(tensors, keep), metadata=metadata)))
        return
    _save_to_path(tensors, metadata, Path(f))


def _check_binary(f: Any, op: str, mode: str) -> None:
    if isinstance(f, io.TextIOBase) or "b" not in getattr(f, "mode", "b"):
        raise TypeError(f"{op}: {getattr(f, 'name', f)!r} is open in text mode; a checkpoint "
                        f"is binary: open it with mode '{mode}' or pass its path")


def _save_to_path(tensors: dict[str, np.ndarray], metadata: dict[str, str],
                  path: Path) -> None:
    if not path.parent.is_dir():
        raise FileNotFoundError(f"save: the folder of {path} does not exist")
    # In the same folder (a rename across file systems is not atomic); hidden,
    # so that a glob of *.safetensors never sees a half-written file.
    tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
    try:
        keep: list[np.ndarray] = []
        serialize_file(_specs(tensors, keep), str(tmp), metadata=metadata)
        _fsync(tmp)  # the data reaches the disk before the name points at it
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync(path.parent)  # and the rename itself survives a power cut


class BFloat16Values(np.ndarray):
    """A float32 array whose values are all bfloat16 values: stored as a BF16 entry."""


# safetensors' dtypes that numpy holds, read little-endian as the format stores them.
_NUMPY_DTYPES = {stored: np.dtype(name).newbyteorder("<") for stored, name in {
    "F64": "float64", "F32": "float32", "F16": "float16", "I64": "int64", "U64": "uint64",
    "I32": "int32", "U32": "uint32", "I16": "int16", "U16": "uint16", "I8": "int8",
    "U8": "uint8", "BOOL": "bool", "C64": "complex64"}.items()}


def _specs(tensors: Mapping[str, np.ndarray], keep: list[np.ndarray]) -> dict[str, Any]:
    """The writer's entries for ``tensors``; ``keep`` holds the memory they point at
    until the write is done."""
    specs = {}
    for name, array in tensors.items():
        if isinstance(array, BFloat16Values):
            # the values are bfloat16's, so each float32's top half is exactly its bits
            stored = (np.asarray(array).view(np.uint32) >> 16).astype("<u2")
            dtype = "bfloat16"
        else:
            stored = np.asarray(array, dtype=array.dtype.newbyteorder("<"), order="C")
            dtype = stored.dtype.name
        keep.append(stored)
        specs[name] = TensorSpec(dtype=dtype, shape=list(stored.shape),
                                 data_ptr=stored.ctypes.data, data_len=stored.nbytes)
    return specs


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
        if kind != "numpy" and obj.dtype.name == "bfloat16":
            array = array.view(BFloat16Values)  # .numpy() gave its exact float32 values
        name = ".".join(where) or "value"
        while name in tensors:
            name += "_"
        tensors[name] = array
        node = {"__array__": name, "kind": kind}
        if kind != "numpy" and obj.dtype.is_narrow:
            # the entry's dtype says it too; the record also makes checkpoints of
            # the F32-for-bfloat16 days load in their dtype
            node["dtype"] = obj.dtype.name
        return node
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
    if isinstance(obj, Module):
        raise TypeError(f"save: a {type(obj).__name__} module at '{'.'.join(where)}': store "
                        f"its .state_dict() there, or save the module on its own")
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


def load(f: Target, device: Any = None, as_numpy: bool = False,
         module: Module | Callable[[], Module] | None = None) -> Any:
    """Read a checkpoint written by :func:`save` (or any safetensors file) from ``f``,
    a path or a binary file object.

    A whole-Module checkpoint comes back as a Module, built one of three ways:

    * ``module=`` an instance: its state is loaded into it (strictly) and it
      is returned; ``module=`` a factory (a class or function taking no
      arguments): the same, into what it returns. The class path is not used.
    * otherwise, when the constructor arguments were stored: the stored class
      is looked up, built with them (the random generator's state is put
      back afterwards, so loading draws no random numbers), checked to have
      the saved class tree, settings and state keys and shapes, and given
      the saved state.
    * otherwise :class:`CheckpointError` asks for ``module=``.

    Loading never runs stored code: the class path is resolved only by
    importing an installed module by name (as ``import`` would) and looking
    the attribute up, and it is used only if it is a subclass of
    :class:`Module`; no ``eval``, no pickle. The module comes back in the
    saved training mode. ``module=`` also loads a plain state-dict
    checkpoint into that module and returns it.

    Args:
        f: the file, or a binary file object with ``read``.
        device: where loaded Tensors (and a rebuilt module) live; the default
            device (a rebuilt module: its saved ``device`` argument) when None.
        as_numpy: return every array as a numpy array instead of its saved
            kind; a whole-Module checkpoint then gives ``{"class", "args",
            "state_dict"}`` and builds nothing.
        module: the Module, or a factory of it, to load the state into.

    Returns:
        The saved object; a plain safetensors file gives a flat dict.

    Raises:
        FileNotFoundError: no such file.
        TypeError: ``f`` is a text-mode file; ``module`` is not a Module or a
            factory of one.
        CheckpointError: the file is truncated, corrupt, edited (its arrays or
            metadata do not match its checksum), or not safetensors; its class
            path is not an installed Module subclass; the rebuilt module does
            not match the saved one. Nothing is returned.

    Warns:
        UserWarning: the file predates the metadata checksum
            (``lamina-checkpoint-1``); it loads with its arrays verified.
    """
    metadata, tensors, source = _read(f)
    if metadata.get("format") not in (_FORMAT, _LEGACY_FORMAT):
        flat = {name: _restore(array, "numpy" if as_numpy else "tensor", device, name, source)
                for name, array in tensors.items()}
        return flat if module is None else _load_into(module, flat)
    _verify(metadata, tensors, source)
    try:
        tree = json.loads(metadata["tree"])
        obj = _decode_record(tree["__module__"], tensors, device, as_numpy, source) \
            if "__module__" in tree else _decode(tree, tensors, device, as_numpy, source)
    except RecursionError:
        # json.loads and _decode recurse once per level; a hostile file nests
        # deeper than Python's stack, which no checkpoint of ours does.
        raise CheckpointError(f"load: {source} has a damaged structure record: nested deeper "
                              f"than the interpreter's recursion limit") from None
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, CheckpointError):
            raise
        raise CheckpointError(f"load: {source} has a damaged structure record: {exc}") from exc
    if isinstance(obj, _Record):
        return obj.as_dict() if as_numpy else _build(obj, device, module, source)
    if module is None:
        return obj
    if not isinstance(obj, Mapping):
        raise TypeError(f"load: module= was given, but {source} holds a "
                        f"{type(obj).__name__}, not a state dict or a saved Module")
    return _load_into(module, obj)


def _read(f: Target) -> tuple[dict[str, str], dict[str, np.ndarray], str]:
    """The metadata, the arrays and a name for messages, from a path or a file object."""
    if hasattr(f, "read"):
        _check_binary(f, "load", "rb")
        source = repr(getattr(f, "name", f"<{type(f).__name__}>"))
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"load: {source}.read() gave {type(data).__name__}, not bytes; "
                            f"open the file with mode 'rb'")
    else:
        path = Path(f)
        if not path.is_file():
            raise FileNotFoundError(f"load: no such checkpoint: {path}")
        source, data = str(path), path.read_bytes()
    try:
        entries = deserialize(bytes(data))
        size = int.from_bytes(bytes(data[:8]), "little")
        header = json.loads(bytes(data[8:8 + size]))
    except (SafetensorError, ValueError, OverflowError) as exc:
        raise CheckpointError(f"load: {source} is not a readable safetensors checkpoint "
                              f"(truncated or corrupt?): {exc}") from exc
    tensors = {name: _array(name, entry, source) for name, entry in entries}
    return header.get("__metadata__") or {}, tensors, source


def _array(name: str, entry: dict[str, Any], source: str) -> np.ndarray:
    """One entry of ``deserialize`` as a numpy array (BF16: its float32 values)."""
    stored = entry["dtype"]
    if stored == "BF16":
        bits = np.frombuffer(entry["data"], "<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(entry["shape"]).view(BFloat16Values)
    if stored not in _NUMPY_DTYPES:
        raise CheckpointError(f"load: entry {name!r} of {source} is {stored}, which neither "
                              f"numpy nor Lamina holds")
    return np.frombuffer(entry["data"], _NUMPY_DTYPES[stored]).reshape(entry["shape"])


def _verify(metadata: dict[str, str], tensors: dict[str, np.ndarray], path: str) -> None:
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
            path: str) -> Any:
    if "__array__" in node:
        kind = "numpy" if as_numpy else node["kind"]
        return _restore(tensors[node["__array__"]], kind, device, node["__array__"], path,
                        node.get("dtype"))
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


def _restore(array: np.ndarray, kind: str, device: Any, name: str, path: str,
             dtype: str | None = None) -> Any:
    if kind == "numpy":
        return np.asarray(array)  # a bfloat16 entry: its float32 values
    if dtype is None and isinstance(array, BFloat16Values):
        dtype = "bfloat16"
    data = nd.array(np.asarray(array), dtype=dtype, device=device) if dtype is not None \
        else nd.array(_lossless(array, name, path), device=device)
    return data if kind == "ndarray" else Tensor(data)


def _lossless(array: np.ndarray, name: str, path: str) -> np.ndarray:
    """``array`` in the Lamina dtype that holds each of its values exactly."""
    kind, size = array.dtype.kind, array.dtype.itemsize
    if kind == "f":
        return array  # float16, float32, float64
    if kind == "b":
        return array  # a mask stays a mask: as int64, x[mask] would gather rows
    if (kind in "iu" and size < 8) or array.dtype == np.int64:
        return array.astype(np.int64)
    if array.dtype == np.uint64 and (array.size == 0 or int(array.max()) < 2**63):
        return array.astype(np.int64)
    why = ("has values of 2**63 or more, which int64 cannot hold" if kind == "u"
           else "has no Lamina dtype (float16, bfloat16, float32, float64, int64, bool)")
    raise CheckpointError(f"load: entry {name!r} of {path} is {array.dtype.name} and {why}; "
                          "load it with as_numpy=True to get the stored values")


# ------------------------------------------------------------------ whole modules
_BUILD_HINT = ("pass module=YourModel(...) (or a factory returning one) to nn.load to load "
               "the saved state into it")


def _class_path(cls: type) -> str:
    return f"{cls.__module__}:{cls.__qualname__}"


def _module_record(model: Module, tensors: dict[str, np.ndarray]) -> dict[str, Any]:
    """The structure record of a whole module; its state's arrays go to ``tensors``."""
    args = _constructor_args(model)
    return {"__module__": {
        "class": _class_path(type(model)),
        "args": None if args is None else _encode(args, ("__args__",), tensors),
        "tree": [[name, _class_path(type(m))] for name, m in model.named_modules()],
        "training": model.training,
        "state": _encode(model.state_dict(), (), tensors)}}


def _constructor_args(model: Module) -> dict[str, Any] | None:
    """The arguments that rebuild ``model``'s class, read from its attributes; None
    where any one cannot be read back exactly (see :func:`save`)."""
    try:
        signature = inspect.signature(type(model).__init__)
    except (TypeError, ValueError):
        return None
    params = model.__dict__.get("_parameters", {})
    registered = [model.__dict__.get(t, {}) for t in ("_parameters", "_buffers", "_modules")]
    args: dict[str, Any] = {}
    for p in list(signature.parameters.values())[1:]:
        if p.kind not in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY):
            return None  # *args, **kwargs or positional-only: not rebuildable by name
        if isinstance(p.default, bool) and p.name in params:
            args[p.name] = params[p.name] is not None  # Linear(..., bias=False)
            continue
        value = model.__dict__.get(p.name, _MISSING)
        if value is _MISSING and p.name in ("device", "dtype"):
            value = _placement(model, p.name)  # kept on the tensors, not as attributes
            if value is _MISSING:
                continue  # no tensors: the default builds the same module
        if value is _MISSING or any(p.name in table for table in registered) \
                or not _plain(value):
            return None
        args[p.name] = value
    return args


def _placement(model: Module, name: str) -> Any:
    """The device or the (floating) dtype of ``model``'s first tensor, as a string; a
    model whose tensors differ in it fails the state check in :func:`_build`."""
    for tensor in model.state_dict().values():
        if name == "device":
            return str(tensor.device)
        if tensor.dtype.is_floating:
            return str(tensor.dtype.name)
    return _MISSING


_MISSING = object()


def _plain(value: Any) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    return isinstance(value, (tuple, list)) and all(_plain(v) for v in value)


class _Record:
    """A decoded whole-module record (nothing built yet)."""

    def __init__(self, node: dict[str, Any], args: dict[str, Any] | None,
                 state: dict[str, Any]) -> None:
        self.cls, self.args, self.state = node["class"], args, state
        self.tree = [tuple(item) for item in node["tree"]]
        self.training = bool(node["training"])
        if not isinstance(self.cls, str) or not isinstance(state, dict) \
                or not (args is None or isinstance(args, dict)):
            raise TypeError("the module record has the wrong shape")

    def as_dict(self) -> dict[str, Any]:
        return {"class": self.cls, "args": self.args, "state_dict": self.state}


def _decode_record(node: dict[str, Any], tensors: dict[str, np.ndarray], device: Any,
                   as_numpy: bool, source: str) -> _Record:
    args = None if node["args"] is None else _decode(node["args"], tensors, None, True, source)
    return _Record(node, args, _decode(node["state"], tensors, device, as_numpy, source))


def _build(record: _Record, device: Any, module: Any, source: str) -> Module:
    """The saved module: ``module`` (or what it makes), or the stored class rebuilt."""
    if module is not None:
        model = _load_into(module, record.state)
        return model.train(record.training)
    what = f"{source} holds a whole {record.cls}"
    if record.args is None:
        raise CheckpointError(f"load: {what} whose constructor arguments could not be "
                              f"stored (see nn.save); {_BUILD_HINT}")
    cls = _resolve(record.cls, source)
    args = dict(record.args)
    if device is not None and "device" in args:
        args["device"] = device
    try:
        model = _keeping_rng(lambda: cls(**args))
    except (TypeError, ValueError) as exc:
        raise CheckpointError(f"load: {what}, which its stored arguments {record.args} do not "
                              f"build ({exc}); {_BUILD_HINT}") from exc
    built = [(name, _class_path(type(m))) for name, m in model.named_modules()]
    again = _constructor_args(model) or {}  # what saving the rebuilt module would store
    changed = [k for k, v in record.args.items()
               if k != "device" and again.get(k, _MISSING) != v]
    if built != record.tree or changed:
        raise CheckpointError(f"load: {what}, but {record.cls}(**{record.args}) builds a "
                              f"different module (class tree or settings {changed} differ); "
                              f"{_BUILD_HINT}")
    saved = {k: (str(v.dtype.name) if isinstance(v, Tensor) else str(v.dtype))
             for k, v in record.state.items()}
    dtypes = {k: str(v.dtype.name) for k, v in model.state_dict().items()}
    try:
        if dtypes != saved:
            raise StateDictError(type(model).__name__, [], [], [
                f"{k}: dtype {saved.get(k)} in the checkpoint, {dtypes.get(k)} in the model"
                for k in sorted(set(saved) | set(dtypes)) if saved.get(k) != dtypes.get(k)])
        model.load_state_dict(record.state)
    except StateDictError as exc:
        raise CheckpointError(f"load: {what}, but the rebuilt module does not take the "
                              f"saved state: {exc}; {_BUILD_HINT}") from exc
    return model.train(record.training)


def _load_into(module: Any, state: Mapping[str, Any]) -> Module:
    """Load ``state`` into ``module``, or into what the factory ``module`` returns."""
    model = module if isinstance(module, Module) else \
        _keeping_rng(module) if callable(module) else None
    if not isinstance(model, Module):
        raise TypeError(f"load: module= must be a Module or a factory returning one, got "
                        f"{type(model if callable(module) else module).__name__}")
    model.load_state_dict(state)
    return model


def _keeping_rng(make: Callable[[], Any]) -> Any:
    """``make()`` with the global generator's state put back: building a model to load
    weights into must not shift the random numbers drawn after the load."""
    bits = nd.generator().bit_generator
    state = bits.state
    try:
        return make()
    finally:
        bits.state = state


def _resolve(path: str, source: str) -> type[Module]:
    """The installed Module subclass named ``package.module:QualName``; nothing is called."""
    modname, _, qualname = path.partition(":")
    parts = modname.split(".") + qualname.split(".")
    if not qualname or not all(part.isidentifier() for part in parts):
        raise CheckpointError(f"load: {source} names the class {path!r}, which is not a "
                              f"'package.module:QualName' path; {_BUILD_HINT}")
    try:
        found: Any = sys.modules.get(modname) or importlib.import_module(modname)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as exc:
        raise CheckpointError(f"load: {source} names the class {path!r}, which is not "
                              f"installed here ({exc}); {_BUILD_HINT}") from exc
    if not (isinstance(found, type) and issubclass(found, Module)):
        raise CheckpointError(f"load: {source} names {path!r}, which is a "
                              f"{type(found).__name__}, not a lamina.nn.Module subclass; "
                              f"refusing to call it")
    return found
