"""Checks that run everywhere, GPU or not: the package imports, registers
through the entry point, lists every kernel of interface v2.0 with the dtypes
each takes, and without a GPU reports itself unavailable with the CUDA error
text."""

from __future__ import annotations

import re
from importlib.metadata import entry_points
from pathlib import Path

import lamina_backend_cuda
import pytest
from conftest import cuda

interface = pytest.importorskip("lamina.ndarray._interface")


def test_registered_through_the_entry_point() -> None:
    (ep,) = [ep for ep in entry_points(group="lamina.backends") if ep.name == "cuda"]
    assert ep.value == "lamina_backend_cuda:backend"
    assert ep.load() is lamina_backend_cuda.backend


def test_metadata() -> None:
    assert cuda.name == "cuda"
    assert cuda.api_version == interface.API_VERSION
    assert {"float32", "int64"} <= set(cuda.dtypes)
    assert isinstance(cuda.is_available(), bool)
    assert isinstance(cuda.unavailable_reason(), str)
    assert (cuda.unavailable_reason() == "") == cuda.is_available()


def test_provides_every_kernel() -> None:
    assert interface.missing_kernels(cuda) == []
    # every optional kernel and device function but the host thread setting, the
    # wrapping of host memory, the cheaper allocation, the fused Adam step, the
    # fused LayerNorm backward, the one-pass GELU (an ewise_program runs it) and the
    # attention kernels (matmul, log-sum-exp and elementwise kernels compose it) and
    # the GEMM with a bias (an add follows the GEMM) and the per-image convolution
    # (im2col and a batched GEMM compose it)
    not_provided = {"wrap_numpy", "set_num_threads", "num_threads", "empty", "adam_step",
                    "layer_norm_backward_last", "gelu", "gelu_backward", "attention",
                    "attention_backward", "matmul_bias", "conv2d",
                    "conv2d_backward_input", "conv2d_backward_weight"}
    assert [n for n in interface.OPTIONAL if not hasattr(cuda, n)] == [
        n for n in interface.OPTIONAL if n in not_provided]
    assert set(lamina_backend_cuda.KERNELS) == set(interface.REQUIRED + interface.OPTIONAL) - {
        "is_available", "unavailable_reason", "device_count", *not_provided}
    assert (cuda.api_version, cuda.api_minor_version) == (
        interface.API_VERSION, interface.API_MINOR_VERSION) == (2, 2)
    assert set(interface.V11_KERNELS) <= set(lamina_backend_cuda.KERNELS)


def test_one_strided_kernel_per_binary_op() -> None:
    # Interface v2: ewise_strided_OP for every binary op instead of v1.1's
    # ewise_strided(op: str, ...), with ewise_OP's dtypes.
    from lamina_backend_cuda import _core

    assert not hasattr(_core, "ewise_strided") and "ewise_strided" not in cuda.kernel_dtypes
    for op in interface.BINARY_OPS + interface.OPTIONAL_BINARY_OPS:
        assert callable(getattr(_core, f"ewise_strided_{op}")), op
        assert f"ewise_strided_{op}" in lamina_backend_cuda.KERNELS, op
        assert (cuda.kernel_dtypes.get(f"ewise_strided_{op}")
                == cuda.kernel_dtypes.get(f"ewise_{op}")), op


def test_elementwise_ops_are_declared_once() -> None:
    # csrc/ewise_ops.h is the one cuda source naming each elementwise op: the
    # declarations, bindings, dtype sets and kernels are expanded from it, never
    # spelled out (issue 29's measure: bitwise_xor and remainder in one file).
    csrc = Path(__file__).resolve().parents[1] / "csrc"
    ops = interface.BINARY_OPS + interface.OPTIONAL_BINARY_OPS + interface.UNARY_OPS + \
        interface.OPTIONAL_UNARY_OPS
    kernel = re.compile(r"\b(?:ewise|scalar|ewise_strided)_r?(" + "|".join(ops) + r")\b")
    spelled = {f.name: sorted(set(kernel.findall(f.read_text()))) for f in csrc.iterdir()}
    assert {name: found for name, found in spelled.items() if found} == {}
    naming = {op: sorted(f.name for f in csrc.iterdir() if op in f.read_text())
              for op in ("bitwise_xor", "remainder")}
    assert naming == {"bitwise_xor": ["ewise_ops.h"], "remainder": ["ewise_ops.h"]}


# The kernels beyond the elementwise ones that take float16 and bfloat16 natively
# (reduce.cu, matmul.cu, fill): those the cpu backend names them for.
NATIVE_NARROW = frozenset({
    "fill", "reduce_sum", "reduce_sum_axis", "reduce_max", "reduce_min", "softmax_last",
    "logsumexp_last", "layer_norm_last", "matmul", "matmul_batched", "matmul_strided",
    "matmul_batched_strided"})


def test_the_native_16_bit_kernels_are_the_cpu_backends() -> None:
    cpu = pytest.importorskip("lamina_backend_cpu").backend
    narrow = set(interface.NARROW_DTYPES)

    def named(backend: object) -> set[str]:
        return {name for name, dtypes in interface.kernel_dtypes(backend).items()
                if narrow <= dtypes and name not in interface.NARROW_KERNELS}

    # of the kernels both have: cuda has no gelu or gelu_backward at all (GELU runs
    # there as one ewise_program launch), which the cpu backend runs in 16 bits
    assert named(cuda) == {n for n in named(cpu) if hasattr(cuda, n)}
    assert named(cpu) - named(cuda) <= {"gelu", "gelu_backward"}
    assert {n for n in named(cuda) if not n.startswith(("ewise_", "scalar_"))} == NATIVE_NARROW


def test_kernel_dtypes_follow_the_numpy_reference() -> None:
    # The same wide dtypes per kernel as the numpy backend (the specification), for
    # every kernel both have; ewise_erf, which numpy lacks, takes floats. The
    # elementwise kernels also take the 16-bit floats natively where they take
    # float32, and so do NATIVE_NARROW (the numpy backend runs them through the
    # float32 fallback; the conformance kit's test_narrow_native checks them).
    numpy_backend = pytest.importorskip("lamina.ndarray._numpy_backend").backend
    assert cuda.dtypes == numpy_backend.dtypes == ("float32", "float64", "int64", "bool",
                                                   "float16", "bfloat16")
    ours, theirs = interface.kernel_dtypes(cuda), interface.kernel_dtypes(numpy_backend)
    narrow = frozenset(interface.NARROW_DTYPES)
    both = [n for n in lamina_backend_cuda.KERNELS
            if n in ours and n not in interface.DEVICE_FUNCTIONS and theirs.get(n)]
    assert {n: ours[n] - narrow for n in both} == {n: theirs[n] - narrow for n in both}
    assert ours["ewise_erf"] == {"float32", "float64", "float16", "bfloat16"}
    elementwise = ({f"ewise_{op}" for op in (*interface.STRIDED_OPS, *interface.UNARY_OPS,
                                             *interface.OPTIONAL_UNARY_OPS)}
                   | {f"scalar_{op}" for op in (*interface.SCALAR_OPS,
                                                *interface.REVERSED_SCALAR_OPS)}
                   | {f"ewise_strided_{op}" for op in interface.STRIDED_OPS})
    for name in (n for n in ours if ours[n]):  # every kernel it has
        takes_narrow = (name in elementwise and "float32" in ours[name]) or name in NATIVE_NARROW
        assert (ours[name] >= narrow) == (takes_narrow or name in interface.NARROW_KERNELS), name
        assert ours[name] & narrow in (frozenset(), narrow), name
    # only what says more than the default (the wide dtypes) is declared
    assert all(set(d) != set(cuda.dtypes) - narrow for d in cuda.kernel_dtypes.values())


def test_extension_is_built_and_linked_statically() -> None:
    from lamina_backend_cuda import _core

    assert _core.device_count() >= 0
    with open(_core.__file__, "rb") as f:
        image = f.read()
    # The runtime is static and the driver is loaded at run time, never linked.
    assert b"libcudart.so" not in image


def test_emulation_says_so() -> None:
    from lamina_backend_cuda import _core

    assert cuda.emulated is bool(_core.emulated())
    assert ("CPU emulation" in cuda.description) is cuda.emulated
    assert ("not a GPU" in repr(cuda)) is cuda.emulated
    if cuda.emulated:
        assert cuda.is_available() and cuda.device_count() == 1


@pytest.mark.skipif(cuda.is_available(),
                    reason="the backend is available (a GPU, or the CPU emulation build): "
                           "these tests check the unavailable state")
class TestWithoutGPU:
    def test_reason_carries_the_cuda_error(self) -> None:
        reason = cuda.unavailable_reason()
        assert "cuda" in reason.lower() and reason.strip()
        assert cuda.device_count() == 0

    def test_every_kernel_raises_runtime_error_with_the_reason(self) -> None:
        for name in lamina_backend_cuda.KERNELS:
            with pytest.raises(RuntimeError, match="unavailable") as info:
                getattr(cuda, name)(1, "float32")
            assert cuda.unavailable_reason() in str(info.value), name

    def test_extension_raises_too(self) -> None:
        from lamina_backend_cuda import _core

        with pytest.raises(RuntimeError, match="Array: the cuda backend is unavailable"):
            _core.Array(4, "float32")
        with pytest.raises(RuntimeError, match="unavailable"):
            _core.memory_stats()

    def test_registry_raises_device_error_naming_the_reason(self) -> None:
        ndarray = pytest.importorskip("lamina.ndarray")
        ndarray._registry.refresh()
        info = {b.name: b for b in ndarray.list_backends()}["cuda"]
        assert info.status == "unavailable"
        assert info.reason
        with pytest.raises(ndarray.DeviceError) as exc:
            ndarray.get_device("cuda")
        message = str(exc.value)
        assert "lamina-backend-cuda" in message and info.reason in message
