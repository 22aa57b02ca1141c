"""Learning-rate schedulers: each sets ``group["lr"]`` from the step count.

Call ``scheduler.step()`` once per epoch (or per batch for OneCycleLR), after
``optimizer.step()``. Each scheduler computes the learning rate in closed
form from ``last_epoch`` and the group's ``initial_lr``, so the sequence
matches PyTorch's and a restored state dict continues it exactly.

Example:
    >>> from lamina import nn, optim
    >>> opt = optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
    >>> sched = StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(5):
    ...     opt.step(); sched.step(); lrs.append(sched.get_last_lr()[0])
    >>> lrs
    [1.0, 0.5, 0.5, 0.25, 0.25]
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from typing import Any

from ._optimizer import Optimizer
from ._plateau import ReduceLROnPlateau

__all__ = [
    "ChainedScheduler", "ConstantLR", "CosineAnnealingLR", "CosineAnnealingWarmRestarts",
    "CyclicLR", "ExponentialLR", "LRScheduler", "LambdaLR", "LinearLR", "MultiStepLR",
    "OneCycleLR", "PolynomialLR", "ReduceLROnPlateau", "SequentialLR", "StepLR",
]


class LRScheduler:
    """Base class: tracks ``last_epoch`` and writes ``lr`` into each group.

    Args:
        optimizer: the optimizer whose groups it drives.
        last_epoch: the index of the last epoch when resuming (-1 to start).
    """

    # True where lr_at(base, epoch) == base * lr_at(1, epoch) and PyTorch's
    # recursive form multiplies the current lr: such schedulers chain as a product.
    _multiplicative = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected an Optimizer, "
                            f"got {type(optimizer).__name__}")
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"{type(self).__name__}: param group has no 'initial_lr'; "
                               f"resume by loading the scheduler's state dict instead")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, base_lr: float, epoch: int) -> float:
        """The learning rate of a group with ``base_lr`` at ``epoch``."""
        raise TypeError(f"{type(self).__name__} does not define lr_at()")

    def get_last_lr(self) -> list[float]:
        """The learning rates the last ``step`` set, one per group."""
        return list(self._last_lr)

    def step(self) -> None:
        """Advance one epoch and update every group's ``lr``."""
        self.last_epoch += 1
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = self.lr_at(base, self.last_epoch)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict[str, Any]:
        """Every attribute except the optimizer (and functions)."""
        return {k: v for k, v in self.__dict__.items()
                if k != "optimizer" and not callable(v)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore attributes saved by :meth:`state_dict`."""
        for key, value in state_dict.items():
            setattr(self, key, list(value) if isinstance(value, tuple) else value)


class LambdaLR(LRScheduler):
    """lr = initial_lr * lr_lambda(epoch)."""

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float],
                 last_epoch: int = -1) -> None:
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.lr_lambda(epoch)


class StepLR(LRScheduler):
    """lr = initial_lr * gamma ** (epoch // step_size)."""

    _multiplicative = True

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        if step_size < 1:
            raise ValueError(f"StepLR: step_size must be >= 1, got {step_size}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """lr = initial_lr * gamma ** (number of milestones <= epoch)."""

    _multiplicative = True

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones, self.gamma = sorted(milestones), gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.gamma ** bisect.bisect_right(self.milestones, epoch)


class ExponentialLR(LRScheduler):
    """lr = initial_lr * gamma ** epoch."""

    _multiplicative = True

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.gamma**epoch


class CosineAnnealingLR(LRScheduler):
    """lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2."""

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:
        if T_max < 1:
            raise ValueError(f"CosineAnnealingLR: T_max must be >= 1, got {T_max}")
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        cos = 1.0 + math.cos(math.pi * epoch / self.T_max)
        return self.eta_min + (base_lr - self.eta_min) * cos / 2.0


class LinearLR(LRScheduler):
    """Linear warmup (or decay) of a factor from start_factor to end_factor.

    lr = initial_lr * (start + (end - start) * min(epoch, total_iters) / total_iters).
    """

    _multiplicative = True

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        if not 0.0 < start_factor <= 1.0 or not 0.0 <= end_factor <= 1.0:
            raise ValueError(f"LinearLR: need 0 < start_factor <= 1 and 0 <= end_factor <= 1, "
                             f"got {start_factor}, {end_factor}")
        if total_iters < 1:
            raise ValueError(f"LinearLR: total_iters must be >= 1, got {total_iters}")
        self.start_factor, self.end_factor = start_factor, end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        frac = min(epoch, self.total_iters) / self.total_iters
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * frac)


class ConstantLR(LRScheduler):
    """lr = initial_lr * factor until epoch total_iters, then initial_lr.

    Example:
        >>> from lamina import nn, optim
        >>> opt = optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = ConstantLR(opt, factor=0.5, total_iters=2)
        >>> lrs = [sched.get_last_lr()[0]]
        >>> for _ in range(3):
        ...     sched.step(); lrs.append(sched.get_last_lr()[0])
        >>> lrs
        [0.5, 0.5, 1.0, 1.0]
    """

    _multiplicative = True

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if not 0.0 <= factor <= 1.0:
            raise ValueError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        if total_iters < 0:
            raise ValueError(f"ConstantLR: total_iters must be >= 0, got {total_iters}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * (self.factor if epoch < self.total_iters else 1.0)


class PolynomialLR(LRScheduler):
    """lr = initial_lr * (1 - min(epoch, total_iters) / total_iters) ** power."""

    _multiplicative = True

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        if total_iters < 1:
            raise ValueError(f"PolynomialLR: total_iters must be >= 1, got {total_iters}")
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * (1.0 - min(epoch, self.total_iters) / self.total_iters) ** self.power


class CosineAnnealingWarmRestarts(LRScheduler):
    """Cosine annealing restarted every T_i epochs (SGDR, Loshchilov & Hutter, 2017).

    The first period lasts T_0 epochs and each next one T_mult times longer;
    within a period, lr = eta_min + (initial_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2.

    Args:
        optimizer: the optimizer.
        T_0: length of the first period (a positive int).
        T_mult: growth of the period after each restart (an int >= 1).
        eta_min: lowest learning rate.
    """

    def __init__(self, optimizer: Optimizer, T_0: int, T_mult: int = 1,  # noqa: N803
                 eta_min: float = 0.0, last_epoch: int = -1) -> None:
        if not isinstance(T_0, int) or T_0 < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_0 must be a positive int, "
                             f"got {T_0!r}")
        if not isinstance(T_mult, int) or T_mult < 1:
            raise ValueError(f"CosineAnnealingWarmRestarts: T_mult must be an int >= 1, "
                             f"got {T_mult!r}")
        if not isinstance(eta_min, (int, float)):
            raise ValueError(f"CosineAnnealingWarmRestarts: eta_min must be a number, "
                             f"got {eta_min!r}")
        self.T_0, self.T_mult, self.eta_min = T_0, T_mult, eta_min
        super().__init__(optimizer, last_epoch)

    def period(self, epoch: int) -> tuple[int, int]:
        """(T_cur, T_i): the epoch's position in its period, and the period's length."""
        if self.T_mult == 1:
            return epoch % self.T_0, self.T_0
        t_cur, t_i = epoch, self.T_0
        while t_cur >= t_i:  # integer arithmetic: exact at every restart
            t_cur, t_i = t_cur - t_i, t_i * self.T_mult
        return t_cur, t_i

    def lr_at(self, base_lr: float, epoch: int) -> float:
        t_cur, t_i = self.period(epoch)
        cos = 1.0 + math.cos(math.pi * t_cur / t_i)
        return self.eta_min + (base_lr - self.eta_min) * cos / 2.0


class _Composite(LRScheduler):
    """A scheduler made of others: its state dict nests theirs."""

    schedulers: list[LRScheduler]

    def state_dict(self) -> dict[str, Any]:
        """Own counters plus each scheduler's state dict."""
        state = {k: v for k, v in super().state_dict().items() if k != "schedulers"}
        return {**state, "schedulers": [s.state_dict() for s in self.schedulers]}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore counters and each scheduler's state."""
        own = {k: v for k, v in state_dict.items() if k != "schedulers"}
        super().load_state_dict(own)
        for sched, state in zip(self.schedulers, state_dict.get("schedulers", [])):
            sched.load_state_dict(state)


class SequentialLR(_Composite):
    """Run schedulers one after another, switching at ``milestones`` (e.g. warmup, then cosine).

    From ``milestones[i - 1]`` on, scheduler ``i`` runs with its epoch counted
    from that milestone.

    Args:
        optimizer: the optimizer all the schedulers were made for.
        schedulers: the schedulers in order (any but OneCycleLR).
        milestones: len(schedulers) - 1 increasing epochs.

    Example:
        >>> from lamina import nn, optim
        >>> opt = optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> warmup = LinearLR(opt, start_factor=0.5, total_iters=2)
        >>> decay = ExponentialLR(opt, gamma=0.5)
        >>> sched = SequentialLR(opt, [warmup, decay], milestones=[2])
        >>> lrs = [sched.get_last_lr()[0]]
        >>> for _ in range(4):
        ...     sched.step(); lrs.append(sched.get_last_lr()[0])
        >>> lrs
        [0.5, 0.75, 1.0, 0.5, 0.25]
    """

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler],
                 milestones: Sequence[int], last_epoch: int = -1) -> None:
        if len(milestones) != len(schedulers) - 1 or list(milestones) != sorted(milestones):
            raise ValueError(f"SequentialLR: need len(schedulers) - 1 = {len(schedulers) - 1} "
                             f"increasing milestones, got {list(milestones)}")
        for sched in schedulers:
            closed_form = isinstance(sched, LRScheduler) \
                and not isinstance(sched, (OneCycleLR, CyclicLR))
            if not closed_form or sched.optimizer is not optimizer:
                raise ValueError("SequentialLR: every scheduler must drive the same optimizer "
                                 "and compute its lr in closed form (not OneCycleLR, CyclicLR "
                                 "or ReduceLROnPlateau)")
        self.schedulers, self.milestones = list(schedulers), list(milestones)
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        i = bisect.bisect_right(self.milestones, epoch)
        start = self.milestones[i - 1] if i else 0
        return self.schedulers[i].lr_at(base_lr, epoch - start)


class ChainedScheduler(_Composite):
    """Apply several schedulers at once: their lr factors multiply.

    ``ChainedScheduler([ConstantLR(opt, 0.1, 3), ExponentialLR(opt, 0.9)])``
    gives lr = initial_lr * (0.1 if epoch < 3 else 1) * 0.9 ** epoch, as in
    PyTorch. Only schedulers whose lr is the initial lr times a factor of the
    epoch can be chained (StepLR, MultiStepLR, ExponentialLR, LinearLR,
    ConstantLR, PolynomialLR, ChainedScheduler): PyTorch's chain of the others
    depends on the order of their updates, not on their schedules.

    Args:
        schedulers: the schedulers, all driving one optimizer.
        optimizer: that optimizer (by default the first scheduler's).

    Example:
        >>> from lamina import nn, optim
        >>> opt = optim.SGD(nn.Linear(2, 1).parameters(), lr=1.0)
        >>> sched = ChainedScheduler([ConstantLR(opt, 0.5, total_iters=1),
        ...                           ExponentialLR(opt, gamma=0.5)])
        >>> lrs = [sched.get_last_lr()[0]]
        >>> for _ in range(2):
        ...     sched.step(); lrs.append(sched.get_last_lr()[0])
        >>> lrs
        [0.5, 0.5, 0.25]
    """

    _multiplicative = True

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        if not schedulers:
            raise ValueError("ChainedScheduler: got no schedulers; pass at least one")
        optimizer = optimizer or schedulers[0].optimizer
        for i, sched in enumerate(schedulers):
            if not isinstance(sched, LRScheduler) or sched.optimizer is not optimizer:
                raise ValueError(f"ChainedScheduler: scheduler {i} ({type(sched).__name__}) "
                                 f"does not drive the same optimizer as the others")
            if not sched._multiplicative:
                raise ValueError(f"ChainedScheduler: scheduler {i} ({type(sched).__name__}) "
                                 f"does not scale the lr by a factor; chain only StepLR, "
                                 f"MultiStepLR, ExponentialLR, LinearLR, ConstantLR or "
                                 f"PolynomialLR, or use SequentialLR")
        self.schedulers = list(schedulers)
        super().__init__(optimizer)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * math.prod(s.lr_at(1.0, epoch) for s in self.schedulers)

    def step(self) -> None:
        """Advance every chained scheduler and this one by an epoch."""
        super().step()
        for sched in self.schedulers:
            sched.last_epoch = self.last_epoch
            sched._last_lr = list(self._last_lr)


class OneCycleLR(LRScheduler):
    """The 1cycle policy (Smith & Topin, 2017); step it once per batch.

    The lr rises from max_lr / div_factor to max_lr over the first
    ``pct_start`` of the steps, then anneals to initial / final_div_factor;
    momentum (or Adam's beta1) moves the opposite way between
    ``max_momentum`` and ``base_momentum``. ``three_phase`` adds a symmetric
    descent to the initial lr before the final annealing.

    Args:
        optimizer: the optimizer.
        max_lr: peak learning rate (one for all groups, or one per group).
        total_steps: number of steps; or give ``epochs`` and ``steps_per_epoch``.
        pct_start: fraction of the steps spent rising.
        anneal_strategy: ``"cos"`` or ``"linear"``.
        cycle_momentum: cycle the momentum too.
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | Sequence[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float = 0.85, max_momentum: float = 0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1) -> None:
        if total_steps is None:
            if not epochs or not steps_per_epoch:
                raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
            total_steps = epochs * steps_per_epoch
        if total_steps < 1 or not 0.0 < pct_start < 1.0:
            raise ValueError(f"OneCycleLR: need total_steps >= 1 and 0 < pct_start < 1, "
                             f"got {total_steps}, {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', "
                             f"got {anneal_strategy!r}")
        self.total_steps, self.anneal_strategy = total_steps, anneal_strategy
        groups = optimizer.param_groups
        peaks = list(max_lr) if isinstance(max_lr, Sequence) else [max_lr] * len(groups)
        for group, peak in zip(groups, peaks):
            if last_epoch == -1:
                group["initial_lr"] = peak / div_factor
                group["max_lr"], group["min_lr"] = peak, group["initial_lr"] / final_div_factor
        p = pct_start * total_steps
        if three_phase:
            self.phases = [(p - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                           (2 * p - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"),
                           (total_steps - 1, "initial_lr", "min_lr", "max_momentum",
                            "max_momentum")]
        else:
            self.phases = [(p - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"),
                           (total_steps - 1, "max_lr", "min_lr", "base_momentum",
                            "max_momentum")]
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            for group in groups:
                if "momentum" not in group and "betas" not in group:
                    raise ValueError("OneCycleLR: cycle_momentum needs an optimizer with "
                                     "'momentum' or 'betas'")
                if last_epoch == -1:
                    group["max_momentum"], group["base_momentum"] = max_momentum, base_momentum
                    _set_momentum(group, max_momentum)
        super().__init__(optimizer, last_epoch)

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def step(self) -> None:
        """Advance one batch; sets lr (and momentum) of every group."""
        self.last_epoch += 1
        t = self.last_epoch
        if t > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {t} times for total_steps "
                             f"{self.total_steps}")
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, (end_step, lr0, lr1, m0, m1) in enumerate(self.phases):
                if t <= end_step or i == len(self.phases) - 1:
                    pct = (t - start_step) / (end_step - start_step)
                    group["lr"] = self._anneal(group[lr0], group[lr1], pct)
                    if self.cycle_momentum:
                        _set_momentum(group, self._anneal(group[m0], group[m1], pct))
                    break
                start_step = end_step
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


class CyclicLR(LRScheduler):
    """Cyclical learning rates (Smith, 2017); step it once per batch.

    The lr climbs from ``base_lr`` to ``max_lr`` over ``step_size_up`` steps and
    falls back over ``step_size_down``; the cycle's height is scaled by
    ``scale_fn(cycle)``: 1 (``"triangular"``), halved each cycle
    (``"triangular2"``), or ``gamma ** step`` (``"exp_range"``). Momentum (or
    Adam's beta1) moves the opposite way between ``max_momentum`` and
    ``base_momentum``.

    Args:
        optimizer: the optimizer.
        base_lr, max_lr: the cycle's bounds, one for all groups or one per group.
        step_size_up: steps of the rising half (> 0).
        step_size_down: steps of the falling half (``step_size_up`` by default).
        mode: ``"triangular"``, ``"triangular2"`` or ``"exp_range"``.
        gamma: the base of ``"exp_range"``.
        scale_fn: a custom scale of the height (overrides ``mode``).
        scale_mode: whether ``scale_fn`` gets the ``"cycle"`` or the step (``"iterations"``).
        cycle_momentum: cycle the momentum too.
        base_momentum, max_momentum: its bounds, one for all groups or one per group.
    """

    _MODES = {"triangular": "cycle", "triangular2": "cycle", "exp_range": "iterations"}

    def __init__(self, optimizer: Optimizer, base_lr: float | Sequence[float],
                 max_lr: float | Sequence[float], step_size_up: float = 2000,
                 step_size_down: float | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn: Callable[[float], float] | None = None,
                 scale_mode: str = "cycle", cycle_momentum: bool = True,
                 base_momentum: float | Sequence[float] = 0.8,
                 max_momentum: float | Sequence[float] = 0.9, last_epoch: int = -1) -> None:
        down = step_size_up if step_size_down is None else step_size_down
        if not step_size_up > 0 or not down >= 0:
            raise ValueError(f"CyclicLR: need step_size_up > 0 and step_size_down >= 0, "
                             f"got {step_size_up}, {down}")
        if scale_fn is None and mode not in self._MODES:
            raise ValueError(f"CyclicLR: mode must be one of {sorted(self._MODES)} "
                             f"(or give scale_fn), got {mode!r}")
        self.total_size = float(step_size_up + down)
        self.step_ratio = step_size_up / self.total_size
        self.mode, self.gamma, self.scale_fn = mode, gamma, scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else self._MODES[mode]
        groups = optimizer.param_groups if isinstance(optimizer, Optimizer) else []
        self.cyclic_base_lrs = _per_group("base_lr", base_lr, groups)
        self.max_lrs = _per_group("max_lr", max_lr, groups)
        self.cycle_momentum = cycle_momentum
        if cycle_momentum and groups:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("CyclicLR: cycle_momentum needs an optimizer with 'momentum' "
                                 "or 'betas'; pass cycle_momentum=False")
            self.base_momentums = _per_group("base_momentum", base_momentum, groups)
            self.max_momentums = _per_group("max_momentum", max_momentum, groups)
        if last_epoch == -1:
            for group, lr in zip(groups, self.cyclic_base_lrs):
                group["lr"] = lr
        super().__init__(optimizer, last_epoch)
        self.base_lrs = list(self.cyclic_base_lrs)

    def _scale(self, cycle: int) -> float:
        x = cycle if self.scale_mode == "cycle" else self.last_epoch
        if self.scale_fn is not None:
            return self.scale_fn(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        return self.gamma**x if self.mode == "exp_range" else 1.0

    def step(self) -> None:
        """Advance one batch; sets lr (and momentum) of every group."""
        self.last_epoch += 1
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        rise = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self._scale(cycle)
        for i, group in enumerate(self.optimizer.param_groups):
            low, high = self.cyclic_base_lrs[i], self.max_lrs[i]
            group["lr"] = low + (high - low) * rise * scale
            if self.cycle_momentum:
                low, high = self.base_momentums[i], self.max_momentums[i]
                _set_momentum(group, high - (high - low) * rise * scale)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


def _per_group(name: str, value: float | Sequence[float], groups: list[Any]) -> list[float]:
    if isinstance(value, Sequence):
        if len(value) != len(groups):
            raise ValueError(f"CyclicLR: expected {len(groups)} values of {name} (one per "
                             f"param group), got {len(value)}")
        return [float(v) for v in value]
    return [float(value)] * len(groups)


def _set_momentum(group: dict[str, Any], value: float) -> None:
    if "betas" in group:
        group["betas"] = (value, *tuple(group["betas"])[1:])
    else:
        group["momentum"] = value
