"""Containers: Sequential, ModuleList, ModuleDict."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ._module import Module

__all__ = ["ModuleDict", "ModuleList", "Sequential"]


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


def _index(index: int, length: int, owner: str) -> int:
    if not -length <= index < length:
        raise IndexError(f"{owner}: index {index} out of range for length {length}")
    return index % length
