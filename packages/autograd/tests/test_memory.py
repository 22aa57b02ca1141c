"""A training-like loop must not leak: live tensors, graph nodes and RSS stay flat."""

from __future__ import annotations

import doctest
import gc
import importlib
import os
import pkgutil
from pathlib import Path

import lamina.autograd as ag
import pytest
from lamina.autograd._function import Function


def _live(kind: type) -> int:
    # type(), not isinstance(): isinstance would poke lazy module proxies (torch's).
    return sum(issubclass(type(o), kind) for o in gc.get_objects())


def _rss_bytes() -> int | None:
    """Resident set size on Linux; None elsewhere."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE")


def test_training_loop_keeps_live_tensors_and_rss_flat() -> None:
    ag.manual_seed(0)
    w1 = ag.randn(64, 32, requires_grad=True)
    w2 = ag.randn(32, 10, requires_grad=True)
    x = ag.randn(16, 64)
    target = ag.tensor([i % 10 for i in range(16)])
    counts, rss = [], []
    gc.collect()
    gc.disable()  # nothing may depend on the cycle collector: the graph has no cycles
    try:
        for step in range(1000):
            logits = (x @ w1).relu() @ w2
            loss = -(ag.log_softmax(logits, dim=1) * ag.one_hot(target, 10)).sum(dim=1).mean()
            loss.backward()
            with ag.no_grad():
                for p in (w1, w2):
                    p.data = p.data - 0.01 * p.grad.data
                    p.grad = None
            del logits, loss
            if step in (99, 999):
                counts.append((_live(ag.Tensor), _live(Function)))
                rss.append(_rss_bytes())
    finally:
        gc.enable()
    assert counts[0] == counts[1], f"live (tensors, nodes) grew: {counts}"
    if rss[0] is not None:
        assert rss[1] - rss[0] < 20 * 2**20, f"RSS grew by {(rss[1] - rss[0]) / 2**20:.1f} MiB"


def test_backward_frees_saved_tensors() -> None:
    x = ag.randn(100, requires_grad=True)
    y = (x.exp() * x).sum()
    node = y.grad_fn
    y.backward()
    assert node._saved is None and node._released
    mul = node.next[0]
    assert mul._saved is None and mul._released


@pytest.mark.parametrize("readme", ["packages/autograd/README.md", "README.md"])
def test_readme_example_runs(readme: str) -> None:
    path = Path(__file__).parents[3] / readme
    if not path.exists():
        pytest.skip(f"{readme} is not beside these tests (installed from a wheel?)")
    failures, tried = doctest.testfile(str(path), module_relative=False)
    assert tried >= 5 and failures == 0


def test_docstring_examples_run() -> None:
    for info in pkgutil.walk_packages(ag.__path__, "lamina.autograd."):
        module = importlib.import_module(info.name)
        failures, _ = doctest.testmod(module)
        assert failures == 0, info.name
