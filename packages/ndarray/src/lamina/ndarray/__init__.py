"""lamina.ndarray: a strided N-dimensional array over pluggable backends.

The public surface is the list below; implementation lives in the
``_``-prefixed modules. Backends are found through the ``lamina.backends``
entry-point group (``python -m lamina.ndarray`` lists them).
"""

from ._checks import (
    check_device_dtype,
    check_same_device_dtype,
    conv_output_size,
    normalize_axes,
    normalize_axis,
    normalize_permutation,
    pair,
)
from ._compute import (
    argmax,
    erf,
    layer_norm,
    logsumexp,
    matmul,
    maximum,
    mean,
    minimum,
    pad,
    scatter_add,
    softmax,
    take,
)
from ._conv import col2im, im2col
from ._creation import (
    arange,
    array,
    empty,
    from_dlpack,
    full,
    generator,
    manual_seed,
    one_hot,
    ones,
    rand,
    randn,
    zeros,
)
from ._dtypes import DType, as_dtype, float32, float64, int64
from ._errors import DeviceError, DTypeError, ShapeError
from ._interface import API_VERSION, BackendProtocol, KernelTable
from ._layout import broadcast_shapes
from ._ndarray import NDArray
from ._registry import (
    BackendInfo,
    Device,
    default_device,
    get_device,
    list_backends,
    set_default_device,
)
from ._select import concatenate, stack, where

__version__ = "0.1.0"

__all__ = [
    "API_VERSION", "BackendInfo", "BackendProtocol", "DType", "DTypeError", "Device",
    "DeviceError", "KernelTable", "NDArray", "ShapeError", "arange", "argmax", "array",
    "as_dtype", "broadcast_shapes", "check_device_dtype", "check_same_device_dtype", "col2im",
    "concatenate", "conv_output_size", "default_device", "empty", "erf", "float32", "float64",
    "from_dlpack", "full", "generator", "get_device", "im2col", "int64", "layer_norm",
    "list_backends", "logsumexp", "manual_seed", "matmul", "maximum", "mean", "minimum",
    "normalize_axes", "normalize_axis", "normalize_permutation", "one_hot", "ones", "pad",
    "pair", "rand", "randn", "scatter_add", "set_default_device", "softmax", "stack", "take",
    "where", "zeros",
]
