"""Every op, grouped by family, and the registry that lists them.

``PRIMITIVES`` maps an op name to its ``Function`` (forward + backward rule,
or ``differentiable = False``); ``COMPOSITES`` maps a name to a function built
from primitives only, with no backward code. The registry test checks that
each name has a gradient rule or is declared non-differentiable, and a test
record.

The op table's functions (``add``, ``maximum``, ``logical_xor``, ...) are
added to this namespace and ``__all__`` from ``table.FUNCTIONS``, not by name.
"""

from __future__ import annotations

import typing as _typing
from collections.abc import Callable

from .._function import Function
from . import (
    attention,
    conv,
    elementwise,
    gru,
    index,
    linalg,
    loss,
    normalization,
    reduce,
    rnn,
    scattering,
    shape,
    table,
)
from .attention import scaled_dot_product_attention, scaled_dot_product_attention_reference
from .conv import avg_pool2d, conv2d, conv_transpose2d, im2col, max_pool2d
from .elementwise import (
    clamp,
    dropout,
    gelu,
    gelu_reference,
    relu,
    sigmoid,
    where,
)
from .gru import gru_layer, gru_layer_reference
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
from .loss import nll_loss
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
_FAMILIES = (table, elementwise, linalg, reduce, shape, index, scattering, conv, rnn, gru,
             normalization, loss, attention)

PRIMITIVES: dict[str, type[Function]] = {
    op.name: op for family in _FAMILIES for op in family.PRIMITIVES}
COMPOSITES: dict[str, Callable[..., _typing.Any]] = {
    fn.__name__: fn for family in _FAMILIES for fn in family.COMPOSITES}

__all__ = [
    "PRIMITIVES", "COMPOSITES", "amax", "amin", "argmax", "avg_pool2d", "batch_norm",
    "batch_norm_reference", "broadcast_to", "cat", "chunk", "clamp", "conv2d", "dilate",
    "conv_transpose2d",
    "dropout", "embedding", "expand", "flatten", "flip", "gather", "gelu", "gelu_reference",
    "getitem", "index_put", "index_scatter_add", "masked_fill", "masked_select", "nonzero",
    "im2col", "linear", "log_softmax", "logsumexp", "matmul", "max_pool2d", "mean", "nll_loss",
    "one_hot",
    "pad", "permute", "relu", "reshape", "scatter", "scatter_add", "sigmoid", "slice_scatter",
    "softmax", "split", "squeeze", "stack", "std", "sum", "take", "transpose", "undilate",
    "unsqueeze", "var", "view", "where", "lstm_layer", "lstm_layer_reference", "layer_norm",
    "layer_norm_reference", "cumsum", "prod", "ValuesIndices", "argsort", "bernoulli", "max",
    "min", "multinomial", "normal", "sort", "topk", "gru_layer", "gru_layer_reference",
    "scaled_dot_product_attention", "scaled_dot_product_attention_reference",
]

# The op table's public functions, one per op (and logical_*): see table.py.
globals().update(table.FUNCTIONS)
__all__ += list(table.FUNCTIONS)

if _typing.TYPE_CHECKING:
    def __getattr__(name: str) -> _typing.Any:
        """The op table's functions, set above (``add``, ``exp``, ``maximum``, ...)."""
