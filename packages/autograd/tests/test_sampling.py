"""Random sampling on every device: randint, randperm, multinomial, bernoulli, normal,
the ``*_like`` constructors and the in-place fills (uniform_, normal_, bernoulli_,
random_, zero_, fill_).

Lamina's generator is not PyTorch's, so values are not compared with torch's;
the tests check shapes, dtypes, devices, ranges, statistics (with a fixed
seed, against generous bounds), reproducibility after ``manual_seed``, the
errors, and the gradients (PyTorch's: samples give their parameters zero).
"""

from __future__ import annotations

import lamina.autograd as ag
import lamina.ndarray as nd
import numpy as np
import pytest
import torch
from conftest import DEVICES, device_dtypes


def _chi_square(counts: np.ndarray, probs: np.ndarray) -> float:
    expected = counts.sum() * probs / probs.sum()
    return float(((counts - expected) ** 2 / expected).sum())


# chi-square bounds far in the tail (p < 1e-6 for these degrees of freedom)
_CHI2_BOUND = {3: 35.0, 4: 38.0, 9: 50.0}


@pytest.mark.parametrize("device", DEVICES)
def test_randint_spellings_dtype_range_and_uniformity(device: str) -> None:
    ag.manual_seed(0)
    x = ag.randint(3, 13, (20000,), device=device)
    assert x.dtype == "int64" and x.shape == (20000,) and x.device == nd.get_device(device)
    host = x.numpy()
    assert host.min() >= 3 and host.max() <= 12
    assert _chi_square(np.bincount(host - 3, minlength=10), np.ones(10)) < _CHI2_BOUND[9]
    assert ag.randint(5, (2, 3), device=device).numpy().max() < 5  # randint(high, size)
    assert ag.randint(high=2, size=(4,), device=device).shape == (4,)
    assert ag.randint(-3, 0, size=(4,), device=device).numpy().max() < 0
    assert ag.randint(0, 4, (3,), dtype="float32", device=device).dtype == "float32"


@pytest.mark.parametrize("device", DEVICES)
def test_samplers_are_reproducible_after_manual_seed(device: str) -> None:
    def draw() -> list:
        probs = ag.tensor([[0.1, 0.4, 0.5], [0.3, 0.3, 0.4]], device=device)
        t = ag.empty(4, device=device)
        return [ag.randint(0, 100, (5,), device=device).tolist(),
                ag.randperm(6, device=device).tolist(),
                ag.multinomial(probs, 2).tolist(), ag.multinomial(probs, 4, True).tolist(),
                ag.bernoulli(probs).tolist(), ag.normal(probs, 1.0).tolist(),
                t.uniform_(-1, 1).tolist(), t.normal_(2, 3).tolist(), t.random_(9).tolist(),
                t.bernoulli_(0.3).tolist(), ag.rand_like(t).tolist()]

    ag.manual_seed(1234)
    first = draw()
    ag.manual_seed(1234)
    assert draw() == first
    ag.manual_seed(1235)
    assert draw() != first


def test_samples_are_the_same_on_every_device() -> None:
    draws = []
    for device in DEVICES:
        ag.manual_seed(7)
        draws.append((ag.randint(0, 50, (8,), device=device).tolist(),
                      ag.multinomial(ag.tensor([1.0, 2.0, 3.0], device=device), 3).tolist()))
    assert all(d == draws[0] for d in draws)


@pytest.mark.parametrize("device", DEVICES)
def test_randint_errors(device: str) -> None:
    with pytest.raises(ValueError, match=r"randint: low must be less than high, got low=5 >= "
                                         r"high=5"):
        ag.randint(5, 5, (2,), device=device)
    with pytest.raises(TypeError, match=r"randint: size must be a tuple of ints, got int 5"):
        ag.randint(10, 5)
    with pytest.raises(TypeError, match=r"randint: expected \(high, size\) or"):
        ag.randint(10)
    with pytest.raises(TypeError, match=r"randint: low must be an int, got float"):
        ag.randint(0.5, 5, (2,))
    with pytest.raises(TypeError, match=r"floating point"):
        ag.randint(0, 5, (2,), requires_grad=True)


@pytest.mark.parametrize("device", DEVICES)
def test_randperm(device: str) -> None:
    ag.manual_seed(3)
    p = ag.randperm(50, device=device)
    assert p.dtype == "int64" and sorted(p.tolist()) == list(range(50))
    assert p.tolist() != list(range(50))
    assert ag.randperm(0, device=device).shape == (0,)
    assert ag.randperm(4, dtype="float32", device=device).dtype == "float32"
    with pytest.raises(ValueError, match=r"randperm: n must be non-negative, got -1"):
        ag.randperm(-1)
    with pytest.raises(TypeError, match=r"randperm: n must be an int, got float"):
        ag.randperm(3.0)


@pytest.mark.parametrize("device", DEVICES)
def test_multinomial_with_replacement_follows_the_weights(device: str) -> None:
    ag.manual_seed(0)
    weights = np.array([[1.0, 0.0, 3.0, 4.0, 2.0], [5.0, 1.0, 1.0, 1.0, 0.0]])
    draws = ag.multinomial(ag.tensor(weights, device=device), 20000, replacement=True)
    assert draws.shape == (2, 20000) and draws.dtype == "int64"
    for row, w in zip(draws.numpy(), weights):
        counts = np.bincount(row, minlength=5)
        assert (counts[w == 0] == 0).all()  # a zero weight is never drawn
        assert _chi_square(counts[w > 0], w[w > 0]) < _CHI2_BOUND[3]


@pytest.mark.parametrize("device", DEVICES)
def test_multinomial_without_replacement(device: str) -> None:
    ag.manual_seed(1)
    probs = ag.tensor([0.05, 0.6, 0.05, 0.3], device=device)
    firsts = []
    for _ in range(2000):
        draw = ag.multinomial(probs, 3).tolist()
        assert len(set(draw)) == 3
        firsts.append(draw[0])
    counts = np.bincount(firsts, minlength=4)
    assert _chi_square(counts, np.array([0.05, 0.6, 0.05, 0.3])) < _CHI2_BOUND[3]
    # Zero weights come last, in index order, once the others are used up (as torch).
    assert ag.multinomial(ag.tensor([0.0, 1.0, 0.0], device=device), 3).tolist() == [1, 0, 2]
    assert ag.multinomial(ag.ones(0, 3, device=device), 2).shape == (0, 2)


@pytest.mark.parametrize("device", DEVICES)
def test_multinomial_errors_as_torch(device: str) -> None:
    def bad(values, n=1, replacement=False, dtype=None):
        return ag.multinomial(ag.tensor(values, dtype=dtype, device=device), n, replacement)

    for values in ([0.1, -0.2, 0.7], [0.1, float("inf"), 0.7], [0.1, float("nan"), 0.7]):
        with pytest.raises(ValueError, match=r"multinomial: the probabilities contain inf, "
                                             r"nan or a negative value"):
            bad(values)
        with pytest.raises(RuntimeError):  # torch raises for the same inputs
            torch.multinomial(torch.tensor(values), 1)
    with pytest.raises(ValueError, match=r"multinomial: row 0 of the probabilities sums to 0"):
        bad([[0.0, 0.0], [1.0, 1.0]])
    with pytest.raises(ValueError, match=r"cannot draw 4 samples from 3 categories without "
                                         r"replacement"):
        bad([0.1, 0.2, 0.7], 4)
    with pytest.raises(ValueError, match=r"multinomial: num_samples must be positive, got 0"):
        bad([0.1, 0.2, 0.7], 0)
    with pytest.raises(ValueError, match=r"probabilities must be 1-D or 2-D, got shape "
                                         r"\(2, 2, 2\)"):
        bad(np.ones((2, 2, 2)))
    with pytest.raises(TypeError, match=r"probabilities must be floating point, got int64"):
        bad([1, 2, 3])


@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_bernoulli(device: str, dtype: str) -> None:
    ag.manual_seed(2)
    p = ag.tensor(np.repeat([[0.0, 0.25, 0.9, 1.0]], 5000, axis=0), dtype=dtype, device=device)
    out = ag.bernoulli(p)
    assert out.dtype == dtype and out.shape == p.shape
    host = out.numpy()
    assert set(np.unique(host)) <= {0.0, 1.0}
    np.testing.assert_allclose(host.mean(0), [0.0, 0.25, 0.9, 1.0], atol=0.03)
    fixed = ag.bernoulli(p, 0.5).numpy()  # p= replaces the input's values
    assert abs(fixed.mean() - 0.5) < 0.02
    with pytest.raises(ValueError, match=r"bernoulli: p must be in \[0, 1\], got 1.5"):
        ag.bernoulli(ag.tensor([0.2, 1.5], dtype=dtype, device=device))
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\], got nan"):
        ag.bernoulli(ag.tensor([float("nan")], dtype=dtype, device=device))


@pytest.mark.parametrize("device", DEVICES)
def test_normal_forms_statistics_and_errors(device: str) -> None:
    ag.manual_seed(4)
    mean = ag.tensor([[-2.0], [3.0]], device=device)
    std = ag.tensor([0.5, 1.0, 2.0], device=device)
    out = ag.normal(mean, std.broadcast_to(20000, 3).reshape(20000, 1, 3))
    assert out.shape == (20000, 2, 3) and out.device == mean.device
    host = out.numpy()
    np.testing.assert_allclose(host.mean(0), np.broadcast_to([[-2.0], [3.0]], (2, 3)),
                               atol=0.05)
    np.testing.assert_allclose(host.std(0), np.broadcast_to([0.5, 1.0, 2.0], (2, 3)),
                               rtol=0.05)
    assert ag.normal(mean, 2.0).shape == (2, 1)
    assert ag.normal(1.0, std).shape == (3,)
    wide = "float64" if "float64" in nd.get_device(device).dtypes else "float32"
    scalar = ag.normal(1.0, 0.0, (3, 2), dtype=wide, device=device)
    assert scalar.dtype == wide
    assert scalar.tolist() == [[1.0, 1.0]] * 3
    with pytest.raises(ValueError, match=r"normal: std must be >= 0, found -1.0"):
        ag.normal(mean, -1.0)
    with pytest.raises(ValueError, match=r"normal: std must be >= 0, found nan"):
        ag.normal(0.0, ag.tensor([1.0, float("nan")], device=device))
    with pytest.raises(TypeError, match=r"normal: with a number mean and std, pass size="):
        ag.normal(0.0, 1.0)
    with pytest.raises(TypeError, match=r"size= applies to a number mean and std only"):
        ag.normal(mean, 1.0, (2,))


@pytest.mark.parametrize("device", DEVICES)
def test_samples_give_their_parameters_zero_gradient_as_torch(device: str) -> None:
    mean = ag.zeros(3, device=device, requires_grad=True)
    std = ag.ones(3, device=device, requires_grad=True)
    p = ag.full((3,), 0.5, device=device, requires_grad=True)
    (ag.normal(mean, std).sum() + ag.bernoulli(p).sum()).backward()
    tm, ts = torch.zeros(3, requires_grad=True), torch.ones(3, requires_grad=True)
    tp = torch.full((3,), 0.5, requires_grad=True)
    (torch.normal(tm, ts).sum() + torch.bernoulli(tp).sum()).backward()
    for ours, theirs in ((mean, tm), (std, ts), (p, tp)):
        np.testing.assert_array_equal(ours.grad.numpy(), theirs.grad.numpy())


@pytest.mark.parametrize("device", DEVICES)
def test_like_constructors(device: str) -> None:
    x = ag.zeros(2, 3, device=device)
    for made in (ag.rand_like(x), ag.randn_like(x), ag.randint_like(x, 5),
                 ag.randint_like(x, 3, 5)):
        assert made.shape == (2, 3) and made.dtype == "float32" and made.device == x.device
    assert ag.randint_like(x, 3, 5).numpy().min() >= 3
    assert ag.rand_like(x, requires_grad=True).requires_grad
    ints = ag.zeros(2, dtype="int64", device=device)
    assert ag.randint_like(ints, 7).dtype == "int64"
    with pytest.raises(TypeError, match=r"rand_like: expects a floating point dtype"):
        ag.rand_like(ints)


@pytest.mark.parametrize("device,dtype", device_dtypes())
def test_inplace_fills_write_values_and_bump_the_version(device: str, dtype: str) -> None:
    ag.manual_seed(5)
    t = ag.zeros(4000, dtype=dtype, device=device)
    assert t.uniform_(2.0, 5.0) is t and t._version == 1
    host = t.numpy()
    assert host.min() >= 2.0 and host.max() < 5.0 and abs(host.mean() - 3.5) < 0.1
    t.normal_(1.0, 2.0)
    assert t._version == 2
    assert abs(t.numpy().mean() - 1.0) < 0.15 and abs(t.numpy().std() - 2.0) < 0.15
    t.random_(3, 7)
    assert set(np.unique(t.numpy())) == {3.0, 4.0, 5.0, 6.0}
    t.random_(2)
    assert set(np.unique(t.numpy())) == {0.0, 1.0}
    t.bernoulli_(0.25)
    assert abs(t.numpy().mean() - 0.25) < 0.03
    t.zero_()
    assert not t.numpy().any() and t._version == 6
    t.fill_(1.5)
    assert (t.numpy() == 1.5).all() and t._version == 7


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_fills_of_integer_tensors_and_views(device: str) -> None:
    ints = ag.zeros(1000, dtype="int64", device=device)
    assert ints.random_().numpy().min() >= 0 and ints.numpy().max() > 2**40
    assert set(np.unique(ints.bernoulli_(ag.full((1000,), 0.5, device=device)).numpy())) == {0, 1}
    base = ag.zeros(2, 4, device=device)
    base[:, 1:3].uniform_(5.0, 6.0)  # writes through the view into base
    host = base.numpy()
    assert (host[:, [0, 3]] == 0).all() and (host[:, 1:3] >= 5.0).all()
    assert base._version == 1
    with pytest.raises(TypeError, match=r"uniform_: expects a floating point tensor, got "
                                        r"int64"):
        ints.uniform_()
    with pytest.raises(TypeError, match=r"normal_: expects a floating point tensor"):
        ints.normal_()
    with pytest.raises(ValueError, match=r"uniform: expects low <= high, got low=2 > high=1"):
        base.uniform_(2, 1)
    with pytest.raises(ValueError, match=r"randint: low must be less than high"):
        base.random_(5, 2)
    with pytest.raises(ValueError, match=r"bernoulli: p must be in \[0, 1\], got 1.5"):
        base.bernoulli_(1.5)


@pytest.mark.parametrize("device", DEVICES)
def test_inplace_fills_follow_torchs_autograd_rules(device: str) -> None:
    w = ag.zeros(3, device=device, requires_grad=True)
    for fill in (lambda: w.uniform_(), lambda: w.normal_(), lambda: w.bernoulli_(),
                 lambda: w.random_(3), lambda: w.zero_()):
        with pytest.raises(RuntimeError, match=r"a leaf Variable that requires grad"):
            fill()
    with ag.no_grad():
        w.uniform_(1.0, 2.0)  # how nn.init fills parameters
    assert w._version == 1 and w.detach().numpy().min() >= 1.0
    a = ag.ones(3, device=device, requires_grad=True)
    b = a * 2
    b.uniform_()
    b.sum().backward()  # the old value of b gets zero gradient, as torch
    assert a.grad.tolist() == [0.0, 0.0, 0.0]
