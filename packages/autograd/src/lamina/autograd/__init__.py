"""lamina.autograd: Tensor and reverse-mode automatic differentiation.

Example:
    >>> import lamina.autograd as ag
    >>> x = ag.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> (x * x).sum().backward()
    >>> x.grad
    tensor([2., 4., 6.])
"""

from lamina.ndarray import (
    DeviceError,
    DTypeError,
    ShapeError,
    bool_,
    can_cast,
    float32,
    float64,
    int64,
    promote_types,
    result_type,
)

from ._creation import (
    arange,
    empty,
    from_dlpack,
    from_numpy,
    full,
    manual_seed,
    ones,
    ones_like,
    rand,
    randn,
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
from ._ops import (
    abs,
    add,
    amax,
    amin,
    argmax,
    avg_pool2d,
    batch_norm,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    broadcast_to,
    cat,
    chunk,
    clamp,
    conv2d,
    cos,
    cumsum,
    dilate,
    div,
    dropout,
    embedding,
    eq,
    erf,
    exp,
    expand,
    flatten,
    flip,
    floor_divide,
    gather,
    ge,
    gelu,
    gt,
    index_put,
    index_scatter_add,
    layer_norm,
    le,
    linear,
    log,
    log_softmax,
    logsumexp,
    lstm_layer,
    lt,
    masked_fill,
    masked_select,
    matmul,
    max_pool2d,
    maximum,
    mean,
    minimum,
    mul,
    ne,
    neg,
    nonzero,
    one_hot,
    pad,
    permute,
    pow,
    prod,
    relu,
    remainder,
    reshape,
    scatter,
    scatter_add,
    sigmoid,
    sign,
    sin,
    softmax,
    split,
    sqrt,
    squeeze,
    stack,
    std,
    sub,
    sum,
    take,
    tanh,
    transpose,
    undilate,
    unsqueeze,
    var,
    view,
    where,
)
from ._tensor import Tensor

bool = bool_  # noqa: A001  (torch.bool's spelling; the builtin is not used below)

__all__ = [
    # tensor, dtypes, errors
    "Tensor", "Function", "bool", "bool_", "float32", "float64", "int64", "result_type",
    "promote_types", "can_cast",
    "ShapeError", "DTypeError", "DeviceError",
    # creation
    "tensor", "zeros", "ones", "empty", "full", "rand", "randn", "arange", "zeros_like",
    "ones_like", "manual_seed", "from_numpy", "from_dlpack",
    # autograd
    "backward", "grad", "no_grad", "enable_grad", "set_grad_enabled", "is_grad_enabled",
    "inference_mode",
    "gradcheck", "GradcheckError",
    # ops
    "abs", "add", "amax", "amin", "argmax", "avg_pool2d", "bitwise_and", "bitwise_not",
    "bitwise_or", "bitwise_xor", "broadcast_to", "cat", "chunk",
    "clamp", "conv2d", "cos", "dilate", "div", "dropout", "embedding", "eq", "erf", "exp",
    "floor_divide", "expand", "flatten", "flip", "gather", "ge", "gelu", "gt", "index_put",
    "index_scatter_add", "le", "linear", "log", "log_softmax",
    "logsumexp", "lt", "masked_fill", "masked_select", "matmul", "max_pool2d", "maximum", "mean",
    "minimum", "mul", "ne", "neg", "nonzero", "one_hot",
    "pad", "permute", "pow", "relu", "remainder", "reshape", "scatter", "scatter_add", "sigmoid",
    "sign", "sin",
    "softmax", "split", "sqrt", "squeeze", "stack", "std", "sub", "sum", "take", "tanh",
    "transpose", "undilate", "unsqueeze", "var", "view", "where", "cumsum", "prod",
    # recurrent layers
    "lstm_layer",
    # normalisation
    "batch_norm", "layer_norm",
]
