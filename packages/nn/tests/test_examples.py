"""Run each program in examples/pytorch-style for a few steps on cpu: its loss must fall.

The examples live in the repository, not in the package, so an installed-package
run (no checkout around the tests) skips these tests.
"""

from __future__ import annotations

import importlib.util
import statistics
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from lamina import ndarray as nd

# packages/nn/tests/test_examples.py -> the repository root is parents[3].
EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "pytorch-style"

# (script, keyword arguments for main, steps): sized so the whole file runs in seconds.
CASES = [
    ("char_gpt.py", {}, 40),
    ("conv_mnist_like.py", {}, 30),
    ("word_lm.py", {"model": "gru"}, 40),
    ("word_lm.py", {"model": "transformer"}, 40),
]


def _load(script: str) -> ModuleType:
    path = EXAMPLES / script
    if not path.is_file():
        pytest.skip(f"{path} not found: the examples folder ships only with a source checkout")
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _require_cpu() -> None:
    status = {info.name: info.status for info in nd.list_backends()}
    if status.get("cpu") != "available":
        pytest.skip("the examples test runs on the cpu backend, which is not available here")


@pytest.mark.parametrize(("script", "kwargs", "steps"), CASES,
                         ids=[f"{s}-{k.get('model', 'default')}" for s, k, _ in CASES])
def test_example_loss_falls(script: str, kwargs: dict[str, Any], steps: int) -> None:
    _require_cpu()
    losses = _load(script).main(steps=steps, device="cpu", **kwargs)
    assert len(losses) == steps
    assert all(isinstance(x, float) for x in losses)
    first, last = statistics.mean(losses[:5]), statistics.mean(losses[-5:])
    assert last < first, f"{script} {kwargs}: loss did not fall ({first:.4f} -> {last:.4f})"


def test_examples_readme_lists_every_script() -> None:
    if not EXAMPLES.is_dir():
        pytest.skip(f"{EXAMPLES} not found: the examples folder ships only with a source checkout")
    readme = (EXAMPLES / "README.md").read_text()
    scripts = sorted(p.name for p in EXAMPLES.glob("*.py"))
    missing = [name for name in scripts if name not in readme]
    assert not missing, f"examples/pytorch-style/README.md does not list {missing}"
