"""Plugins built for interface v1.x still load, through the adapter of interface v2."""

from __future__ import annotations

import numpy as np
from lamina.ndarray._interface import BINARY_OPS
from test_registry import _DELEGATE, install, run_json

# A v1.1 plugin: every kernel of the numpy backend, except that the strided kernel
# is v1's single ewise_strided taking the op's name (it records each name it gets).
_V11_EXTRA = """
    api_minor_version = 1
    NAMES = []

    def ewise_strided(self, op, *args):
        Backend.NAMES.append(op)
        return getattr(_numpy, "ewise_strided_" + op)(*args)
"""
V11 = {"oldstyle": ("fake-oldstyle", "1.1", "fake_oldstyle",
                    _DELEGATE.format(name="oldstyle", api_version=1, hidden=(),
                                     available=True, extra=_V11_EXTRA))}

USE = """
import json
import numpy as np
import fake_oldstyle
from lamina.ndarray import array, get_device, list_backends

dev = get_device("oldstyle")
info = [b for b in list_backends() if b.name == "oldstyle"][0]
x = np.arange(12.0).reshape(3, 4)
a = array(x, dtype="float32", device=dev)
values = [(a.T + a.T).tolist(), (a.T * 2.0 < a.T).tolist(), (a + a[0]).tolist()]
print(json.dumps({
    "status": info.status, "declared": [info.api_version, info.api_minor_version],
    "adapted": list(dev.backend.adapted_from), "api": dev.backend.api_version,
    "strided": sorted(dev.kernels.ewise_strided), "names": fake_oldstyle.Backend.NAMES,
    "plain_strided": hasattr(dev.backend, "ewise_strided"),
    "dtypes": sorted(dev.kernel_dtypes["ewise_strided_div"]), "values": values}))
"""


def test_a_v11_plugin_loads_and_its_strided_kernel_takes_the_op_name(tmp_path) -> None:
    out = run_json(install(tmp_path, V11), USE)
    assert out["status"] == "available" and out["declared"] == [1, 1]
    assert out["adapted"] == [1, 1] and out["api"] == 2
    # each v2 per-op kernel is the plugin's ewise_strided with the name bound once
    assert out["strided"] == sorted(BINARY_OPS) and not out["plain_strided"]
    assert out["names"] == ["add", "lt", "add"]  # transposed and broadcast operands
    assert out["dtypes"] == ["float32"]  # the plugin lists float32 and int64; div: floats
    x = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(out["values"][0], x.T + x.T)
    assert out["values"][1] == (x.T * 2 < x.T).tolist()
    np.testing.assert_allclose(out["values"][2], x + x[0])


V10 = {"v10": ("fake-v10", "1.0", "fake_v10",
               # a v1.0 plugin declares no minor version (numpy's would show through)
               _DELEGATE.format(name="v10", api_version=1,
                                hidden=("ewise_strided", "api_minor_version"),
                                available=True, extra="    kernel_dtypes = {}\n"))}

USE_V10 = """
import json
from lamina.ndarray import DTypeError, arange, get_device

dev = get_device("v10")
i = arange(3, device=dev)
try:
    i + i
    error = ""
except DTypeError as exc:
    error = str(exc)
print(json.dumps({"error": error, "add": sorted(dev.kernel_dtypes["ewise_add"]),
                  "eq": sorted(dev.kernel_dtypes["ewise_eq"]),
                  "strided": len(dev.kernels.ewise_strided)}))
"""


def test_a_v10_plugin_reads_as_float_only_arithmetic(tmp_path) -> None:
    out = run_json(install(tmp_path, V10), USE_V10)
    assert out["error"].startswith("add: device v10 has no int64 kernel for add")
    assert out["add"] == ["float32"] and out["eq"] == ["float32", "int64"]
    assert out["strided"] == 0
