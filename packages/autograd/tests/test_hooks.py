"""Tensor.register_post_accumulate_grad_hook: when it runs, what it sees, errors; vs PyTorch."""

from __future__ import annotations

import lamina.autograd as ag
import numpy as np
import pytest
import torch


def _chain_events(lib: object, make: object) -> list[str]:
    """Order in which two layers' weights finish, for a 2-layer chain in ``lib``."""
    events: list[str] = []
    w1 = make([[0.5, -1.0], [2.0, 1.5]])
    w2 = make([[1.0], [-0.5]])
    for name, w in (("w1", w1), ("w2", w2)):
        w.register_post_accumulate_grad_hook(lambda t, name=name: events.append(
            f"{name}:{np.round(np.asarray(t.grad), 4).tolist()}"))
    x = make([[1.0, 2.0]], grad=False)
    h = (x @ w1).tanh()
    (h @ w2).sum().backward()
    return events


def test_hooks_match_pytorch_order_and_gradients() -> None:
    ours = _chain_events(ag, lambda v, grad=True: ag.tensor(v, requires_grad=grad))
    ref = _chain_events(torch, lambda v, grad=True: torch.tensor(v, requires_grad=grad))
    assert ours == ref
    assert ours[0].startswith("w2")  # the last layer's weight is complete first


def test_hook_runs_before_the_rest_of_backward() -> None:
    # w2 is complete once the last matmul's backward ran, before tanh's and the
    # first matmul's: its hook must see w1.grad still unset
    w1 = ag.tensor([[0.5, -1.0], [2.0, 1.5]], requires_grad=True)
    w2 = ag.tensor([[1.0], [-0.5]], requires_grad=True)
    seen: list[object] = []
    w2.register_post_accumulate_grad_hook(lambda t: seen.append(w1.grad))
    ((ag.tensor([[1.0, 2.0]]) @ w1).tanh() @ w2).sum().backward()
    assert seen == [None] and w1.grad is not None


def test_hook_sees_accumulated_grad_and_runs_once_per_backward() -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    seen: list[list[float]] = []
    w.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    # w is used twice: the hook runs once, after both contributions
    (w * w + 3 * w).sum().backward()
    (w * 2).sum().backward()
    assert seen == [[5.0, 7.0], [7.0, 9.0]]


def test_hook_on_seeded_leaf_and_removal() -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    calls: list[int] = []
    first = w.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    w.register_post_accumulate_grad_hook(lambda t: calls.append(2))
    w.backward(ag.tensor([1.0, 1.0]))
    first.remove()
    first.remove()  # idempotent
    w.backward(ag.tensor([1.0, 1.0]))
    assert calls == [1, 2, 2]


def test_hook_may_replace_grad() -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True)

    def halve(t: ag.Tensor) -> None:
        t.grad = t.grad * 0.5

    w.register_post_accumulate_grad_hook(halve)
    (w * 4).sum().backward()
    assert w.grad.tolist() == [2.0, 2.0]


def test_grad_function_does_not_run_hooks() -> None:
    w = ag.tensor([1.0, 2.0], requires_grad=True)
    calls: list[int] = []
    w.register_post_accumulate_grad_hook(lambda t: calls.append(1))
    ag.grad((w * w).sum(), w)
    assert calls == [] and w.grad is None


def test_hook_errors() -> None:
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        ag.tensor([1.0]).register_post_accumulate_grad_hook(lambda t: None)
    w = ag.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="non-leaf"):
        (w * 2).register_post_accumulate_grad_hook(lambda t: None)
    with pytest.raises(TypeError, match="must be callable"):
        w.register_post_accumulate_grad_hook(3)  # type: ignore[arg-type]


def test_docstring_example() -> None:
    import doctest

    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    for test in finder.find(ag.Tensor.register_post_accumulate_grad_hook, "hook"):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0
