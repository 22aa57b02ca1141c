"""The per-image convolution kernels (optional, v2.2) against the numpy reference.

``conv2d``, ``conv2d_backward_input`` and ``conv2d_backward_weight`` must
give the reference's values (sums, so within the matmul tolerance) on every
geometry below, stride, padding and dilation included, overwrite their
output, and read only the layout's elements; then the documented errors.
"""

from __future__ import annotations

import numpy as np
import pytest
from lamina.ndarray._interface import OPTIONAL
from lamina.ndarray.conformance._harness import OUT, call, compare, sample

KERNELS = ("conv2d", "conv2d_backward_input", "conv2d_backward_weight")

# (n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw)
CASES = {
    "3x3": (2, 3, 7, 6, 4, 3, 3, 1, 1, 0, 0, 1, 1),
    "3x3-pad": (2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1, 1, 1),
    "strided": (2, 3, 9, 8, 5, 3, 2, 2, 3, 1, 0, 1, 1),
    "dilated": (1, 2, 9, 9, 3, 3, 3, 2, 1, 2, 2, 2, 2),
    "1x1": (3, 4, 4, 5, 2, 1, 1, 1, 1, 0, 0, 1, 1),
    "pad-wider-than-kernel": (1, 2, 3, 3, 2, 2, 2, 1, 1, 3, 2, 1, 1),
    "one-channel": (4, 1, 12, 10, 6, 3, 3, 1, 1, 0, 0, 1, 1),
    "many-channels": (2, 37, 11, 9, 5, 3, 3, 1, 1, 1, 1, 1, 1),
    "wide-image": (1, 2, 5, 131, 3, 3, 5, 1, 2, 1, 2, 1, 1),
    "empty-batch": (0, 2, 5, 5, 3, 3, 3, 1, 1, 0, 0, 1, 1),
    "no-outputs": (2, 2, 5, 5, 0, 3, 3, 1, 1, 0, 0, 1, 1),
}


def _need(backend):
    for kernel in KERNELS:
        assert kernel in OPTIONAL
        if not hasattr(backend, kernel):
            pytest.skip(f"backend has no {kernel} (optional)")


def _sizes(case):
    n, c, h, w, o, kh, kw, sh, sw, ph, pw, dh, dw = case
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (w + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    return n * c * h * w, o * c * kh * kw, n * o * oh * ow


@pytest.mark.parametrize("name", list(CASES))
def test_conv2d_kernels(lamina_backend, lamina_reference, lamina_float, name):
    _need(lamina_backend)
    case = CASES[name]
    images, filters, outputs = _sizes(case)
    x, w, g = (sample(lamina_float, size, seed) for size, seed in
               ((images, 1), (filters, 2), (outputs, 3)))
    for kernel, args, size in (("conv2d", [x, w, OUT], outputs),
                               ("conv2d_backward_input", [g, w, OUT], images),
                               ("conv2d_backward_weight", [x, g, OUT], filters)):
        garbage = np.full(size, 99, lamina_float)  # each kernel overwrites its output
        # two trailing elements on every input: only the layout's are read
        compare(lamina_backend, lamina_reference, kernel, [*args, *case], garbage,
                kind="matmul", extra=2)


def test_conv2d_matches_a_direct_sum(lamina_backend, lamina_float):
    """The specification itself: a stride-2, padded 3x3 convolution summed tap by tap."""
    _need(lamina_backend)
    n, c, h, w, o = 2, 3, 6, 5, 4
    x, wt = sample(lamina_float, (n, c, h, w), 4), sample(lamina_float, (o, c, 3, 3), 5)
    padded = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    oh, ow = (h + 2 - 3) // 2 + 1, (w + 2 - 3) // 2 + 1
    want = np.zeros((n, o, oh, ow), lamina_float)
    for ky in range(3):
        for kx in range(3):
            window = padded[:, :, ky:ky + 2 * (oh - 1) + 1:2, kx:kx + 2 * (ow - 1) + 1:2]
            want += np.einsum("nchw,oc->nohw", window, wt[:, :, ky, kx])
    got = call(lamina_backend, "conv2d", [x, wt, OUT, n, c, h, w, o, 3, 3, 2, 2, 1, 1, 1, 1],
               (want.size, lamina_float))
    np.testing.assert_allclose(got, want.reshape(-1), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel", KERNELS)
def test_conv2d_kernels_reject_bad_layouts(lamina_backend, kernel):
    _need(lamina_backend)
    x, w = np.zeros(2 * 3 * 5 * 5, np.float32), np.zeros(4 * 3 * 3 * 3, np.float32)
    g = np.zeros(2 * 4 * 3 * 3, np.float32)
    first, second, size = {"conv2d": (x, w, g.size), "conv2d_backward_input": (g, w, x.size),
                           "conv2d_backward_weight": (x, g, w.size)}[kernel]
    with pytest.raises(ValueError):  # a 7x7 kernel on a 5x5 image without padding
        call(lamina_backend, kernel, [first, second, OUT, 2, 3, 5, 5, 4, 7, 7, 1, 1, 0, 0, 1, 1],
             (size, "float32"))
    with pytest.raises(ValueError):  # one image more than the buffers hold
        call(lamina_backend, kernel, [first, second, OUT, 3, 3, 5, 5, 4, 3, 3, 1, 1, 0, 0, 1, 1],
             (size, "float32"))
    with pytest.raises(TypeError):  # the filters in another dtype
        call(lamina_backend, kernel, [first, second.astype(np.float64), OUT,
                                      2, 3, 5, 5, 4, 3, 3, 1, 1, 0, 0, 1, 1], (size, "float32"))
