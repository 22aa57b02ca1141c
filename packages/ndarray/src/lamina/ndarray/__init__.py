"""lamina.ndarray: a strided N-dimensional array over pluggable backends.

The public surface is the list below; implementation lives in the
``_``-prefixed modules. Backends are found through the ``lamina.backends``
entry-point group (``python -m lamina.ndarray`` lists them).
"""

from ._attention import attention, attention_backward, has_attention_kernels
from ._batch_norm import (
    batch_norm_apply,
    batch_norm_backward,
    batch_norm_stats,
    has_batch_norm_kernels,
)
from ._checks import (
    check_device_dtype,
    check_kernel_dtype,
    check_same_device_dtype,
    conv_output_size,
    normalize_axes,
    normalize_axis,
    normalize_permutation,
    pair,
)
from ._compute import (
    argmax,
    boolean_mask,
    erf,
    layer_norm,
    layer_norm_backward,
    log_softmax_backward,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logsumexp,
    mask_indices,
    masked_fill,
    matmul,
    maximum,
    mean,
    minimum,
    nonzero,
    pad,
    scatter_add,
    softmax,
    take,
)
from ._conv import (
    col2im,
    conv2d,
    conv2d_backward_input,
    conv2d_backward_weight,
    has_conv2d,
    im2col,
)
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
from ._cumulative import cumsum
from ._dtypes import (
    DType,
    as_dtype,
    bfloat16,
    bool_,
    can_cast,
    finfo,
    float16,
    float32,
    float64,
    int64,
    promote_types,
    result_type,
)
from ._errors import DeviceError, DTypeError, ShapeError
from ._fused import (
    adadelta_step_,
    adam_step,
    add_scaled_,
    blend_,
    gelu,
    gelu_backward,
    linear,
    relu_backward,
)
from ._include import get_include
from ._indexing import (
    along_positions,
    buffer_positions,
    gather,
    index_positions,
    index_put,
    put,
    scatter,
    wrap_index,
)
from ._interface import API_MINOR_VERSION, API_VERSION, BackendProtocol, KernelTable
from ._layout import broadcast_shapes
from ._ndarray import NDArray
from ._pool import has_max_pool, max_pool2d_backward, max_pool2d_with_indices
from ._registry import (
    BackendInfo,
    Device,
    default_device,
    get_device,
    list_backends,
    set_default_device,
)
from ._rnn import (
    gru_recurrence,
    gru_recurrence_backward,
    has_recurrent_cells,
    lstm_recurrence,
    lstm_recurrence_backward,
)
from ._sampling import bernoulli, multinomial, normal, randint, randperm, uniform
from ._select import concatenate, stack, where
from ._sorting import argsort, max_with_indices, min_with_indices, sort, topk

bool = bool_  # noqa: A001  (torch.bool's spelling; the builtin is not used below)

__version__ = "0.1.0"


__all__ = [
    "API_MINOR_VERSION", "API_VERSION", "along_positions", "BackendInfo", "BackendProtocol",
    "DType", "DTypeError", "Device", "DeviceError", "KernelTable", "NDArray", "ShapeError",
    "adadelta_step_", "adam_step", "add_scaled_", "arange", "argmax", "array", "as_dtype",
    "attention", "attention_backward", "has_attention_kernels",
    "blend_", "bool", "bool_", "boolean_mask",
    "broadcast_shapes",
    "buffer_positions", "can_cast", "check_device_dtype", "check_kernel_dtype",
    "check_same_device_dtype", "col2im", "concatenate", "conv_output_size", "cumsum",
    "default_device",
    "empty", "erf", "bfloat16", "finfo", "float16", "float32", "float64", "from_dlpack", "full",
    "gather", "gelu", "gelu_backward", "generator",
    "get_device", "get_include", "im2col", "int64", "layer_norm", "layer_norm_backward",
    "log_softmax_backward",
    "index_positions", "index_put", "linear", "relu_backward",
    "list_backends",
    "logical_and", "logical_not", "logical_or", "logical_xor", "logsumexp", "manual_seed",
    "mask_indices", "masked_fill", "matmul", "maximum", "mean", "minimum", "nonzero",
    "normalize_axes", "normalize_axis", "normalize_permutation", "one_hot", "ones", "pad", "pair",
    "promote_types", "put", "rand", "randn", "result_type", "scatter", "scatter_add",
    "set_default_device", "softmax", "stack", "take", "where", "wrap_index", "zeros",
    # sampling and sorting
    "argsort", "bernoulli", "max_with_indices", "min_with_indices", "multinomial", "normal",
    "randint", "randperm", "sort", "topk", "uniform",
    # batch normalisation on the fused kernels
    "batch_norm_apply", "batch_norm_backward", "batch_norm_stats", "has_batch_norm_kernels",
    # convolution as a GEMM per image on the conv2d kernels
    "conv2d", "conv2d_backward_input", "conv2d_backward_weight", "has_conv2d",
    # max pooling with indices on the max_pool2d kernels
    "has_max_pool", "max_pool2d_backward", "max_pool2d_with_indices",
    # recurrent layers on the fused cell kernels
    "gru_recurrence", "gru_recurrence_backward", "has_recurrent_cells", "lstm_recurrence",
    "lstm_recurrence_backward",
]
