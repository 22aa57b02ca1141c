"""Module: the base class of layers and models, with ordered registration.

Assigning a Parameter, a Module or (through ``register_buffer``) a buffer to
an attribute records it in insertion order; ``named_parameters``,
``state_dict`` and ``repr`` walk the tree in that order, like PyTorch. The
tables ``_parameters``, ``_buffers`` and ``_modules`` may also be written
directly (``m._parameters["w"] = p``, ``del m._buffers["b"]``), as PyTorch
code does; attribute access follows.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from lamina.autograd import Tensor
from lamina.autograd._compile import note_assignment

from ._errors import StateDictError
from ._parameter import Parameter, as_array, assign_array

__all__ = ["IncompatibleKeys", "Module"]


class IncompatibleKeys(NamedTuple):
    """What ``load_state_dict(strict=False)`` did not match."""

    missing_keys: list[str]
    unexpected_keys: list[str]


_MISSING: Any = object()


class _Registry(OrderedDict[str, Any]):
    """A Module's table of parameters, buffers or submodules.

    An ordered dict whose every write also updates the owner's attribute mirror
    (see ``Module._register``), so that writing the table directly, as PyTorch
    code does, is the same as registering through the Module. It holds its owner
    weakly: a Module and its tables form no reference cycle.
    """

    def __init__(self, owner: Module | None = None) -> None:
        super().__init__()
        self._owner = None if owner is None else weakref.ref(owner)

    def _changed(self, name: str, old: Any) -> None:
        note_assignment()  # compiled functions must not replay with the old entry
        owner = None if self._owner is None else self._owner()
        if owner is not None:
            owner._mirror(name, old)

    def __setitem__(self, name: str, value: Any) -> None:
        old = self.get(name, _MISSING)
        super().__setitem__(name, value)
        self._changed(name, old)

    def __delitem__(self, name: str) -> None:
        old = self[name]
        super().__delitem__(name)
        self._changed(name, old)

    def pop(self, name: str, default: Any = _MISSING) -> Any:
        if name not in self:
            if default is _MISSING:
                raise KeyError(name)
            return default
        value = self[name]
        del self[name]
        return value

    def popitem(self, last: bool = True) -> tuple[str, Any]:
        if not self:
            raise KeyError("popitem(): the table is empty")
        name = next(reversed(self)) if last else next(iter(self))
        return name, self.pop(name)

    def setdefault(self, name: str, default: Any = None) -> Any:
        if name not in self:
            self[name] = default
        return self[name]

    def update(self, *args: Any, **kwargs: Any) -> None:
        for name, value in dict(*args, **kwargs).items():
            self[name] = value

    def clear(self) -> None:
        for name in list(self):
            del self[name]

    def __reduce__(self) -> Any:
        # Copies and pickles leave the owner out (a weakref does not pickle, and a
        # copy must not write into the original); Module.__setstate__ rebinds them.
        return type(self), (), None, None, iter(list(self.items()))

    def __repr__(self) -> str:
        return repr(dict(self))


_TABLES = ("_parameters", "_buffers", "_modules")  # PyTorch's __getattr__ order


class Module:
    """Base class for every layer and model.

    Subclasses call ``super().__init__()`` first, assign parameters and
    submodules as attributes, and define ``forward``. Calling the module
    runs ``forward``.

    Example:
        >>> from lamina import nn
        >>> class Net(nn.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.fc = nn.Linear(4, 2)
        ...     def forward(self, x):
        ...         return self.fc(x).relu()
        >>> [name for name, _ in Net().named_parameters()]
        ['fc.weight', 'fc.bias']
    """

    training: bool

    def __init__(self) -> None:
        for table in _TABLES:
            object.__setattr__(self, table, _Registry(self))
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "training", True)

    def __setstate__(self, state: dict[str, Any]) -> None:
        # Unpickling and copy.(deep)copy: give the new tables this module as owner.
        self.__dict__.update(state)
        for table in _TABLES:
            entries = self.__dict__.get(table)
            if entries is not None:
                fresh = _Registry(self)
                for name, value in entries.items():  # the mirror came with the state
                    OrderedDict.__setitem__(fresh, name, value)
                self.__dict__[table] = fresh

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise TypeError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------ registration
    def _registry(self) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        try:
            return self.__dict__["_parameters"], self.__dict__["_buffers"], \
                self.__dict__["_modules"]
        except KeyError:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before "
                                 f"assigning attributes") from None

    def __setattr__(self, name: str, value: Any) -> None:
        params, buffers, modules = self._registry()
        if isinstance(value, Parameter):
            self._forget(name)
            self._register(params, name, value)
        elif isinstance(value, Module):
            self._forget(name)
            self._register(modules, name, value)
        elif name in params:
            if value is not None:
                raise TypeError(f"{type(self).__name__}: cannot assign {type(value).__name__} "
                                f"to parameter '{name}' (a Parameter or None is expected)")
            self._register(params, name, None)
        elif name in modules:
            if value is not None:
                raise TypeError(f"{type(self).__name__}: cannot assign {type(value).__name__} "
                                f"to submodule '{name}' (a Module or None is expected)")
            self._register(modules, name, None)
        elif name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"{type(self).__name__}: cannot assign {type(value).__name__} "
                                f"to buffer '{name}' (a Tensor or None is expected)")
            self._register(buffers, name, value)
        else:
            object.__setattr__(self, name, value)

    def _register(self, table: dict[str, Any], name: str, value: Any) -> None:
        # The entry is mirrored in the instance dict, so that ``self.weight`` in a
        # forward is an ordinary attribute read, not a __getattr__ call per access;
        # the table (a _Registry) keeps the mirror on every write, see _mirror.
        table[name] = value

    def _mirror(self, name: str, old: Any) -> None:
        """Make ``self.<name>`` show what PyTorch's ``__getattr__`` would find after
        the table entry ``name`` changed from ``old`` (``_MISSING``: it was absent)."""
        attrs = self.__dict__
        tables = [attrs[t] for t in _TABLES if t in attrs]
        current = attrs.get(name, _MISSING)
        if current is not _MISSING and current is not old \
                and not any(t.get(name, _MISSING) is current for t in tables):
            return  # a plain attribute, which wins over the tables as in PyTorch
        for table in tables:
            if name in table:
                attrs[name] = table[name]
                return
        attrs.pop(name, None)

    def _forget(self, name: str) -> None:
        for table in self._registry():
            table.pop(name, None)
        self.__dict__.pop(name, None)
        self._non_persistent.discard(name)

    def __getattr__(self, name: str) -> Any:
        for table in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in self._registry():
            if name in table:
                del table[name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        params, buffers, modules = self._registry()
        return sorted(set(super().__dir__()) | set(params) | set(buffers) | set(modules))

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a None placeholder) under ``name``."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: '{name}' must be a Parameter or None, "
                            f"got {type(param).__name__}")
        self._check_name(name)
        self._forget(name)
        self._register(self._parameters, name, param)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a buffer: state that is not trained (e.g. BatchNorm's running mean).

        Args:
            name: attribute name.
            tensor: the buffer, or None.
            persistent: include it in ``state_dict``.
        """
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"register_buffer: '{name}' must be a Tensor or None, "
                            f"got {type(tensor).__name__}")
        self._check_name(name)
        self._forget(name)
        self._register(self._buffers, name, tensor)
        if not persistent:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a submodule (or a None placeholder) under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: '{name}' must be a Module or None, "
                            f"got {type(module).__name__}")
        self._check_name(name)
        self._forget(name)
        self._register(self._modules, name, module)

    register_module = add_module

    def _check_name(self, name: str) -> None:
        self._registry()
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"{type(self).__name__}: invalid name {name!r} (a non-empty string "
                           f"without '.' is expected)")

    # -------------------------------------------------------------- traversal
    def named_modules(self, prefix: str = "", memo: set[int] | None = None
                      ) -> Iterator[tuple[str, Module]]:
        """This module and every descendant, depth first, each once."""
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                yield from child.named_modules(f"{prefix}.{name}" if prefix else name, memo)

    def modules(self) -> Iterator[Module]:
        """This module and every descendant."""
        for _, module in self.named_modules():
            yield module

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """The direct submodules with their names."""
        for name, child in self._modules.items():
            if child is not None:
                yield name, child

    def children(self) -> Iterator[Module]:
        """The direct submodules."""
        for _, child in self.named_children():
            yield child

    def _named_members(self, table: str, prefix: str, recurse: bool
                       ) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        modules = self.named_modules(prefix) if recurse else iter([(prefix, self)])
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True
                         ) -> Iterator[tuple[str, Parameter]]:
        """Every parameter with its dotted name, shared ones once."""
        yield from self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Every parameter, in registration order (pass these to an optimizer)."""
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True
                      ) -> Iterator[tuple[str, Tensor]]:
        """Every buffer with its dotted name."""
        yield from self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        """Every buffer."""
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    # ------------------------------------------------------------------ modes
    def train(self, mode: bool = True) -> Module:
        """Set training mode (dropout active, batch statistics) here and below."""
        if not isinstance(mode, bool):
            raise TypeError(f"train: mode must be a bool, got {type(mode).__name__}")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode; the same as ``train(False)``."""
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset every parameter's gradient (to None, or to zeros)."""
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                param.grad = param.grad.detach() * 0.0

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule (children first) and then on this one."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def to(self, device: Any = None, dtype: Any = None) -> Module:
        """Move (and/or cast floating) parameters and buffers in place.

        Args:
            device: target device, e.g. ``"cpu"`` or ``"cuda"``.
            dtype: target floating dtype; integer buffers keep theirs.
        """
        for module in self.modules():
            for table in (module._parameters, module._buffers):
                for value in table.values():
                    if value is not None:
                        _move(value, device, dtype)
        return self

    def half(self) -> Module:
        """Cast floating parameters and buffers to float16 in place (``to(dtype=...)``)."""
        return self.to(dtype="float16")

    def bfloat16(self) -> Module:
        """Cast floating parameters and buffers to bfloat16 in place."""
        return self.to(dtype="bfloat16")

    def float(self) -> Module:
        """Cast floating parameters and buffers to float32 in place."""
        return self.to(dtype="float32")

    def double(self) -> Module:
        """Cast floating parameters and buffers to float64 in place."""
        return self.to(dtype="float64")

    def num_parameters(self) -> int:
        """The number of trainable scalars."""
        return sum(p._data.size for p in self.parameters())

    # ------------------------------------------------------------- state dict
    def state_dict(self, prefix: str = "") -> OrderedDict[str, Tensor]:
        """Parameters and persistent buffers by dotted name, detached.

        The values share storage with the module, as in PyTorch: optimizer
        steps and ``load_state_dict`` write into that storage, so the dict
        follows them. Save it with ``lamina.nn.save``, or clone its values,
        to keep a snapshot.
        """
        out: OrderedDict[str, Tensor] = OrderedDict()
        for module_prefix, module in self.named_modules(prefix):
            for name, value in module._parameters.items():
                if value is not None:
                    out[_join(module_prefix, name)] = value.detach()
            for name, value in module._buffers.items():
                if value is not None and name not in module._non_persistent:
                    out[_join(module_prefix, name)] = value.detach()
        return out

    def _state_targets(self) -> OrderedDict[str, Tensor]:
        targets: OrderedDict[str, Tensor] = OrderedDict()
        for module_prefix, module in self.named_modules():
            for name, value in module._parameters.items():
                if value is not None:
                    targets[_join(module_prefix, name)] = value
            for name, value in module._buffers.items():
                if value is not None and name not in module._non_persistent:
                    targets[_join(module_prefix, name)] = value
        return targets

    def load_state_dict(self, state_dict: Mapping[str, Any], strict: bool = True
                        ) -> IncompatibleKeys:
        """Copy values from ``state_dict`` into parameters and buffers.

        Every key is checked before anything is copied: missing keys,
        unexpected keys and shape mismatches are collected and raised at once,
        leaving the module untouched. The values are written in place, as an
        optimizer step writes them: a graph recorded before the load refuses
        to backward (its saved parameters changed) instead of mixing weights.

        Args:
            state_dict: name -> Tensor or numpy array.
            strict: missing and unexpected keys are errors (shape mismatches
                always are).

        Returns:
            The missing and unexpected keys (empty lists when strict).

        Raises:
            StateDictError: lists every missing, unexpected and mis-shaped key.
        """
        targets = self._state_targets()
        missing = [k for k in targets if k not in state_dict]
        unexpected = [k for k in state_dict if k not in targets]
        arrays, problems = {}, []
        for key, target in targets.items():
            if key not in state_dict:
                continue
            try:
                value = as_array(state_dict[key], target)
            except (TypeError, ValueError) as exc:
                problems.append(f"{key}: {exc}")
                continue
            if tuple(value.shape) != tuple(target.shape):
                problems.append(f"{key}: shape {tuple(value.shape)} in the checkpoint, "
                                f"{tuple(target.shape)} in the model")
            arrays[key] = value
        if problems or (strict and (missing or unexpected)):
            raise StateDictError(type(self).__name__, missing if strict else [],
                                 unexpected if strict else [], problems)
        for key, value in arrays.items():
            assign_array(targets[key], value)
        return IncompatibleKeys(missing, unexpected)

    # ------------------------------------------------------------------- repr
    def extra_repr(self) -> str:
        """One line of settings shown inside this module's repr."""
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, child in self._modules.items():
            text = repr(child).replace("\n", "\n  ")
            lines.append(f"({name}): {text}")
        extra = self.extra_repr()
        if not lines and "\n" not in extra:
            return f"{type(self).__name__}({extra})"
        # A multi-line extra_repr (ParameterList's entries) is indented line by line.
        body = "".join(f"\n  {line}" for line in (extra.split("\n") if extra else []) + lines)
        return f"{type(self).__name__}({body}\n)"


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _move(tensor: Tensor, device: Any, dtype: Any) -> None:
    data = tensor._data
    if dtype is not None and data.dtype.is_floating:
        data = data.astype(dtype)
    if device is not None:
        data = data.to(device)
    if data is not tensor._data:
        tensor._data = data
        if tensor.grad is not None:
            grad = tensor.grad._data
            tensor.grad = Tensor(grad.astype(data.dtype).to(data.device))
