"""Constructors (eye, linspace, logspace), triangles and diagonals (tril, triu, diag,
diagonal, trace), products (mm, mv, dot, outer, bmm, addmm, baddbmm, einsum) and norms
against PyTorch: values, dtypes and gradients on every device, float64 gradient checks
(second order included), the subgradient at 0, and the errors."""

from __future__ import annotations

import math

import lamina.autograd as ag
import numpy as np
import pytest
import torch
from conftest import DEVICES, device_dtypes, float64_device

INF = math.inf


def _inputs(shapes: list[tuple[int, ...]], seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


# (id, f(lib, *xs), input shapes): lib is lamina.autograd or torch
PRODUCTS = [
    ("mm", lambda lib, a, b: lib.mm(a, b), [(2, 3), (3, 4)]),
    ("mm_method", lambda lib, a, b: a.mm(b), [(1, 3), (3, 2)]),
    ("mv", lambda lib, a, v: lib.mv(a, v), [(2, 3), (3,)]),
    ("mv_method", lambda lib, a, v: a.mv(v), [(1, 2), (2,)]),
    ("dot", lambda lib, a, b: a.dot(b), [(4,), (4,)]),
    ("outer_method", lambda lib, a, b: a.outer(b), [(1,), (3,)]),
    ("outer", lambda lib, a, b: lib.outer(a, b), [(3,), (2,)]),
    ("bmm", lambda lib, a, b: a.bmm(b), [(2, 2, 3), (2, 3, 4)]),
    ("addmm", lambda lib, c, a, b: lib.addmm(c, a, b), [(2, 4), (2, 3), (3, 4)]),
    ("addmm_scaled_broadcast", lambda lib, c, a, b: lib.addmm(c, a, b, beta=0.5, alpha=-2),
     [(4,), (2, 3), (3, 4)]),
    ("addmm_method", lambda lib, c, a, b: c.addmm(a, b, alpha=3), [(1, 4), (2, 3), (3, 4)]),
    ("baddbmm", lambda lib, c, a, b: lib.baddbmm(c, a, b, beta=2, alpha=0.5),
     [(2, 1, 4), (2, 3, 2), (2, 2, 4)]),
    ("baddbmm_method", lambda lib, c, a, b: c.baddbmm(a, b), [(2, 3, 4), (2, 3, 2), (2, 2, 4)]),
    ("tril", lambda lib, x: lib.tril(x), [(3, 4)]),
    ("tril_batched_offset", lambda lib, x: x.tril(diagonal=-1), [(2, 3, 4)]),
    ("triu", lambda lib, x: lib.triu(x, 1), [(4, 3)]),
    ("triu_negative", lambda lib, x: x.triu(-2), [(2, 4, 4)]),
    ("diag_vector", lambda lib, x: lib.diag(x), [(3,)]),
    ("diag_vector_above", lambda lib, x: x.diag(2), [(3,)]),
    ("diag_vector_below", lambda lib, x: lib.diag(x, -1), [(2,)]),
    ("diag_matrix", lambda lib, x: lib.diag(x), [(3, 4)]),
    ("diag_matrix_offset", lambda lib, x: x.diag(1), [(3, 4)]),
    ("diag_matrix_below", lambda lib, x: x.diag(-2), [(4, 3)]),
    ("diagonal", lambda lib, x: lib.diagonal(x, 1, 2, 0), [(3, 2, 4)]),
    ("diagonal_method", lambda lib, x: x.diagonal(-1, -1, -2), [(2, 3, 3)]),
    ("trace", lambda lib, x: x.trace(), [(3, 4)]),
    # transposed operands, whose gradients are computed in their layout
    ("matmul_transposed", lambda lib, a, b: a.mT @ b.mT, [(3, 2), (4, 3)]),
    ("matmul_broadcast_transposed", lambda lib, w, c: w @ c.mT, [(3, 4), (2, 5, 4)]),
    ("matmul_batch_times_transposed", lambda lib, x, w: x @ w.mT, [(2, 5, 4), (3, 4)]),
]

EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i, j", [(3,), (4,)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij->j", [(2, 2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->j", [(2, 3)]),
    ("Ab,bA", [(2, 3), (3, 2)]),
    ("bA,a", [(2, 3), (4,)]),
    ("ijk,jl,lk->i", [(2, 3, 4), (3, 5), (5, 4)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("i,i->", [(1,), (3,)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]),
    (",i->i", [(), (3,)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 4)]),
    ("...ij->...ji", [(5, 2, 3)]),
    ("i...,j...", [(2, 5), (3, 5)]),
    ("i...->i", [(2, 3, 4)]),
    ("b...i,b...i->b...", [(2, 3, 4), (2, 1, 4)]),
]

NORM_X = np.array([[1.0, -3.0, 3.0, 2.0], [0.0, 0.0, 0.0, 0.0], [0.5, 0.0, -2.0, 1.5]])

NORMS = [((), {}), ((2,), {}), ((1,), {"dim": 1}), ((2,), {"dim": 1, "keepdim": True}),
         ((3,), {"dim": 1}), ((1.5,), {"dim": 1}), ((0.5,), {"dim": 1}), ((-1,), {"dim": 1}),
         ((-2.5,), {"dim": 0}), ((0,), {"dim": 1}), ((0,), {}), ((INF,), {"dim": 1}),
         ((INF,), {}), ((-INF,), {"dim": 1}), (("fro",), {"dim": (0, 1)}),
         (("fro",), {"dim": 0}), ((3,), {"dim": (0, 1), "keepdim": True}),
         ((None,), {"dim": -1})]


def _compare(f, shapes, device: str, dtype: str = "float64", seed: int = 0) -> None:
    """Values and dtype, then the gradients of a weighted sum, equal torch's."""
    x0 = _inputs(shapes, seed)
    xs = [ag.tensor(a, dtype=dtype, device=device, requires_grad=True) for a in x0]
    ts = [torch.tensor(a, dtype=getattr(torch, dtype), requires_grad=True) for a in x0]
    y, u = f(ag, *xs), f(torch, *ts)
    assert y.shape == tuple(u.shape)
    assert y.dtype.name == str(u.dtype).removeprefix("torch.") and y.device == xs[0].device
    tol = {"rtol": 1e-10, "atol": 1e-12} if dtype == "float64" else {"rtol": 1e-5, "atol": 1e-5}
    np.testing.assert_allclose(y.detach().numpy(), u.detach().numpy(), **tol)
    w = np.random.default_rng(1).standard_normal(y.shape)
    (y * ag.tensor(w, dtype=dtype, device=device)).sum().backward()
    (u * torch.tensor(w, dtype=u.dtype)).sum().backward()
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), **tol)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("name", "f", "shapes"), PRODUCTS, ids=[c[0] for c in PRODUCTS])
def test_products_and_diagonals_match_torch(device, name, f, shapes):
    _compare(f, shapes, device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("equation", "shapes"), EINSUMS, ids=[e for e, _ in EINSUMS])
def test_einsum_matches_torch(device, equation, shapes):
    _compare(lambda lib, *xs: lib.einsum(equation, *xs), shapes, device)


@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_float32_results_keep_their_dtype(device, dtype):
    for f, shapes in [(lambda lib, a, b: lib.einsum("bij,bkj->bik", a, b), [(2, 3, 4)] * 2),
                      (lambda lib, c, a, b: lib.addmm(c, a, b, beta=2), [(3,), (2, 4), (4, 3)]),
                      (lambda lib, x: lib.tril(x).norm(3, dim=0), [(3, 3)]),
                      (lambda lib, x: lib.diag(x, 1), [(3,)])]:
        _compare(f, shapes, device, dtype)


def test_einsum_takes_a_list_of_operands():
    a, b = _inputs([(2, 3), (3, 4)])
    got = ag.einsum("ij,jk->ik", [ag.tensor(a), ag.tensor(b)])
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-12)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("args", "kwargs"), NORMS, ids=[f"{a}-{k}" for a, k in NORMS])
def test_norm_values_and_gradients_match_torch(device, args, kwargs):
    """Rows with ties (for inf) and with zeros, where the gradient is PyTorch's subgradient."""
    x = ag.tensor(NORM_X, device=device, requires_grad=True)
    t = torch.tensor(NORM_X, requires_grad=True)
    for y in (x.norm(*args, **kwargs), ag.norm(x, *args, **kwargs)):
        u = t.norm(*args, **kwargs)
        assert y.shape == tuple(u.shape) and y.dtype == ag.float64
        np.testing.assert_allclose(y.detach().numpy(), u.detach().numpy(), rtol=1e-12)
        x.grad, t.grad = None, None
        w = np.arange(1.0, 1.0 + u.numel()).reshape(u.shape)
        (y * ag.tensor(w, device=device)).sum().backward()
        (u * torch.tensor(w)).sum().backward()
        # torch leaves no gradient at all for ord 0, whose gradient is zero everywhere
        want = np.zeros(NORM_X.shape) if t.grad is None else t.grad.numpy()
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("ord", [2, 1, 3, 0.5, -1, INF, 0])
def test_vector_norm_of_zeros_has_zero_gradient_as_torch(device, ord):
    x0 = np.zeros((2, 3))
    x = ag.zeros(2, 3, dtype="float64", device=device, requires_grad=True)
    t = torch.zeros(2, 3, dtype=torch.float64, requires_grad=True)
    y, u = ag.vector_norm(x, ord, dim=1), torch.linalg.vector_norm(t, ord, dim=1)
    np.testing.assert_array_equal(y.detach().numpy(), u.detach().numpy())
    y.sum().backward()
    u.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 0 * x0 if t.grad is None else t.grad.numpy())


def test_norm_dtype_argument_converts_first():
    x = ag.tensor([3.0, 4.0])
    y = ag.norm(x, 2, dtype=ag.float64)
    assert y.dtype == ag.float64 and y.item() == 5.0


GRADCHECKS = [
    ("einsum_chain", lambda a, b, c: ag.einsum("ij,jk,kl->il", a, b, c),
     [(2, 3), (3, 4), (4, 2)]),
    ("einsum_diagonal", lambda a, b: ag.einsum("iij,jk->ik", a, b), [(2, 2, 3), (3, 2)]),
    ("baddbmm", lambda c, a, b: ag.baddbmm(c, a, b, beta=0.5, alpha=2),
     [(3,), (2, 2, 4), (2, 4, 3)]),
    ("norm2", lambda x: x.norm(dim=1), [(3, 4)]),
    ("norm3", lambda x: ag.norm(x, 3), [(2, 3)]),
    ("norm_half", lambda x: ag.norm(x, 0.5, dim=0), [(2, 3)]),
    ("tril_diag", lambda x: x.tril(-1) + ag.diag(x.diagonal()), [(3, 3)]),
    ("outer_dot", lambda a, b: ag.outer(a, b) * ag.dot(a, a), [(3,), (2,)]),
    ("matmul_transposed", lambda a, b: (a.mT @ b.mT) * a.sum(), [(3, 2), (4, 3)]),
    ("matmul_broadcast_transposed", lambda w, c: w @ c.mT, [(3, 4), (2, 5, 4)]),
]


@pytest.mark.parametrize(("name", "f", "shapes"), GRADCHECKS, ids=[g[0] for g in GRADCHECKS])
def test_gradcheck_first_and_second_order(name, f, shapes):
    device = float64_device()
    xs = [ag.tensor(a + np.sign(a), dtype="float64", device=device, requires_grad=True)
          for a in _inputs(shapes, seed=2)]  # away from 0, where |x| bends
    assert ag.gradcheck(f, xs)
    cot = ag.tensor(_inputs([f(*xs).shape], seed=3)[0], dtype="float64", device=device)

    def first_order(*ys):
        return ag.grad((f(*ys) * cot).sum(), ys, create_graph=True)

    assert ag.gradcheck(first_order, xs, atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_matmul_gradient_of_a_transposed_operand_arrives_compact(device):
    """The gradient of x.mT is computed transposed, so x's gradient is compact and
    whatever consumes it next (a reshape, an accumulation) needs no copy, as in torch."""
    rng = np.random.default_rng(4)
    a, b = (ag.tensor(rng.standard_normal(s), dtype="float32", device=device,
                      requires_grad=True) for s in [(6, 5), (2, 4, 5)])
    layouts = []
    for f in (lambda x, y: x @ y.mT, lambda x, y: y @ x.mT):  # each transposed on the right
        a2, b2 = a * 1.0, b * 1.0
        a2.retain_grad()
        b2.retain_grad()
        f(a2, b2).sum().backward()
        layouts += [a2.grad._data.is_compact(), b2.grad._data.is_compact()]
    assert layouts == [True] * 4
    ta, tb = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (a, b))
    (ta @ tb.mT).sum().backward()
    (tb @ ta.mT).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("shapes", [[(3, 4), (2, 4, 5)], [(5, 2), (3, 2, 4)], [(3, 4), (0, 4, 5)],
                                    [(3, 0), (2, 0, 5)]], ids=str)
def test_matmul_gradient_of_a_matrix_over_a_batch_is_compact(device, shapes):
    """dA sums dC @ B^T over the batch in one GEMM, with M or K as its rows; either
    way A's gradient arrives compact, with torch's values (empty batches and K give 0)."""
    rng = np.random.default_rng(5)
    a, b = (ag.tensor(rng.standard_normal(s), dtype="float32", device=device,
                      requires_grad=True) for s in shapes)
    (a @ b).sum().backward()
    assert a.grad.shape == a.shape and a.grad._data.is_compact()
    ta, tb = (torch.tensor(t.detach().numpy(), requires_grad=True) for t in (a, b))
    (ta @ tb).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("device", DEVICES)
def test_addmm_with_beta_zero_ignores_nan_input_and_gives_it_zero_gradient(device):
    inp = ag.full((2, 2), math.nan, dtype="float64", device=device, requires_grad=True)
    a, b = (ag.ones(2, 3, dtype="float64", device=device),
            ag.ones(3, 2, dtype="float64", device=device))
    y = ag.addmm(inp, a, b, beta=0)
    assert y.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    y.sum().backward()
    assert inp.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]


@pytest.mark.parametrize("device", DEVICES)
def test_tril_and_triu_keep_int_and_bool_and_work_in_place(device):
    x0 = np.arange(12).reshape(3, 4)
    for data in (x0, x0 % 2 == 0):
        x, t = ag.tensor(data, device=device), torch.tensor(data)
        for k in (-1, 0, 2):
            assert x.tril(k).tolist() == t.tril(k).tolist()
            assert ag.triu(x, k).tolist() == torch.triu(t, k).tolist()
            assert x.triu(k).dtype == x.dtype
    m = ag.ones(3, 3, device=device)
    assert m.tril_(1) is m and m.tolist() == torch.ones(3, 3).tril_(1).tolist()
    assert m.triu_().tolist() == torch.ones(3, 3).tril(1).triu().tolist()


@pytest.mark.parametrize("device", DEVICES)
def test_constructors_match_torch(device):
    cases = [(lambda lib, **k: lib.eye(3, **k), {}),
             (lambda lib, **k: lib.eye(2, 4, **k), {}),
             (lambda lib, **k: lib.eye(0, **k), {}),
             (lambda lib, **k: lib.linspace(-1.5, 2.0, 7, **k), {}),
             (lambda lib, **k: lib.linspace(3, 1, 1, **k), {}),
             (lambda lib, **k: lib.linspace(0, 1, 0, **k), {}),
             (lambda lib, **k: lib.linspace(1e-3, 5, 100, **k), {}),
             (lambda lib, **k: lib.logspace(-2, 2, 9, **k), {}),
             (lambda lib, **k: lib.logspace(0, 3, 4, 2, **k), {})]
    for f, _ in cases:
        for dtype in ("float32", "float64", "int64"):
            y = f(ag, dtype=getattr(ag, dtype), device=device)
            u = f(torch, dtype=getattr(torch, dtype))
            assert y.shape == tuple(u.shape) and y.dtype.name == dtype and y.device.type in device
            np.testing.assert_allclose(y.numpy(), u.numpy(), rtol=5e-7 if dtype == "float32"
                                       else 1e-14)
    assert ag.eye(2).dtype == ag.float32 and ag.linspace(0, 1, 3).dtype == ag.float32
    assert ag.logspace(0, 1, 3).dtype == ag.float32
    w = ag.eye(2, requires_grad=True)
    assert w.requires_grad and w.is_leaf


ERRORS = [
    (lambda: ag.mm(ag.ones(2), ag.ones(2, 2)), ag.ShapeError, "mm: input must be 2-D"),
    (lambda: ag.mm(ag.ones(2, 3), ag.ones(2, 3)), ag.ShapeError, "3 (dim 1 of arg 0) != 2"),
    (lambda: ag.mm(ag.ones(2, 3), ag.ones(3, 2, dtype="float64")), ag.DTypeError,
     "float32 (arg 0), float64 (arg 1)"),
    (lambda: ag.mv(ag.ones(2, 3), ag.ones(4)), ag.ShapeError, "mv: shapes (2, 3) and (4,)"),
    (lambda: ag.dot(ag.ones(2), ag.ones(3)), ag.ShapeError, "dot: shapes"),
    (lambda: ag.dot(ag.ones(2), [1.0, 2.0]), TypeError, "dot: tensor must be a Tensor"),
    (lambda: ag.outer(ag.ones(2, 1), ag.ones(2)), ag.ShapeError, "outer: input must be 1-D"),
    (lambda: ag.bmm(ag.ones(1, 2, 3), ag.ones(2, 3, 4)), ag.ShapeError,
     "bmm: batch sizes differ"),
    (lambda: ag.addmm(ag.ones(2, 2, 2), ag.ones(2, 3), ag.ones(3, 2)), ag.ShapeError,
     "addmm: input of shape (2, 2, 2) does not broadcast"),
    (lambda: ag.einsum("i1", ag.ones(2, 3)), ValueError, "invalid subscript '1' at index 1"),
    (lambda: ag.einsum("ij,jk->ik", ag.ones(2, 3)), ValueError, "2 operand terms"),
    (lambda: ag.einsum("ij", ag.ones(2, 3, 4)), ag.ShapeError, "operand 0 has 3 dims"),
    (lambda: ag.einsum("ij->ii", ag.ones(2, 3)), ValueError, "'i' appears more than once"),
    (lambda: ag.einsum("ij->k", ag.ones(2, 3)), ValueError, "'k' of 'ij->k' appears in no"),
    (lambda: ag.einsum("ii->i", ag.ones(2, 3)), ag.ShapeError, "'i' is repeated in operand 0"),
    (lambda: ag.einsum("ij,jk", ag.ones(2, 3), ag.ones(4, 2)), ag.ShapeError,
     "subscript 'j' has size 3 in an earlier operand and 4 in operand 1"),
    (lambda: ag.einsum("i...,i...", ag.ones(2, 3), ag.ones(2, 4)), ag.ShapeError,
     "an ellipsis dim has size 3"),
    (lambda: ag.einsum("i.j", ag.ones(2, 3)), ValueError, "a '.' outside an ellipsis"),
    (lambda: ag.einsum("i,i", ag.ones(2), ag.ones(2, dtype="float64")), ag.DTypeError,
     "einsum: expected operands of one dtype"),
    (lambda: ag.einsum(ag.ones(2), [0]), TypeError, "the equation must be a str"),
    (lambda: ag.norm(ag.ones(2, 2), "nuc"), ValueError, "p='nuc' is not supported"),
    (lambda: ag.norm(ag.ones(2, 2, 2), "fro", dim=(0, 1, 2)), ag.ShapeError,
     "p='fro' takes at most 2 dims"),
    (lambda: ag.norm(ag.tensor([1, 2])), ag.DTypeError, "expected a floating point tensor"),
    (lambda: ag.norm(ag.zeros(0), INF), ValueError, "inf norm over an empty dim"),
    (lambda: ag.vector_norm(ag.zeros(2, 0), -1, dim=1), ValueError, "-1 norm"),
    (lambda: ag.tril(ag.ones(3)), ag.ShapeError, "tril: expects a tensor with at least 2 dims"),
    (lambda: ag.diag(ag.ones(2, 2, 2)), ag.ShapeError, "diag: expects a 1-D or 2-D tensor"),
    (lambda: ag.diagonal(ag.ones(2, 2), 0, 1, -1), ag.ShapeError,
     "dim1 and dim2 must be two different dims"),
    (lambda: ag.trace(ag.ones(2)), ag.ShapeError, "trace: expects a matrix"),
    (lambda: ag.linspace(0, 1, -1), ValueError, "linspace: steps must be non-negative"),
    (lambda: ag.logspace(0, 1, 2.5), TypeError, "logspace: steps must be an int"),
    (lambda: ag.eye(-1), ValueError, "eye: n must be a non-negative int"),
]


@pytest.mark.parametrize(("call", "error", "match"), ERRORS,
                         ids=[f"{i}-{e[2][:24]}" for i, e in enumerate(ERRORS)])
def test_errors_name_the_op_and_the_values(call, error, match):
    with pytest.raises(error) as info:
        call()
    assert match in str(info.value)


def test_vector_norm_empty_dims_of_other_orders_are_zero_as_torch():
    assert ag.vector_norm(ag.zeros(0)).item() == torch.linalg.vector_norm(torch.zeros(0)).item()
    assert ag.norm(ag.zeros(0, 3), INF, dim=1).shape == (0,)
