"""The kernel table: one list of names, resolved once per device, optional kernels None."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
from lamina.ndarray import KernelTable, get_device
from lamina.ndarray._interface import (
    BINARY_OPS,
    DEVICE_FUNCTIONS,
    METADATA,
    OPTIONAL,
    OPTIONAL_BINARY_OPS,
    OPTIONAL_REDUCE_OPS,
    OPTIONAL_UNARY_OPS,
    REDUCE_OPS,
    REQUIRED,
    REVERSED_SCALAR_OPS,
    UNARY_OPS,
    V11_KERNELS,
    resolve_kernels,
)
from lamina.ndarray._numpy_backend import backend as numpy_backend
from lamina.ndarray._optable import OPS
from test_registry import _DELEGATE, install, run_json


def test_names_derive_from_the_table() -> None:
    names = REQUIRED + OPTIONAL
    assert len(set(names)) == len(names)
    assert {f"ewise_{op}" for op in BINARY_OPS + UNARY_OPS} <= set(REQUIRED)
    assert {f"scalar_{op}" for op in BINARY_OPS + REVERSED_SCALAR_OPS} <= set(REQUIRED)
    assert {f"reduce_{op}" for op in REDUCE_OPS} <= set(REQUIRED)
    assert set(METADATA) <= set(REQUIRED) and set(DEVICE_FUNCTIONS) <= set(OPTIONAL)
    singles = {f.name for f in fields(KernelTable) if "ops" not in f.metadata}
    optional = {f.name for f in fields(KernelTable) if f.default is None}
    optional_ops = ({f"ewise_{op}" for op in OPTIONAL_BINARY_OPS + OPTIONAL_UNARY_OPS}
                    | {f"reduce_{op}" for op in OPTIONAL_REDUCE_OPS}
                    | {f"ewise_strided_{op}" for op in BINARY_OPS + OPTIONAL_BINARY_OPS})
    assert optional_ops <= set(OPTIONAL) and set(V11_KERNELS) <= set(OPTIONAL)
    assert {"reduce_prod", "cumsum_last"} <= set(V11_KERNELS)
    assert optional == set(OPTIONAL) - optional_ops
    assert singles - optional == set(REQUIRED) - set(METADATA) - {
        n for n in REQUIRED if n.split("_")[0] in ("ewise", "scalar", "reduce")
        and n.split("_", 1)[1] in BINARY_OPS + UNARY_OPS + REVERSED_SCALAR_OPS + REDUCE_OPS}


def test_numpy_backend_defines_every_kernel_it_lists() -> None:
    assert {n for n, op in OPS.items() if op.arity == 2} == set(BINARY_OPS + OPTIONAL_BINARY_OPS)
    absent = [n for n in REQUIRED + OPTIONAL if not hasattr(numpy_backend, n)]
    # numpy has no erf: no ewise_erf, and no gelu (its default form is erf's)
    assert absent == ["ewise_erf", "gelu", "gelu_backward", *DEVICE_FUNCTIONS]
    for name in REQUIRED:  # plain definitions on the class, not attached at import
        assert name in type(numpy_backend).__dict__, name


def test_table_of_the_numpy_device() -> None:
    dev = get_device("numpy")
    table = dev.kernels
    assert isinstance(table, KernelTable) and table is get_device("numpy:0").kernels
    assert table.matmul is numpy_backend.matmul
    assert table.ewise["add"] is numpy_backend.ewise_add
    assert table.scalar["rsub"] is numpy_backend.scalar_rsub
    assert table.reduce["argmax"] is numpy_backend.reduce_argmax
    assert table.reduce["prod"] is numpy_backend.reduce_prod
    assert table.cumsum_last is numpy_backend.cumsum_last
    assert "erf" not in table.ewise and table.softmax_last is numpy_backend.softmax_last
    assert table.set_num_threads is None and table.memory_stats is None
    with pytest.raises(TypeError):
        table.ewise["add"] = numpy_backend.ewise_sub  # type: ignore[index]


def test_resolving_a_backend_without_a_required_kernel_raises() -> None:
    class Partial:
        def __getattr__(self, name: str) -> object:
            if name == "matmul":
                raise AttributeError(name)
            return getattr(numpy_backend, name)

    with pytest.raises(AttributeError, match="matmul"):
        resolve_kernels(Partial())


# A plugin that counts every attribute lookup and lacks two optional kernels.
COUNTING = {"counting": ("fake-counting", "0.1", "fake_counting", "LOOKUPS = []\n" + _DELEGATE
                         .replace("    def __getattr__(self, attr):\n",
                                  "    def __getattr__(self, attr):\n"
                                  "        LOOKUPS.append(attr)\n")
                         .format(name="counting", api_version=2,
                                 hidden=("softmax_last", "matmul_strided"), available=True,
                                 extra=""))}

USE = """
import json
import numpy as np
import fake_counting
from lamina.ndarray import DeviceError, array, get_device

dev = get_device("counting")
resolved = len(fake_counting.LOOKUPS)
x = np.arange(12.0).reshape(3, 4)
a = array(x, dtype="float32", device=dev)
values = [(a + a * 2 - 1).tolist(), (a @ a.T).tolist(), a.sum(axis=0).tolist(),
          a.softmax().tolist(), (a.T @ a).tolist(), (a.T + a.T).tolist(), a.exp().tolist()]
errors = []
for call in (dev.num_threads, dev.memory_stats, dev.empty_cache, lambda: dev.set_num_threads(2)):
    try:
        call()
    except DeviceError as exc:
        errors.append(str(exc))
dev.synchronize()
print(json.dumps({"resolved": resolved, "after": len(fake_counting.LOOKUPS),
                  "same": get_device("counting:0") is dev and get_device("counting").kernels
                  is dev.kernels, "optional": [dev.kernels.softmax_last is None,
                  dev.kernels.matmul_strided is None, not dev.kernels.ewise_strided],
                  "values": values, "errors": errors}))
"""


def test_resolved_once_and_optional_kernels_none(tmp_path) -> None:
    out = run_json(install(tmp_path, COUNTING), USE)
    assert out["resolved"] > 0
    assert out["after"] == out["resolved"], "ops looked kernels up by name"
    assert out["same"] and out["optional"] == [True, True, False]
    x = np.arange(12.0).reshape(3, 4)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    want = [x + x * 2 - 1, x @ x.T, x.sum(axis=0), e / e.sum(axis=-1, keepdims=True),
            x.T @ x, x.T + x.T, np.exp(x)]
    for got, ref in zip(out["values"], want):
        np.testing.assert_allclose(got, ref, rtol=1e-5)
    assert len(out["errors"]) == 4
    for message in out["errors"]:
        assert "device 'counting'" in message and "fake-counting 0.1" in message

