"""The optional ``ewise_program`` kernel of interface v2.1, tested only where the
backend provides it: a program's results must equal those of running each of its
instructions' own kernels in order, on the same backend, exactly."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from lamina.ndarray import get_include
from lamina.ndarray._interface import PROGRAM_OPS
from lamina.ndarray.conformance._harness import LARGE, get, put, sample


def _need(backend):
    if not hasattr(backend, "ewise_program"):
        pytest.skip("backend has no ewise_program (optional)")


def _kernel(name, kind):
    return name if kind == "scalar" else f"ewise_{name}"


def _program(backend, rng, length, buffers, temps):
    """Random instructions (of the ops the backend has) whose operands are inputs,
    written buffers or temps."""
    have = [i for i, (name, kind) in enumerate(PROGRAM_OPS)
            if hasattr(backend, _kernel(name, kind))]
    code, scalars, written = [], [], list(range(buffers))
    for _ in range(length):
        op = int(rng.choice(have))
        name, kind = PROGRAM_OPS[op]
        a = int(rng.choice(written))
        b = int(rng.choice(written)) if kind == "binary" else 0
        if kind == "scalar":
            scalars.append(float(rng.uniform(0.5, 2.0)))
            b = len(scalars) - 1
        dst = int(rng.integers(buffers)) if rng.random() < 0.4 else -1 - int(rng.integers(temps))
        if dst not in written:
            written.append(dst)
        code += [op, dst, a, b]
    return code, scalars


def _unfused(backend, bufs, code, scalars, n, dtype):
    """Each instruction's own kernel over whole buffers (temporaries of n elements)."""
    temps = {}

    def at(x):
        if x >= 0:
            return bufs[x]
        return temps.setdefault(x, backend.Array(n, dtype))

    for i in range(0, len(code), 4):
        op, dst, a, b = code[i:i + 4]
        name, kind = PROGRAM_OPS[op]
        kernel = getattr(backend, _kernel(name, kind))
        if kind == "binary":
            kernel(at(a), at(b), at(dst))
        elif kind == "scalar":
            kernel(at(a), scalars[b], at(dst))
        else:
            kernel(at(a), at(dst))


@pytest.mark.parametrize("n, length", [(1, 12), (7, 12), (1024, 12), (3000, 12),
                                       (LARGE // 8, 12), (7, 100), (3000, 100)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ewise_program_equals_its_kernels(lamina_backend, n, length, dtype, seed):
    """Programs of 12 instructions, and of 100 (longer than a backend may run in one
    piece), with temporaries live across the whole program."""
    _need(lamina_backend)
    rng = np.random.default_rng(seed)
    code, scalars = _program(lamina_backend, rng, length, 3, 4)
    values = [np.abs(sample(dtype, n, seed + k)) + 0.5 for k in range(3)]  # log, sqrt
    fused = [put(lamina_backend, v) for v in values]
    alone = [put(lamina_backend, v) for v in values]
    with np.errstate(all="ignore"):
        lamina_backend.ewise_program(fused, code, scalars, n)
        _unfused(lamina_backend, alone, code, scalars, n, dtype)
    for k in range(3):
        np.testing.assert_array_equal(get(lamina_backend, fused[k]),
                                      get(lamina_backend, alone[k]), err_msg=f"buffer {k}")


def test_ewise_program_uses_only_the_first_n(lamina_backend):
    _need(lamina_backend)
    a = put(lamina_backend, np.arange(6, dtype=np.float32))
    add = next(i for i, (name, _) in enumerate(PROGRAM_OPS) if name == "scalar_add")
    lamina_backend.ewise_program([a], [add, 0, 0, 0], [10.0], 4)
    assert get(lamina_backend, a).tolist() == [10.0, 11.0, 12.0, 13.0, 4.0, 5.0]


@pytest.mark.parametrize("code, scalars, error, match", [
    ([99, 0, 0, 0], [], ValueError, "op 99 is out of range"),
    ([0, 0, 5, 0], [], ValueError, "operand 5 is neither a buffer"),
    ([0, -40, 0, 0], [], ValueError, "destination -40 is neither a buffer"),
    ([7, 0, 0, 3], [1.0], ValueError, "value 3 is out of range"),
    ([0, 0, 0], [], ValueError, "not 4 per instruction"),
])
def test_ewise_program_rejects_bad_code(lamina_backend, code, scalars, error, match):
    _need(lamina_backend)
    a = put(lamina_backend, np.ones(4, np.float32))
    with pytest.raises(error, match=match):
        lamina_backend.ewise_program([a], code, scalars, 4)


def test_ewise_program_rejects_mixed_dtypes_and_short_buffers(lamina_backend):
    _need(lamina_backend)
    a = put(lamina_backend, np.ones(4, np.float32))
    if "float64" in lamina_backend.dtypes:
        b = put(lamina_backend, np.ones(4, np.float64))
        with pytest.raises(TypeError, match="a program runs on one dtype"):
            lamina_backend.ewise_program([a, b], [0, 0, 0, 1], [], 4)
    with pytest.raises(ValueError, match="buffer 0 has 4 elements"):
        lamina_backend.ewise_program([a], [0, 0, 0, 0], [], 5)


def test_the_header_lists_the_program_ops_in_order():
    """lamina/program_ops.h (the compiled backends' numbering) and PROGRAM_OPS agree."""
    text = (Path(get_include()) / "lamina" / "program_ops.h").read_text()
    entries = re.findall(r"X\((\w+), (\w+), (\w+)\)", text.split("#define", 1)[1])
    assert [(name, kind.lower()) for name, _, kind in entries] == list(PROGRAM_OPS)
