"""lamina.ndarray: a strided N-dimensional array over pluggable backends.

The public surface is the list below; implementation lives in the
``_``-prefixed modules. Backends are found through the ``lamina.backends``
entry-point group (``python -m lamina.ndarray`` lists them).
"""

from ._compute import (
    argmax,
    erf,
    layer_norm,
    logsumexp,
    matmul,
    mean,
    pad,
    scatter_add,
    softmax,
    take,
)
from ._creation import (
    arange,
    array,
    col2im,
    concatenate,
    empty,
    full,
    generator,
    im2col,
    manual_seed,
    maximum,
    minimum,
    one_hot,
    ones,
    rand,
    randn,
    stack,
    where,
    zeros,
)
from ._dlpack import from_dlpack
from ._dtypes import DType, as_dtype, float32, float64, int64
from ._errors import DeviceError, DTypeError, ShapeError
from ._interface import API_VERSION, BackendProtocol
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

__version__ = "0.1.0"

__all__ = [
    "API_VERSION", "BackendInfo", "BackendProtocol", "DType", "DTypeError", "Device",
    "DeviceError", "NDArray", "ShapeError", "arange", "argmax", "array", "as_dtype",
    "broadcast_shapes", "col2im", "concatenate", "default_device", "empty", "erf", "float32",
    "float64", "from_dlpack", "full", "generator", "get_device", "im2col", "int64", "layer_norm",
    "list_backends", "logsumexp", "manual_seed", "matmul", "maximum", "mean", "minimum",
    "one_hot", "ones", "pad", "rand", "randn", "scatter_add", "set_default_device", "softmax",
    "stack", "take", "where", "zeros",
]
