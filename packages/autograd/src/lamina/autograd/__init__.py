"""lamina.autograd: Tensor and reverse-mode automatic differentiation.

Example:
    >>> import lamina.autograd as ag
    >>> x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([2., 4., 6.])
"""

import typing as _typing

from lamina.ndarray import (
    DeviceError,
    DTypeError,
    ShapeError,
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

from . import profiler as profiler  # torch.autograd.profiler's place
from ._autocast import autocast, get_autocast_dtype, is_autocast_enabled
from ._compile import GraphBreak, compile  # noqa: A004  (torch.compile's name)
from ._creation import (
    arange,
    empty,
    eye,
    from_dlpack,
    from_numpy,
    full,
    linspace,
    logspace,
    manual_seed,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    tensor,
    zeros,
    zeros_like,
)
from ._engine import backward, grad
from ._function import Function
from ._grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    no_grad,
    set_grad_enabled,
)
from ._gradcheck import GradcheckError, gradcheck
from ._ops import (  # noqa: A004  (max, min: PyTorch's names)
    ValuesIndices,
    amax,
    amin,
    argmax,
    argsort,
    avg_pool2d,
    batch_norm,
    bernoulli,
    broadcast_to,
    cat,
    chunk,
    clamp,
    conv2d,
    conv_transpose2d,
    cumsum,
    dilate,
    dropout,
    embedding,
    expand,
    flatten,
    flip,
    gather,
    gelu,
    gru_layer,
    index_put,
    index_scatter_add,
    layer_norm,
    linear,
    log_softmax,
    logsumexp,
    lstm_layer,
    masked_fill,
    masked_select,
    matmul,
    max,
    max_pool2d,
    mean,
    min,
    multinomial,
    nonzero,
    normal,
    one_hot,
    pad,
    permute,
    prod,
    relu,
    reshape,
    scaled_dot_product_attention,
    scatter,
    scatter_add,
    sigmoid,
    softmax,
    sort,
    split,
    squeeze,
    stack,
    std,
    sum,
    take,
    topk,
    transpose,
    undilate,
    unsqueeze,
    var,
    view,
    where,
)
from ._ops import table as _table
from ._ops.products import (
    addmm,
    baddbmm,
    bmm,
    dot,
    einsum,
    mm,
    mv,
    norm,
    outer,
    vector_norm,
)
from ._ops.rearrange import (  # noqa: A004  (all, any: PyTorch's names)
    all,
    any,
    diag,
    diagonal,
    index_select,
    narrow,
    numel,
    roll,
    tile,
    trace,
    tril,
    triu,
    unbind,
)
from ._tensor import Tensor

bool = bool_  # noqa: A001  (torch.bool's spelling; the builtin is not used below)
half = float16  # torch.half

__all__ = [
    # tensor, dtypes, errors
    "Tensor", "Function", "compile", "GraphBreak", "autocast", "get_autocast_dtype",
    "is_autocast_enabled", "bool", "bool_", "bfloat16", "finfo", "float16",
    "half", "float32", "float64", "int64", "result_type",
    "promote_types", "can_cast", "ShapeError", "DTypeError", "DeviceError",
    # creation
    "tensor", "zeros", "ones", "empty", "full", "rand", "randn", "arange", "zeros_like",
    "ones_like", "manual_seed", "from_numpy", "from_dlpack",
    # autograd
    "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "inference_mode", "gradcheck", "GradcheckError",
    # ops
    "amax", "amin", "argmax", "avg_pool2d", "broadcast_to", "cat", "chunk", "clamp", "conv2d",
    "conv_transpose2d",
    "dilate", "dropout", "embedding", "expand", "flatten", "flip", "gather", "gelu",
    "index_put", "index_scatter_add", "linear", "log_softmax", "logsumexp", "masked_fill",
    "masked_select", "matmul", "max_pool2d", "mean", "nonzero", "one_hot", "pad", "permute",
    "relu", "reshape", "scatter", "scatter_add", "sigmoid", "softmax", "split", "squeeze",
    "stack", "std", "sum", "take", "transpose", "undilate", "unsqueeze", "var", "view",
    "where", "cumsum", "prod", "all", "any", "index_select", "narrow", "numel", "roll", "tile",
    "unbind",
    # sampling, sorting and selection
    "randint", "randint_like", "randperm", "rand_like", "randn_like", "multinomial",
    "bernoulli", "normal", "sort", "argsort", "topk", "max", "min", "ValuesIndices",
    # constructors, triangles, diagonals, products and norms
    "eye", "linspace", "logspace", "tril", "triu", "diag", "diagonal", "trace", "mm", "mv",
    "dot", "outer", "bmm", "addmm", "baddbmm", "einsum", "norm", "vector_norm",
    # recurrent layers
    "lstm_layer", "gru_layer",
    # normalisation and attention
    "batch_norm", "layer_norm", "scaled_dot_product_attention",
]

# The op table's public functions (add, maximum, logical_xor, ...), one per op, and
# Tensor's operators and methods for them: see lamina.autograd._ops.table.
globals().update(_table.FUNCTIONS)
__all__ += list(_table.FUNCTIONS)
_table.install(Tensor)

if _typing.TYPE_CHECKING:
    def __getattr__(name: str) -> _typing.Any:
        """The op table's functions, set above (``ag.add``, ``ag.exp``, ...)."""
