"""The examples in the public docstrings run (each module imported by its real name)."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "lamina.data._dataset", "lamina.data._loader", "lamina.data.transforms",
    "lamina.nn._module", "lamina.nn._containers", "lamina.nn._layers", "lamina.nn._loss",
    "lamina.nn._parameter", "lamina.nn._serialization", "lamina.nn.functional", "lamina.nn.init",
    "lamina.nn.utils", "lamina.optim._sgd", "lamina.optim.lr_scheduler", "lamina.models._mlp",
    "lamina.amp",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} doctest(s) failed in {name}"
