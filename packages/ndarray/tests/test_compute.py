"""Every compute op against numpy, on every available device."""

import dataclasses

import lamina.ndarray as nd
import numpy as np
import pytest

RNG = np.random.default_rng(0)


def rand(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def close(a: nd.NDArray, ref: np.ndarray, rtol: float = 1e-5, atol: float = 1e-5) -> None:
    got = a.numpy()
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=atol)


BINARY = [
    (lambda a, b: a + b, np.add), (lambda a, b: a - b, np.subtract),
    (lambda a, b: a * b, np.multiply), (lambda a, b: a / b, np.divide),
    (lambda a, b: a.maximum(b), np.maximum), (lambda a, b: a.minimum(b), np.minimum),
    (lambda a, b: a == b, np.equal), (lambda a, b: a != b, np.not_equal),
    (lambda a, b: a < b, np.less), (lambda a, b: a <= b, np.less_equal),
    (lambda a, b: a > b, np.greater), (lambda a, b: a >= b, np.greater_equal),
]


@pytest.mark.parametrize("op,ref", BINARY)
@pytest.mark.parametrize("shapes", [((3, 4), (3, 4)), ((2, 1, 4), (3, 1)), ((5,), ())])
def test_binary_ops_broadcast(device, op, ref, shapes):
    x, y = rand(*shapes[0]), rand(*shapes[1])
    y = np.where(np.abs(y) < 0.1, 0.5, y).astype(np.float32)
    y.reshape(-1)[:1] = x.reshape(-1)[:1] if x.shape == y.shape else y.reshape(-1)[:1]
    out = op(nd.array(x, device=device), nd.array(y, device=device))
    expected = ref(x, y)
    if expected.dtype == np.bool_ and "bool" not in nd.get_device(device).dtypes:
        expected = expected.astype(np.float32)  # interface v1.0: comparisons give 1/0
    assert out.dtype == nd.as_dtype(expected.dtype)
    close(out, expected)


@pytest.mark.parametrize("op,ref", [
    (lambda a: a + 2, lambda x: x + 2), (lambda a: 2 + a, lambda x: 2 + x),
    (lambda a: a - 2, lambda x: x - 2), (lambda a: 2 - a, lambda x: 2 - x),
    (lambda a: a * 3, lambda x: x * 3), (lambda a: 3 / a, lambda x: 3 / x),
    (lambda a: a / 3, lambda x: x / 3), (lambda a: a ** 2, lambda x: x ** 2),
    (lambda a: 2 ** a, lambda x: 2 ** x), (lambda a: a.abs() ** 0.5, lambda x: np.abs(x) ** .5),
    (lambda a: a > 0, lambda x: (x > 0).astype(np.float32)),
    (lambda a: a.maximum(0.0), lambda x: np.maximum(x, 0)),
])
def test_scalar_ops(device, op, ref):
    x = rand(4, 6)
    close(op(nd.array(x, device=device)), ref(x).astype(np.float32))


INPLACE = [
    (lambda a, b: a.__iadd__(b), np.add), (lambda a, b: a.__isub__(b), np.subtract),
    (lambda a, b: a.__imul__(b), np.multiply), (lambda a, b: a.__itruediv__(b), np.divide),
]


@pytest.mark.parametrize("op,ref", INPLACE)
@pytest.mark.parametrize("other", ["same shape", "broadcast row", "python float", "python int",
                                   "float64 array", "the array itself"])
@pytest.mark.parametrize("target", ["compact", "transposed view", "leading rows"])
def test_inplace_operators_write_into_the_array(device, op, ref, other, target):
    # "leading rows" is compact too (element i is its buffer's element i) but
    # its buffer goes on: the rows after it must keep their values.
    x, y = rand(3, 4), np.where(np.abs(rand(3, 4)) < 0.1, 0.5, rand(3, 4)).astype(np.float32)
    rest = np.full((2, 4), 7.0, np.float32)
    base = nd.array({"compact": x, "transposed view": x.T.copy(),
                     "leading rows": np.concatenate([x, rest])}[target], device=device)
    a = base[:3] if target == "leading rows" else base
    if target == "transposed view":
        a = base.permute((1, 0))
    alias = base.reshape(base.size)  # a view of the same storage sees the update
    b = {"same shape": nd.array(y, device=device), "broadcast row": nd.array(y[0], device=device),
         "python float": 0.75, "python int": 3, "float64 array": nd.array(y.astype(np.float64),
                                                                          device=device),
         "the array itself": a}[other]
    expected = ref(x, {"broadcast row": y[0], "python float": 0.75, "python int": 3,
                       "the array itself": x}.get(other, y)).astype(np.float32)
    out = op(a, b)
    assert out is a and a.dtype == nd.float32
    close(a, expected)
    seen = {"compact": expected, "transposed view": expected.T,
            "leading rows": np.concatenate([expected, rest])}[target]
    close(alias, seen.reshape(-1))


@pytest.mark.parametrize("target", ["compact", "transposed view", "leading rows"])
@pytest.mark.parametrize("other", ["same shape", "broadcast row", "python float"])
def test_add_scaled_is_the_operators_bit_for_bit(device, target, other):
    x, y = rand(3, 4), rand(3, 4)
    base = nd.array(np.concatenate([x, x]) if target == "leading rows" else x, device=device)
    a = base[:3] if target == "leading rows" else base
    if target == "transposed view":
        a = base.permute((1, 0))
    b = {"same shape": y if target != "transposed view" else y.T.copy(),
         "broadcast row": y[0, :a.shape[1]], "python float": 0.75}[other]
    b = b if other == "python float" else nd.array(b, device=device)
    want = (a + b * -0.3).numpy()  # b * alpha rounded, then the add
    out = nd.add_scaled_(a, b, -0.3)
    assert out is a
    np.testing.assert_array_equal(a.numpy(), want)
    if target == "leading rows":  # the rows after the view keep their values
        np.testing.assert_array_equal(base.numpy()[3:], x)


@pytest.mark.parametrize("target", ["whole buffer", "leading rows", "transposed view"])
def test_blend_is_the_operators_bit_for_bit(device, target):
    # a running average's update, a * keep + b * take, in place: one ewise_program
    # pass on a whole buffer, the operators on a view, the same bits either way
    x, y = rand(3, 4), rand(3, 4)
    base = nd.array(np.concatenate([x, x]) if target == "leading rows" else x, device=device)
    a = {"whole buffer": base, "leading rows": base[:3],
         "transposed view": base.permute((1, 0))}[target]
    b = nd.array(y if target != "transposed view" else y.T.copy(), device=device)
    keep, take = 0.9, 0.1 * 128 / 127
    want = (a * keep + b * take).numpy()
    assert nd.blend_(a, b, keep, take) is a
    np.testing.assert_array_equal(a.numpy(), want)
    if target == "leading rows":  # the rows after the view keep their values
        np.testing.assert_array_equal(base.numpy()[3:], x)


def test_inplace_operator_errors_leave_the_array_unchanged(device):
    a = nd.array(np.arange(3), device=device)
    a += 2  # int64 stays int64
    assert a.dtype == nd.int64 and a.numpy().tolist() == [2, 3, 4]
    with pytest.raises(nd.DTypeError, match="add in place: the result is float"):
        a += 0.5
    row = nd.array(np.ones(3, np.float32), device=device)
    with pytest.raises(nd.ShapeError, match=r"sub in place: the result has shape \(2, 3\)"):
        row -= nd.array(np.ones((2, 3), np.float32), device=device)
    assert a.numpy().tolist() == [2, 3, 4] and row.numpy().tolist() == [1, 1, 1]


@pytest.mark.parametrize("name", ["neg", "abs", "exp", "log", "sqrt", "tanh", "sin", "cos",
                                  "sign"])
def test_unary_ops_on_views(device, name):
    x = rand(5, 7)
    if name in ("log", "sqrt"):
        x = np.abs(x) + 0.1
    a = nd.array(x, device=device).T[::2]
    got = -a if name == "neg" else getattr(a, name)()
    close(got, getattr(np, {"neg": "negative"}.get(name, name))(x.T[::2]))


@pytest.mark.parametrize("axis", [None, 0, 1, -1, (0, 2), (1, 2), (0, 1, 2)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "max", "min", "mean"])
def test_reductions(device, axis, keepdims, name):
    x = rand(3, 4, 5)
    a = nd.array(x, device=device)
    close(getattr(a, name)(axis=axis, keepdims=keepdims),
          getattr(np, name)(x, axis=axis, keepdims=keepdims), rtol=1e-4)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_argmax(device, axis):
    x = rand(4, 6)
    got = nd.array(x, device=device).argmax(axis=axis)
    assert got.dtype == nd.int64
    np.testing.assert_array_equal(got.numpy(), np.argmax(x, axis=axis))


def test_reductions_on_non_contiguous_and_empty(device):
    x = rand(6, 8)
    a = nd.array(x, device=device).T[::-1, 1::2]
    close(a.sum(0), x.T[::-1, 1::2].sum(0), rtol=1e-4)
    close(a.max(1), x.T[::-1, 1::2].max(1))
    empty = nd.zeros((0, 3), device=device)
    close(empty.sum(0), np.zeros(3, np.float32))
    with pytest.raises(nd.ShapeError, match="max: cannot reduce an empty axis"):
        empty.max(0)


@pytest.mark.parametrize("sa,sb", [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((5, 3), (3, 4)), ((2, 5, 3), (3, 4)),
    ((2, 5, 3), (2, 3, 4)), ((1, 5, 3), (4, 3, 2)), ((3, 1, 2, 3), (5, 3, 4)),
    ((64, 70), (70, 33)),
])
def test_matmul(device, sa, sb):
    x, y = rand(*sa), rand(*sb)
    close(nd.array(x, device=device) @ nd.array(y, device=device), x @ y, rtol=1e-4,
          atol=1e-4)


def test_matmul_of_transposed_views(device):
    x, y = rand(7, 5), rand(7, 3)
    close(nd.array(x, device=device).T @ nd.array(y, device=device), x.T @ y, rtol=1e-4)


@pytest.mark.parametrize("view", ["heads", "k transposed", "broadcast", "flipped"])
def test_batched_matmul_of_strided_views(device, view):
    # Attention's operands: head splits and transposes of a (B, T, 3, H, D)
    # projection, a broadcast batch, and a negative stride (compacted first).
    qkv = rand(2, 6, 3, 4, 5)
    a = nd.array(qkv, device=device)
    q, k = a[:, :, 0].permute(0, 2, 1, 3), a[:, :, 1].permute(0, 2, 3, 1)
    nq, nk = qkv[:, :, 0].transpose(0, 2, 1, 3), qkv[:, :, 1].transpose(0, 2, 3, 1)
    if view == "heads":
        got, want = q @ k.permute(0, 1, 3, 2).compact().permute(0, 1, 3, 2), nq @ nk
    elif view == "k transposed":
        got, want = q @ k, nq @ nk
    elif view == "broadcast":
        got, want = q @ k[:1], nq @ nk[:1]
    else:
        got, want = q[:, :, ::-1] @ k, nq[:, :, ::-1] @ nk
    close(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("xs", [(4,), (1, 4), (1, 1, 4), (3, 4), (2, 3, 4), (0, 4)])
@pytest.mark.parametrize("with_bias", [True, False])
def test_linear(device, xs, with_bias):
    # one row takes the in-place bias add, more rows the broadcast one
    x, w, b = rand(*xs), rand(5, 4), rand(5)
    xa, wa, ba = (nd.array(v, device=device) for v in (x, w, b))
    got = nd.linear(xa, wa, ba if with_bias else None)
    close(got, x @ w.T + b if with_bias else x @ w.T, rtol=1e-4, atol=1e-4)
    close(xa, x)  # the operands are left as they were
    close(wa, w)
    close(ba, b)


def test_linear_bias_of_another_dtype_promotes(device):
    if "float64" not in nd.get_device(device).dtypes:
        pytest.skip(f"{device} has no float64")
    x, w, b = rand(1, 4), rand(3, 4), rand(3).astype(np.float64)
    got = nd.linear(*(nd.array(v, device=device) for v in (x, w, b)))
    assert got.dtype == nd.float64
    close(got, x @ w.T + b, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shapes,message", [
    (((2, 3), (5, 4), (5,)), r"linear: input of shape \(2, 3\) does not fit weight \(5, 4\)"),
    (((2, 4), (5, 4), (4,)), r"linear: bias must have shape \(5,\) for weight \(5, 4\)"),
    (((2, 4), (4,), None), r"linear: weight must be 2-D"),
    (((), (5, 4), None), r"linear: input of shape \(\) does not fit"),
])
def test_linear_errors(device, shapes, message):
    args = [None if s is None else nd.array(rand(*s), device=device) for s in shapes]
    with pytest.raises(nd.ShapeError, match=message):
        nd.linear(*args)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adadelta_step_program_and_composite_agree(device, dtype, weight_decay):
    # One ewise_program pass and the kernels op by op round each step alike.
    dev = nd.get_device(device)
    if dtype not in dev.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    rng = np.random.default_rng(5)
    p0, g, v, u = (rng.uniform(0 if i > 1 else -1, 1, (5, 37)).astype(dtype) for i in range(4))
    kw = dict(lr=0.5, rho=0.9, eps=1e-6, weight_decay=weight_decay)
    results = []
    for program in (True, False):
        table = dev.kernels
        if not program:
            dev.kernels = dataclasses.replace(table, ewise_program=None)
        try:
            arrays = [nd.array(a, device=device) for a in (p0, g, v, u)]
            out = nd.adadelta_step_(*arrays, **kw)
        finally:
            dev.kernels = table
        assert out[0] is arrays[0]  # in place
        np.testing.assert_array_equal(arrays[2].numpy(), v)  # the old state is kept
        results.append([x.numpy() for x in out])
    for name, a, b in zip(("param", "square_avg", "acc_delta"), *results, strict=True):
        np.testing.assert_array_equal(a, b, err_msg=name)
    g64 = g.astype(np.float64) + weight_decay * p0
    v64 = 0.9 * v + 0.1 * g64**2
    d64 = np.sqrt(u + 1e-6) / np.sqrt(v64 + 1e-6) * g64
    want = (p0 - 0.5 * d64, v64, 0.9 * u + 0.1 * d64**2)
    for got, ref in zip(results[0], want, strict=True):
        np.testing.assert_allclose(got, ref.astype(dtype), rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("variant", ["adam", "adam l2", "adamw", "amsgrad"])
def test_adam_step_kernel_and_composite_agree(device, dtype, variant):
    # The backend's one-pass kernel and the composite of scalar and elementwise
    # kernels round each step alike: identical results, bit for bit.
    dev = nd.get_device(device)
    if dtype not in dev.dtypes:
        pytest.skip(f"{device} has no {dtype}")
    rng = np.random.default_rng(3)
    p, g, m = (nd.array(rng.uniform(-1, 1, (7, 33)).astype(dtype), device=device)
               for _ in range(3))
    v = nd.array(rng.uniform(0, 1, (7, 33)).astype(dtype), device=device)
    vmax = v * 1.5 if variant == "amsgrad" else None
    kw = dict(lr=1e-2, beta1=0.9, beta2=0.99, eps=1e-8, step=3,
              weight_decay=0.0 if variant == "adam" else 0.1, decoupled=variant == "adamw",
              max_exp_avg_sq=vmax)
    got = nd.adam_step(p, g, m, v, **kw)
    table = dev.kernels
    dev.kernels = dataclasses.replace(table, adam_step=None)  # the composite
    try:
        want = nd.adam_step(p, g, m, v, **kw)
    finally:
        dev.kernels = table
    for name, a, b in zip(("param", "exp_avg", "exp_avg_sq", "max_exp_avg_sq"), got, want,
                          strict=True):
        if b is None:
            assert a is None
            continue
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)
    # against the update written out in float64 numpy
    p64, g64, m64, v64 = (x.numpy().astype(np.float64) for x in (p, g, m, v))
    if variant == "adamw":
        p64 = p64 * (1 - 1e-2 * 0.1)
    elif variant != "adam":
        g64 = g64 + 0.1 * p.numpy()
    m64 = 0.9 * m64 + 0.1 * g64
    v64 = 0.99 * v64 + 0.01 * g64**2
    v_hat = np.maximum(vmax.numpy(), v64) if vmax is not None else v64
    want64 = p64 - 1e-2 / (1 - 0.9**3) * m64 / (np.sqrt(v_hat) / np.sqrt(1 - 0.99**3) + 1e-8)
    close(got[0], want64.astype(dtype), rtol=1e-5, atol=1e-6)
    close(got[1], m64.astype(dtype), rtol=1e-5, atol=1e-6)


def test_take_and_scatter_add(device):
    x = rand(4, 5, 3)
    idx = np.array([[4, 0], [1, 4]])
    a = nd.array(x, device=device)
    i = nd.array(idx, device=device)
    close(a.take(i, axis=1), np.take(x, idx, axis=1))
    src = rand(4, 2, 2, 3)
    got = nd.scatter_add(nd.array(src, device=device), i, axis=1, size=5)
    ref = np.zeros((4, 5, 3), np.float32)
    np.add.at(ref, (slice(None), idx), src)
    close(got, ref)
    with pytest.raises(IndexError, match="out of range"):
        a.take(nd.array([5], device=device), axis=1)


def test_one_hot_where_stack_concatenate(device):
    labels = nd.array([2, 0, 1, 2], device=device)
    close(nd.one_hot(labels, 3), np.eye(3, dtype=np.float32)[[2, 0, 1, 2]])
    x, y = rand(2, 3), rand(2, 3)
    a, b = nd.array(x, device=device), nd.array(y, device=device)
    close(nd.where(a > b, a, b), np.where(x > y, x, y))
    close(nd.where(a > 0, a, float("-inf")).exp(), np.exp(np.where(x > 0, x, -np.inf)))
    close(nd.stack([a, b], axis=1), np.stack([x, y], axis=1))
    close(nd.concatenate([a, b, a], axis=-1), np.concatenate([x, y, x], axis=-1))
    with pytest.raises(IndexError, match="class index 3 is out of range for 3 classes"):
        nd.one_hot(nd.array([3], device=device), 3)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_where_fast_path_matches_numpy_for_every_operand_form(device, dtype):
    """Arrays of the condition's shape, 0-d arrays, Python numbers, views, NaNs."""
    x = rand(3, 5).astype(dtype)
    x[0, 1] = np.nan
    y = rand(3, 5).astype(dtype)
    a, b = nd.array(x, device=device), nd.array(y, device=device)
    cond = a > b
    c = cond.numpy()
    zero = nd.array(np.array(0.5, dtype), device=device)
    cases = [(a, b, x, y), (a, 2, x, 2.0), (-1.5, b, -1.5, y), (zero, b, 0.5, y),
             (a, zero, x, 0.5), (a.T.T, b[:, :], x, y), (a, b.T.T, x, y)]
    for first, second, ref1, ref2 in cases:
        got = nd.where(cond, first, second)
        assert got.dtype.name == dtype and got.shape == (3, 5)
        np.testing.assert_array_equal(got.numpy(), np.where(c, ref1, ref2).astype(dtype))
    # a transposed condition or operand takes the general path: the same values
    np.testing.assert_array_equal(nd.where(cond.T, a.T, 0.0).numpy(), np.where(c.T, x.T, 0))
    np.testing.assert_array_equal(nd.where(cond, a, b.T.T[:, ::1]).numpy(), np.where(c, x, y))
    assert nd.where(cond, a, 1).dtype.name == dtype  # a Python number keeps the float dtype


def test_where_fast_path_on_int64_keeps_ints_and_promotes_for_floats(device):
    t = nd.array([3, -100, 1, -100], device=device)
    valid = t != -100
    assert nd.where(valid, t, 0).tolist() == [3, 0, 1, 0]
    assert nd.where(valid, 7, t).tolist() == [7, -100, 7, -100]
    halves = nd.where(valid, t, 0.5)
    assert halves.dtype.name == "float32" and halves.tolist() == [3.0, 0.5, 1.0, 0.5]


@pytest.mark.parametrize("axis", [0, -1])
def test_softmax_and_logsumexp(device, axis):
    x = rand(4, 9) * 10
    a = nd.array(x, device=device)
    e = np.exp(x - x.max(axis, keepdims=True))
    close(a.softmax(axis), e / e.sum(axis, keepdims=True), rtol=1e-4, atol=1e-6)
    ref = np.log(np.exp(x - x.max(axis, keepdims=True)).sum(axis)) + x.max(axis)
    close(a.logsumexp(axis), ref, rtol=1e-4)
    inf = nd.full((2, 3), float("-inf"), device=device)
    assert np.all(np.isneginf(inf.logsumexp(-1).numpy()))


def _without(device: str, kernel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hide an optional kernel of ``device``'s backend so the composite path runs."""
    backend = nd.get_device(device).backend
    if hasattr(backend, kernel):
        owner = backend if kernel in vars(backend) else type(backend)
        monkeypatch.delattr(owner, kernel)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composite"])
@pytest.mark.parametrize("shape", [(1, 2), (3, 7), (2, 3, 128), (0, 5)])
def test_layer_norm_backward(device, shape, fused, monkeypatch):
    if not fused:
        _without(device, "layer_norm_backward_last", monkeypatch)
    x, g = (rand(*shape) + 5).astype(np.float32), rand(*shape).astype(np.float32)
    w = rand(shape[-1]).astype(np.float32)
    arrays = [nd.array(v, device=device) for v in (g, x, w)]
    _, mean, rstd = nd.layer_norm(arrays[1], arrays[2], nd.array(w, device=device))
    dx, dw, db = nd.layer_norm_backward(*arrays, mean, rstd)
    wide = x.astype(np.float64)
    xhat = (wide - mean.numpy()) * rstd.numpy()
    gw = g * w.astype(np.float64)
    rows = tuple(range(len(shape) - 1))
    want_dx = (gw - gw.mean(-1, keepdims=True) - xhat * (gw * xhat).mean(-1, keepdims=True)) \
        * rstd.numpy()
    assert dx.shape == shape and dw.shape == db.shape == shape[-1:]
    close(dx, want_dx.astype(np.float32), rtol=1e-3, atol=1e-3)
    close(dw, (g * xhat).sum(rows).astype(np.float32), rtol=1e-3, atol=1e-3)
    close(db, g.astype(np.float64).sum(rows).astype(np.float32), rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composite"])
@pytest.mark.parametrize("shape,axis", [((1, 1), -1), ((3, 7), -1), ((2, 3, 128), 2),
                                        ((0, 5), -1), ((4, 6), 0)])
def test_log_softmax_backward(device, shape, axis, fused, monkeypatch):
    if not fused:
        _without(device, "log_softmax_backward_last", monkeypatch)
    x, g = rand(*shape).astype(np.float64), rand(*shape)
    out = x - np.log(np.exp(x).sum(axis, keepdims=True))
    got = nd.log_softmax_backward(nd.array(g, device=device),
                                  nd.array(out.astype(np.float32), device=device), axis)
    want = g - np.exp(out) * g.astype(np.float64).sum(axis, keepdims=True)
    close(got, want.astype(np.float32), rtol=1e-4, atol=1e-5)


def test_log_softmax_backward_errors(device):
    a = nd.array(rand(2, 3), device=device)
    with pytest.raises(nd.ShapeError, match="log_softmax_backward: gradient"):
        nd.log_softmax_backward(a, nd.array(rand(3, 2), device=device))
    with pytest.raises(nd.DTypeError, match="log_softmax_backward: gradient float32"):
        nd.log_softmax_backward(a, a.astype(nd.float64))


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composite"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (2, 3, 128)])
def test_layer_norm(device, shape, fused, monkeypatch):
    if not fused:
        _without(device, "layer_norm_last", monkeypatch)
    x = (rand(*shape) + 50).astype(np.float32)  # |mean| >> std
    w, b = rand(shape[-1]), rand(shape[-1])
    out, mean, rstd = nd.layer_norm(*(nd.array(v, device=device) for v in (x, w, b)), eps=1e-5)
    wide = x.astype(np.float64)
    mu = wide.mean(-1, keepdims=True)
    inv = 1 / np.sqrt(((wide - mu) ** 2).mean(-1, keepdims=True) + 1e-5)
    close(out, ((wide - mu) * inv * w + b).astype(np.float32), rtol=1e-3, atol=1e-3)
    close(mean, mu.astype(np.float32))
    close(rstd, inv.astype(np.float32), rtol=1e-3)
    with pytest.raises(nd.ShapeError, match=r"layer_norm: weight \(3,\) and bias \(7,\)"):
        nd.layer_norm(nd.array(rand(2, 7), device=device), nd.array(rand(3), device=device),
                      nd.array(rand(7), device=device))


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composite"])
def test_erf(device, fused, monkeypatch):
    import math

    if not fused:
        _without(device, "ewise_erf", monkeypatch)
    x = np.concatenate([np.linspace(-6, 6, 97), [0.0, 1e-8, -1e-8]])
    got = nd.array(x, device=device).erf()
    close(got, np.array([math.erf(v) for v in x]), rtol=0, atol=1.5e-7)


@pytest.mark.parametrize("fused", [True, False], ids=["fused", "composite"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(device, approximate, fused, monkeypatch):
    import math

    if not fused:
        _without(device, "ewise_erf", monkeypatch)
    x = np.concatenate([np.linspace(-6, 6, 97), [0.0, 1e-8, -1e-8]]).astype(np.float32)
    wide = x.astype(np.float64)
    if approximate == "none":
        ref = wide / 2 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in wide]))
    else:
        ref = wide / 2 * (1 + np.tanh(math.sqrt(2 / math.pi) * (wide + 0.044715 * wide ** 3)))
    a = nd.array(x.reshape(4, 25), device=device)
    close(nd.gelu(a, approximate), ref.reshape(4, 25), rtol=1e-5, atol=1e-6)
    close(nd.gelu(a.T, approximate), ref.reshape(4, 25).T, rtol=1e-5, atol=1e-6)  # a view
    close(a, x.reshape(4, 25))  # the input is left as it was
    ints = nd.gelu(nd.array([-2, 0, 3], device=device), approximate)
    assert ints.dtype == nd.float32
    close(ints, nd.gelu(nd.array([-2.0, 0.0, 3.0], device=device), approximate).numpy())
    with pytest.raises(ValueError, match="gelu: approximate must be 'none' or 'tanh'"):
        nd.gelu(a, "fast")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_backward_one_pass_equals_the_composite_bit_for_bit(device, approximate, dtype,
                                                                   monkeypatch):
    import math

    import lamina.ndarray._fused as fused

    if dtype not in nd.get_device(device).dtypes:
        pytest.skip(f"{device} has no {dtype}")
    x = np.concatenate([np.linspace(-14, 14, 197), [0.0, 1e-8, -1e-8, np.nan]]).astype(dtype)
    g = np.random.default_rng(3).standard_normal(x.size).astype(dtype)
    a, ga = nd.array(x.reshape(3, 67), device=device), nd.array(g.reshape(3, 67), device=device)
    got = nd.gelu_backward(a, ga, approximate).numpy()
    assert np.array_equal(got, (ga * fused.gelu_slope(a, approximate)).numpy(), equal_nan=True)
    monkeypatch.setattr(fused, "_run_program", lambda *args: False)
    assert np.array_equal(got, nd.gelu_backward(a, ga, approximate).numpy(), equal_nan=True)
    wide = x.astype(np.float64)
    if approximate == "none":
        slope = 0.5 * (1 + np.array([math.erf(v / math.sqrt(2)) for v in wide])) \
            + wide * np.exp(-wide ** 2 / 2) / math.sqrt(2 * math.pi)
    else:
        u = math.sqrt(2 / math.pi) * (wide + 0.044715 * wide ** 3)
        du = math.sqrt(2 / math.pi) * (1 + 3 * 0.044715 * wide ** 2)
        slope = 0.5 * (1 + np.tanh(u)) + 0.5 * wide * (1 - np.tanh(u) ** 2) * du
    # the tanh form's 1 - tanh(u)^2 cancels where tanh saturates: float32 keeps 1e-7 of it
    atol = 3e-5 if (dtype, approximate) == ("float32", "tanh") else 1e-6
    np.testing.assert_allclose(got.reshape(-1), g * slope, rtol=1e-5, atol=atol)
    np.testing.assert_array_equal(nd.gelu_backward(a.T, ga.T, approximate).numpy(), got.T)
    with pytest.raises(nd.ShapeError, match="gelu_backward: input .* differ in shape"):
        nd.gelu_backward(a, ga.T, approximate)
    with pytest.raises(ValueError, match="gelu_backward: approximate must be"):
        nd.gelu_backward(a, ga, "fast")


@pytest.mark.parametrize("geom", [(3, 1, 1, 1), (3, 2, 1, 1), (2, 1, 0, 2), (1, 1, 0, 1)])
def test_im2col_col2im_adjoint(device, geom):
    k, s, p, d = geom
    x = rand(2, 3, 7, 6)
    a = nd.array(x, device=device)
    cols = nd.im2col(a, k, s, p, d)
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    oh, ow = cols.shape[1:3]
    ref = np.empty(cols.shape, np.float32)
    for i in range(k):
        for j in range(k):
            ref[..., i, j] = xp[:, :, i * d:i * d + s * (oh - 1) + 1:s,
                                j * d:j * d + s * (ow - 1) + 1:s].transpose(0, 2, 3, 1)
    close(cols, ref)
    g = rand(*cols.shape)  # <im2col(x), g> == <x, col2im(g)>
    back = nd.col2im(nd.array(g, device=device), x.shape, k, s, p, d)
    np.testing.assert_allclose((ref * g).sum(), (x * back.numpy()).sum(), rtol=1e-4)


@pytest.mark.parametrize("geom", [(1, 0, 1), (2, 1, 1), (1, 2, 2)])
def test_conv2d_kernels_match_the_composite(device, geom, monkeypatch):
    """nd.conv2d and its gradients give the same values on the device's kernels and on
    im2col, matmul and col2im (what a device without the kernels runs)."""
    from lamina.ndarray import _conv

    s, p, d = geom
    x, w = nd.array(rand(2, 3, 9, 8), device=device), nd.array(rand(4, 3, 3, 2), device=device)
    g = nd.array(rand(*nd.conv2d(x, w, s, p, d).shape), device=device)

    def run() -> list[np.ndarray]:
        return [nd.conv2d(x, w, s, p, d).numpy(),
                nd.conv2d_backward_input(g, w, x.shape, s, p, d).numpy(),
                nd.conv2d_backward_weight(x, g, w.shape, s, p, d).numpy()]

    assert nd.has_conv2d(x) == (device in ("numpy", "cpu"))
    got = run()
    monkeypatch.setattr(_conv, "has_conv2d", lambda a: False)
    for a, b in zip(got, run()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    with pytest.raises(nd.ShapeError, match="conv2d: input .* must be 4-D with the same C"):
        nd.conv2d(x, nd.array(rand(4, 2, 3, 3), device=device))
    with pytest.raises(nd.ShapeError, match="conv2d_backward_weight: grad of shape"):
        nd.conv2d_backward_weight(x, x, w.shape, s, p, d)


def test_pad_arange_full_rand(device):
    x = rand(2, 3)
    close(nd.array(x, device=device).pad(((1, 0), (2, 1))), np.pad(x, ((1, 0), (2, 1))))
    np.testing.assert_array_equal(nd.arange(2, 11, 3, device=device).numpy(), [2, 5, 8])
    assert nd.arange(0.0, 1.0, 0.25, device=device).dtype == nd.float32
    close(nd.full((2, 2), 3.5, device=device), np.full((2, 2), 3.5, np.float32))
    nd.manual_seed(3)
    r1 = nd.rand(100, device=device).numpy()
    nd.manual_seed(3)
    r2 = nd.randn(100, device=device).numpy()
    nd.manual_seed(3)
    np.testing.assert_array_equal(nd.rand(100, device=device).numpy(), r1)
    assert 0 <= r1.min() and r1.max() < 1 and abs(r2.mean()) < 0.5


def test_large_elementwise(device):
    x = RNG.standard_normal(1_000_003).astype(np.float32)
    a = nd.array(x, device=device)
    close((a * 2 + 1).exp().log(), x * 2 + 1, rtol=1e-5, atol=1e-5)
    close(a.sum(), x.sum(dtype=np.float64).astype(np.float32), rtol=1e-4)


def test_item_tolist_repr_to(device):
    a = nd.array([[1.5, 2.0]], device=device)
    assert a[0, 1].item() == 2.0
    assert a.tolist() == [[1.5, 2.0]]
    assert f"device={device}" in repr(a)
    assert a.to("numpy").device.name == "numpy"
    assert np.asarray(a).shape == (1, 2)


# Reductions over broadcast (stride-0) views: values against numpy, and memory
# that stays that of the un-broadcast input, whatever the broadcast size.
BROADCAST_REDUCTIONS = [
    # (base shape, broadcast shape, axis)
    ((3, 1), (3, 5), 1), ((3, 1), (3, 5), 0), ((3, 1), (3, 5), None),
    ((1, 4), (6, 4), 0), ((1, 4), (6, 4), (0, 1)), ((4,), (2, 3, 4), (0, 2)),
    ((2, 1, 3), (2, 5, 3), 1), ((2, 1, 3), (4, 2, 5, 3), (0, 3)),
]


@pytest.mark.parametrize("base,target,axis,op", [
    (*case, op) for case in BROADCAST_REDUCTIONS for op in ("sum", "max", "min", "mean",
                                                           "argmax")
    if op != "argmax" or not isinstance(case[2], tuple)], ids=str)  # argmax: one axis
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_broadcast_view_matches_numpy(base, target, axis, op, keepdims):
    host = np.random.default_rng(0).standard_normal(base).astype(np.float32)
    view = nd.array(host, device="numpy").broadcast_to(target)
    want = getattr(np.broadcast_to(host, target), op)(axis=axis, keepdims=keepdims)
    got = getattr(view, op)(axis=axis, keepdims=keepdims)
    assert got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("op,want", [("sum", 2.0**26), ("mean", 1.0), ("max", 1.0),
                                     ("min", 1.0), ("argmax", 0)])
def test_reduce_over_a_huge_broadcast_allocates_nothing_large(op, want):
    import tracemalloc

    view = nd.ones((1,), device="numpy").broadcast_to((2**26,))  # 256 MiB if copied
    rows = nd.ones((3, 1), device="numpy").broadcast_to((3, 2**24))
    tracemalloc.start()
    try:
        got = getattr(view, op)().item()
        per_row = getattr(rows, op)(axis=1).tolist()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert got == want and per_row == [want / 4 if op == "sum" else want] * 3
    assert peak < 2 * 2**20, f"{op} allocated {peak} bytes at peak"


def test_take_and_scatter_add_with_a_prefix_view_of_a_longer_buffer(device):
    # idx[0:3] is compact but its buffer holds 5 indices: the kernels must see 3
    a = nd.arange(12, device=device).astype("float32")
    idx = nd.array([1, 0, 2, 2, 5], dtype="int64", device=device)
    assert a.take(idx[0:3]).tolist() == [1.0, 0.0, 2.0]
    assert a.reshape(6, 2).take(idx[0:2], 0).tolist() == [[2.0, 3.0], [0.0, 1.0]]
    assert nd.scatter_add(a[0:3], idx[0:3], 0, 4).tolist() == [1.0, 0.0, 2.0, 0.0]
