"""Optimizer: parameter groups, per-parameter state, zero_grad, state dicts.

Subclasses implement ``_update(param, grad, group, state)``, working on
NDArrays (``param._data``, ``param.grad._data``) and returning the parameter's
new value: an update records no graph. ``step`` writes that value into the
parameter's storage in place, as PyTorch's optimizers do: views of the
parameter see it, and its version counter records the change (a graph that
saved the old value then refuses to backward instead of using the new one).
An update may also write into ``param._data`` itself (``p -= lr * g``) and
return it: then no copy is made.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, MutableMapping
from typing import Any

from lamina import autograd
from lamina import ndarray as nd
from lamina.autograd import Tensor
from lamina.nn._parameter import assign_array

__all__ = ["Optimizer", "ParamState"]


class ParamState(MutableMapping[Tensor, dict[str, Any]]):
    """Per-parameter state, keyed by the parameter object itself (by identity)."""

    def __init__(self) -> None:
        self._entries: dict[int, tuple[Tensor, dict[str, Any]]] = {}

    def __getitem__(self, param: Tensor) -> dict[str, Any]:
        return self._entries[id(param)][1]

    def __setitem__(self, param: Tensor, value: dict[str, Any]) -> None:
        self._entries[id(param)] = (param, value)

    def __delitem__(self, param: Tensor) -> None:
        del self._entries[id(param)]

    def __contains__(self, param: object) -> bool:
        return id(param) in self._entries

    def __iter__(self) -> Iterator[Tensor]:
        return iter([p for p, _ in self._entries.values()])

    def __len__(self) -> int:
        return len(self._entries)


class Optimizer:
    """Base class of optimizers.

    Args:
        params: an iterable of Tensors, or of dicts each with ``"params"``
            and per-group hyperparameters overriding ``defaults``.
        defaults: the optimizer's hyperparameters.
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict[str, Any]] = []
        self.state = ParamState()
        entries = list(params)
        if not entries:
            raise ValueError(f"{type(self).__name__}: got an empty parameter list")
        if not isinstance(entries[0], dict):
            entries = [{"params": entries}]
        for group in entries:
            self.add_param_group(group)

    def _validate(self, group: dict[str, Any]) -> None:
        """Raise ValueError for an out-of-range hyperparameter in ``group``."""

    def add_param_group(self, group: dict[str, Any]) -> None:
        """Add a group of parameters with its own hyperparameters."""
        if not isinstance(group, dict) or "params" not in group:
            raise TypeError(f"{type(self).__name__}: a parameter group is a dict with a "
                            f"'params' entry")
        params = group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{type(self).__name__}: can only optimize Tensors, "
                                f"got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"{type(self).__name__}: can't optimize a non-leaf Tensor "
                                 f"(shape {tuple(p.shape)})")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params) or len({id(p) for p in params}) != len(params):
            raise ValueError(f"{type(self).__name__}: some parameters appear in more than "
                             f"one parameter group")
        full = {**self.defaults, **group, "params": params}
        self._validate(full)
        self.param_groups.append(full)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every optimized parameter (to None, or zeros)."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    if set_to_none:
                        p.grad = None
                    else:
                        p.grad.zero_()

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient.

        Args:
            closure: re-evaluates the model and returns the loss (optional).

        Returns:
            The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with autograd.enable_grad():
                loss = closure()
        with autograd.no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if p not in self.state:
                        self.state[p] = {}
                    assign_array(p, self._update(p, p.grad._data, group, self.state[p]))
        return loss

    def _update(self, param: Tensor, grad: nd.NDArray, group: dict[str, Any],
                state: dict[str, Any]) -> nd.NDArray:
        raise TypeError(f"{type(self).__name__} does not define _update()")

    # ------------------------------------------------------------- state dict
    def state_dict(self) -> dict[str, Any]:
        """``{"state": {index: {name: value}}, "param_groups": [...]}`` like PyTorch.

        Parameters are numbered across groups in order; arrays are NDArrays.
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore hyperparameters and state saved by :meth:`state_dict`.

        Everything is checked before anything changes.

        Raises:
            ValueError: the groups or their sizes differ, or a state array's
                shape differs from its parameter's.
        """
        groups = state_dict.get("param_groups")
        if not isinstance(groups, list) or len(groups) != len(self.param_groups):
            raise ValueError(f"{type(self).__name__}.load_state_dict: the saved state has "
                             f"{len(groups) if isinstance(groups, list) else 'no'} parameter "
                             f"groups, this optimizer {len(self.param_groups)}")
        params: dict[int, Tensor] = {}
        for i, (saved, group) in enumerate(zip(groups, self.param_groups)):
            if len(saved["params"]) != len(group["params"]):
                raise ValueError(f"{type(self).__name__}.load_state_dict: group {i} has "
                                 f"{len(saved['params'])} saved parameters, "
                                 f"{len(group['params'])} here")
            params.update({int(k): p for k, p in zip(saved["params"], group["params"])})
        new_state, problems = ParamState(), []
        for key, entries in state_dict.get("state", {}).items():
            param = params.get(int(key))
            if param is None:
                problems.append(f"state for unknown parameter index {key}")
                continue
            new_state[param] = {name: _restore(value, param, f"{key}.{name}", problems)
                                for name, value in entries.items()}
        merged = [{**group, **{k: _plain(v) for k, v in saved.items() if k != "params"}}
                  for saved, group in zip(groups, self.param_groups)]
        for i, group in enumerate(merged):
            try:
                self._validate(group)  # a checkpoint may carry lr=nan too
            except ValueError as exc:
                problems.append(f"group {i}: {exc}")
        if problems:
            raise ValueError(f"{type(self).__name__}.load_state_dict: nothing was loaded:\n  "
                             + "\n  ".join(problems))
        for group, new in zip(self.param_groups, merged):
            group.update(new)
        self.state = new_state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines + [")"])


def _plain(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def _restore(value: Any, param: Tensor, where: str, problems: list[str]) -> Any:
    if isinstance(value, Tensor):
        value = value._data
    elif hasattr(value, "shape") and not isinstance(value, nd.NDArray):
        value = nd.array(value, dtype=param.dtype, device=param.device)
    if isinstance(value, nd.NDArray):
        if value.shape not in ((), tuple(param.shape)):
            problems.append(f"state {where}: shape {value.shape}, parameter "
                            f"{tuple(param.shape)}")
        return value.astype(param.dtype).to(param.device) if value.dtype.is_floating \
            else value.to(param.device)
    return value
