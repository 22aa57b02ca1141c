"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from lamina.autograd import Tensor

from ._module import Module
from ._parameter import Parameter

__all__ = ["ModuleDict", "ModuleList", "ParameterDict", "ParameterList", "Sequential"]


class Sequential(Module):
    """Run modules one after another; ``Sequential(a, b)(x) == b(a(x))``.

    Args:
        *modules: the modules, named "0", "1", ...; or one OrderedDict of
            name -> module.

    Example:
        >>> from lamina import nn
        >>> net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
        >>> len(net), type(net[1]).__name__
        (3, 'ReLU')
    """

    def __init__(self, *modules: Module | Mapping[str, Module]) -> None:
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], Mapping):
            for name, module in modules[0].items():
                self.add_module(name, module)
        else:
            for i, entry in enumerate(modules):
                if not isinstance(entry, Module):
                    raise TypeError(f"Sequential: expected Modules, got {type(entry).__name__}")
                self.add_module(str(i), entry)

    def forward(self, x: Any) -> Any:
        for module in self._modules.values():
            x = module(x)
        return x

    def __getitem__(self, index: int | slice) -> Any:
        items = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(items[index]))
        return items[_index(index, len(items), "Sequential")][1]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules, registered so their parameters are found.

    Args:
        modules: initial modules.
    """

    def __init__(self, modules: Iterable[Module] = ()) -> None:
        super().__init__()
        for module in modules:
            self.append(module)

    def __getitem__(self, index: int | slice) -> Any:
        values = list(self._modules.values())
        if isinstance(index, slice):
            return ModuleList(values[index])
        return values[_index(index, len(values), "ModuleList")]

    def __setitem__(self, index: int, module: Module) -> None:
        if not isinstance(module, Module):
            raise TypeError(f"ModuleList: can only hold Modules, got {type(module).__name__}")
        self._register(self._modules, str(_index(index, len(self), "ModuleList")), module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(list(self._modules.values()))

    def append(self, module: Module) -> ModuleList:
        """Add ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> ModuleList:
        """Add every module of ``modules`` at the end."""
        for module in modules:
            self.append(module)
        return self


class ModuleDict(Module):
    """An ordered dict of modules, registered so their parameters are found.

    Args:
        modules: initial name -> module entries.
    """

    def __init__(self, modules: Mapping[str, Module] | None = None) -> None:
        super().__init__()
        for name, module in (modules or {}).items():
            self[name] = module

    def __getitem__(self, name: str) -> Module:
        return self._modules[name]

    def __setitem__(self, name: str, module: Module) -> None:
        self.add_module(name, module)

    def __delitem__(self, name: str) -> None:
        del self._modules[name]
        self.__dict__.pop(name, None)  # the mirror kept by Module._register

    def __contains__(self, name: object) -> bool:
        return name in self._modules

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._modules))

    def keys(self) -> list[str]:
        """The names, in insertion order."""
        return list(self._modules)

    def values(self) -> list[Module]:
        """The modules, in insertion order."""
        return list(self._modules.values())

    def items(self) -> list[tuple[str, Module]]:
        """(name, module) pairs, in insertion order."""
        return list(self._modules.items())


class ParameterList(Module):
    """A list of parameters, registered as "0", "1", ... so modules and optimizers find them.

    A Tensor that is not a Parameter is wrapped in one, as in PyTorch; other
    objects are kept as plain entries.

    Args:
        values: initial entries.

    Example:
        >>> from lamina import autograd, nn
        >>> params = nn.ParameterList([nn.Parameter(autograd.zeros(2)) for _ in range(3)])
        >>> list(params.state_dict())
        ['0', '1', '2']
    """

    def __init__(self, values: Iterable[Any] | None = None) -> None:
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return type(self)(list(self)[index])
        return getattr(self, str(_index(index, self._size, "ParameterList")))

    def __setitem__(self, index: int, value: Any) -> None:
        _set_entry(self, str(_index(index, self._size, "ParameterList")), value)

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[Any]:
        return iter([self[i] for i in range(self._size)])

    def __iadd__(self, values: Iterable[Any]) -> ParameterList:
        return self.extend(values)

    def append(self, value: Any) -> ParameterList:
        """Add ``value`` at the end."""
        self._size += 1
        _set_entry(self, str(self._size - 1), value)
        return self

    def extend(self, values: Iterable[Any]) -> ParameterList:
        """Add every entry of ``values`` at the end."""
        if isinstance(values, (str, Tensor)) or not isinstance(values, Iterable):
            raise TypeError(f"ParameterList.extend: expected an iterable of parameters, "
                            f"got {type(values).__name__}")
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(f"  ({i}): {_describe(p)}" for i, p in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of parameters, registered under their keys.

    Like PyTorch: a Tensor that is not a Parameter is wrapped in one; a plain
    ``dict`` passed to the constructor or ``update`` is added in sorted key
    order, an OrderedDict, ParameterDict or sequence of pairs in its own order.

    Args:
        parameters: initial key -> parameter entries.

    Example:
        >>> from lamina import autograd, nn
        >>> params = nn.ParameterDict({"scale": nn.Parameter(autograd.ones(3))})
        >>> list(params.state_dict()), "scale" in params
        (['scale'], True)
    """

    def __init__(self, parameters: Any = None) -> None:
        super().__init__()
        self._keys: dict[str, None] = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str) -> Any:
        if key not in self._keys:
            raise KeyError(key)
        return self.__dict__[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"ParameterDict: keys must be strings, got {type(key).__name__}")
        _set_entry(self, key, value)
        self._keys[key] = None

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._keys))

    def __reversed__(self) -> Iterator[str]:
        return reversed(list(self._keys))

    def keys(self) -> list[str]:
        """The keys, in insertion order."""
        return list(self._keys)

    def values(self) -> list[Any]:
        """The entries, in insertion order."""
        return [self[k] for k in self._keys]

    def items(self) -> list[tuple[str, Any]]:
        """(key, entry) pairs, in insertion order."""
        return [(k, self[k]) for k in self._keys]

    def get(self, key: str, default: Any = None) -> Any:
        """The entry under ``key``, or ``default``."""
        return self[key] if key in self._keys else default

    def pop(self, key: str) -> Any:
        """Remove ``key`` and return its entry."""
        value = self[key]
        del self[key]
        return value

    def setdefault(self, key: str, default: Any = None) -> Any:
        """The entry under ``key``, set to ``default`` first when missing."""
        if key not in self._keys:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        """Remove every entry."""
        for key in list(self._keys):
            del self[key]

    def update(self, parameters: Any) -> None:
        """Add or overwrite entries from a mapping or an iterable of (key, value) pairs."""
        if isinstance(parameters, (OrderedDict, ParameterDict)):
            pairs = list(parameters.items())
        elif isinstance(parameters, Mapping):
            pairs = sorted(parameters.items())
        elif isinstance(parameters, Iterable) and not isinstance(parameters, (str, Tensor)):
            pairs = [_pair(j, entry) for j, entry in enumerate(parameters)]
        else:
            raise TypeError(f"ParameterDict.update: expected a mapping or an iterable of "
                            f"(key, value) pairs, got {type(parameters).__name__}")
        for key, value in pairs:
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(f"  ({k}): {_describe(v)}" for k, v in self.items())


def _set_entry(owner: Module, name: str, value: Any) -> None:
    """Register ``value`` under ``name``: a Tensor as a Parameter, anything else as is.

    An existing parameter is replaced where it stands, so the order of
    ``parameters()`` stays the order of the entries.
    """
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        value = Parameter(value)
    if isinstance(value, Parameter) and name in owner._parameters:
        owner._register(owner._parameters, name, value)
    elif isinstance(value, Parameter):
        owner.register_parameter(name, value)
    else:
        setattr(owner, name, value)


def _pair(j: int, entry: Any) -> tuple[str, Any]:
    if not isinstance(entry, (tuple, list)) or len(entry) != 2:
        raise ValueError(f"ParameterDict.update: sequence element #{j} must be a (key, value) "
                         f"pair, got {entry!r}")
    return entry[0], entry[1]


def _describe(value: Any) -> str:
    """PyTorch's one-line summary of a container entry."""
    if not isinstance(value, Tensor):
        return f"Object of type: {type(value).__name__}"
    size = "x".join(str(s) for s in value.shape)
    device = f" ({value.device})" if value.device.type == "cuda" else ""
    kind = "Parameter" if isinstance(value, Parameter) else "Tensor"
    return f"{kind} containing: [{value.dtype} of size {size}{device}]"


def _index(index: int, length: int, owner: str) -> int:
    if not -length <= index < length:
        raise IndexError(f"{owner}: index {index} out of range for length {length}")
    return index % length
