"""multinomial on every backend: the same draws for the same seed as the numpy
backend and as an independent host implementation, through the backend's
multinomial_last / sort_last kernels or without them (interface v2.1)."""

from __future__ import annotations

import dataclasses

import lamina.ndarray as nd
import numpy as np
import pytest


def _weights() -> np.ndarray:
    rng = np.random.default_rng(5)
    w = rng.uniform(0, 1, (6, 40))
    w[:, ::4] = 0  # zero-probability categories
    w[2] = 0
    w[2, [7, 39]] = [1e-3, 5.0]
    return w


def _host_draws(seed: int, w: np.ndarray, n: int, replacement: bool) -> np.ndarray:
    """The draws spelled out in numpy: inverse CDF over a left-to-right float64 running
    sum with replacement, the n smallest exponential race keys without."""
    rng = np.random.default_rng(seed)
    if replacement:
        u = rng.random((w.shape[0], n))
        cdf = np.cumsum(w, axis=1)
        return np.stack([np.searchsorted(c, t * c[-1], side="right") for c, t in zip(cdf, u)])
    with np.errstate(divide="ignore"):
        keys = np.where(w > 0, rng.exponential(size=w.shape) / w, np.inf)
    return np.argsort(keys, axis=1, kind="stable")[:, :n]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("replacement,n", [(True, 1), (True, 300), (False, 3), (False, 40)])
def test_multinomial_gives_the_same_draws_on_every_device(device: str, dtype: str,
                                                          replacement: bool, n: int) -> None:
    w = _weights().astype(dtype)
    nd.manual_seed(11)
    got = nd.multinomial(nd.array(w, device=device), n, replacement)
    assert got.device is nd.get_device(device) and got.dtype is nd.int64
    want = _host_draws(11, w.astype(np.float64), n, replacement)
    np.testing.assert_array_equal(got.numpy(), want)
    nd.manual_seed(11)
    one_row = nd.multinomial(nd.array(w[0], device=device), n, replacement)
    np.testing.assert_array_equal(one_row.numpy(), _host_draws(11, w[:1].astype(np.float64),
                                                               n, replacement)[0])


def test_multinomial_draws_without_the_kernels_are_the_same(device: str,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    if device == "numpy":
        pytest.skip("the numpy backend's kernels are the host path")
    w = nd.array(_weights().astype(np.float32), device=device)
    draws = []
    for kernels in ("theirs", "none"):
        if kernels == "none":
            dev = nd.get_device(device)
            monkeypatch.setattr(dev, "kernels", dataclasses.replace(
                dev.kernels, sort_last=None, multinomial_last=None))
        nd.manual_seed(3)
        draws.append([nd.multinomial(w, 50, True).numpy(), nd.multinomial(w, 7).numpy()])
    for ours, theirs in zip(*draws):
        np.testing.assert_array_equal(ours, theirs)


def test_multinomial_errors_and_empty_batches(device: str) -> None:
    with pytest.raises(ValueError, match=r"multinomial: the probabilities contain inf, nan"):
        nd.multinomial(nd.array([[1.0, float("nan")]], device=device), 1)
    with pytest.raises(ValueError, match=r"multinomial: row 1 of the probabilities sums to 0"):
        nd.multinomial(nd.array([[1.0, 0.0], [0.0, 0.0]], device=device), 1, True)
    assert nd.multinomial(nd.zeros((0, 3), device=device), 2).shape == (0, 2)
