"""Two trainings that should be the same run: bit for bit, or to rounding on cuda."""

from __future__ import annotations

import numpy as np
from lamina import ndarray as nd


def assert_same_weights(want: dict[str, np.ndarray], got: dict[str, np.ndarray]) -> None:
    """Every named weight equal, bit for bit on the default device unless it is cuda.

    cuda's scatter-adds (the embedding's gradient) add in the order its threads arrive, so
    two cuda runs agree to rounding. The attention key bias is left out there: its gradient
    is zero in exact arithmetic (it shifts all of a query's scores alike), so Adam steps it
    by the sign of rounding noise and two runs part by up to the learning rate.
    """
    assert sorted(want) == sorted(got)
    cuda = nd.default_device().type == "cuda"
    for name, value in want.items():
        if not cuda:
            np.testing.assert_array_equal(got[name], value, err_msg=name)
            continue
        other = got[name]
        if name.endswith("c_attn.bias"):
            keys = np.s_[value.shape[0] // 3:2 * value.shape[0] // 3]
            value, other = np.delete(value, keys), np.delete(other, keys)
        np.testing.assert_allclose(other, value, rtol=1e-4, atol=1e-6, err_msg=name)
