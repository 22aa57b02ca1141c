"""Every op, grouped by family, and the registry that lists them.

``PRIMITIVES`` maps an op name to its ``Function`` (forward + backward rule,
or ``differentiable = False``); ``COMPOSITES`` maps a name to a function built
from primitives only, with no backward code. The registry test checks that
each name has a gradient rule or is declared non-differentiable, and a test
record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._function import Function
from . import conv, elementwise, index, linalg, normalization, reduce, rnn, scattering, shape
from .conv import avg_pool2d, conv2d, im2col, max_pool2d
from .elementwise import (
    abs,
    add,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    clamp,
    cos,
    div,
    dropout,
    eq,
    erf,
    exp,
    floor_divide,
    ge,
    gelu,
    gelu_reference,
    gt,
    le,
    log,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    pow,
    relu,
    remainder,
    sigmoid,
    sign,
    sin,
    sqrt,
    sub,
    tanh,
    where,
)
from .index import (
    embedding,
    getitem,
    index_scatter_add,
    masked_fill,
    masked_select,
    nonzero,
    one_hot,
    take,
)
from .linalg import linear, matmul
from .normalization import batch_norm, batch_norm_reference, layer_norm, layer_norm_reference
from .reduce import (
    amax,
    amin,
    argmax,
    cumsum,
    log_softmax,
    logsumexp,
    mean,
    prod,
    softmax,
    std,
    sum,
    var,
)
from .rnn import lstm_layer, lstm_layer_reference
from .sampling import bernoulli, multinomial, normal
from .scattering import gather, index_put, scatter, scatter_add
from .shape import (
    broadcast_to,
    cat,
    chunk,
    dilate,
    expand,
    flatten,
    flip,
    pad,
    permute,
    reshape,
    slice_scatter,
    split,
    squeeze,
    stack,
    transpose,
    undilate,
    unsqueeze,
    view,
)
from .sorting import ValuesIndices, argsort, max, min, sort, topk  # noqa: A004

# sampling and sorting are not families: their ops are host draws (no gradient) and
# gathers of registered ops, tested in test_sampling.py and test_sorting.py.
_FAMILIES = (elementwise, linalg, reduce, shape, index, scattering, conv, rnn, normalization)

PRIMITIVES: dict[str, type[Function]] = {
    op.name: op for family in _FAMILIES for op in family.PRIMITIVES}
COMPOSITES: dict[str, Callable[..., Any]] = {
    fn.__name__: fn for family in _FAMILIES for fn in family.COMPOSITES}

__all__ = [
    "PRIMITIVES", "COMPOSITES", "bitwise_and", "bitwise_not", "bitwise_or", "bitwise_xor", "abs",
    "add", "amax", "amin", "argmax", "avg_pool2d", "batch_norm", "batch_norm_reference",
    "broadcast_to", "cat", "chunk", "clamp", "conv2d", "cos", "dilate", "div", "dropout",
    "embedding", "eq", "erf", "exp", "floor_divide", "expand", "flatten", "flip", "gather",
    "ge", "gelu",
    "gelu_reference", "getitem", "gt", "index_put", "index_scatter_add", "masked_fill",
    "masked_select", "nonzero", "im2col", "le", "linear", "log", "log_softmax", "logsumexp", "lt",
    "matmul", "max_pool2d", "maximum", "mean", "minimum", "mul", "ne", "neg", "one_hot", "pad",
    "permute", "pow", "relu", "remainder", "reshape", "scatter", "scatter_add", "sigmoid",
    "sign", "sin",
    "slice_scatter", "softmax", "split", "sqrt", "squeeze", "stack", "std", "sub", "sum", "take",
    "tanh", "transpose", "undilate", "unsqueeze", "var", "view", "where", "lstm_layer",
    "lstm_layer_reference", "layer_norm", "layer_norm_reference", "cumsum", "prod",
    "ValuesIndices", "argsort", "bernoulli", "max", "min", "multinomial", "normal", "sort",
    "topk",
]
