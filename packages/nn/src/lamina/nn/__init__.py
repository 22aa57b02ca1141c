"""Modules, layers, losses, initialisation and checkpoints (PyTorch-shaped).

``save``/``load`` live here rather than at ``lamina.save``: ``lamina`` is a
PEP 420 namespace package shared by several distributions, so it has no
``__init__.py`` that could hold functions.
"""

from . import functional, init, utils
from ._activations import (
    CELU,
    ELU,
    GLU,
    SELU,
    Hardshrink,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    RReLU,
    SiLU,
    Softmax2d,
    Softmin,
    Softplus,
    Softshrink,
    Softsign,
    Tanhshrink,
    Threshold,
)
from ._attention import MultiheadAttention
from ._containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from ._conv import Conv1d, Conv2d, ConvTranspose2d
from ._distance import CosineSimilarity, PairwiseDistance
from ._errors import CheckpointError, ShapeError, StateDictError
from ._layers import (
    GELU,
    AlphaDropout,
    Dropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    Embedding,
    FeatureAlphaDropout,
    Flatten,
    Identity,
    Linear,
    LogSoftmax,
    ReLU,
    Residual,
    Sigmoid,
    Softmax,
    Tanh,
    Unflatten,
)
from ._loss import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MSELoss,
    NLLLoss,
    SmoothL1Loss,
)
from ._module import IncompatibleKeys, Module
from ._norm import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm, RMSNorm
from ._padding import (
    CircularPad1d,
    CircularPad2d,
    ConstantPad1d,
    ConstantPad2d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReplicationPad1d,
    ReplicationPad2d,
    ZeroPad1d,
    ZeroPad2d,
)
from ._parameter import Parameter
from ._pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
from ._pooling1d import AdaptiveAvgPool1d, AvgPool1d, MaxPool1d
from ._positional import PositionalEmbedding, SinusoidalPositionalEncoding
from ._rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from ._serialization import load, save
from ._transformer import (
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from ._upsample import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

__all__ = [
    "GELU", "BatchNorm1d", "CheckpointError", "CrossEntropyLoss", "Dropout", "Embedding",
    "Flatten", "Identity", "IncompatibleKeys", "LayerNorm", "Linear", "LogSoftmax", "MSELoss",
    "Module", "ModuleDict", "ModuleList", "NLLLoss", "Parameter", "ReLU", "Residual",
    "Sequential", "ShapeError", "Sigmoid", "Softmax", "StateDictError", "Tanh", "functional",
    "init", "load", "save", "utils",
    "MultiheadAttention", "PositionalEmbedding", "SinusoidalPositionalEncoding",
    "TransformerDecoderLayer", "TransformerEncoderLayer",
    "Transformer", "TransformerDecoder", "TransformerEncoder",
    "LSTM", "LSTMCell", "RNN", "RNNCell", "GRU", "GRUCell", "Conv1d", "ConvTranspose2d",
    "AdaptiveAvgPool2d", "AvgPool2d", "BatchNorm2d", "Conv2d", "MaxPool2d",
    "BCELoss", "BCEWithLogitsLoss", "HuberLoss", "KLDivLoss", "L1Loss", "SmoothL1Loss",
    "CELU", "ELU", "SELU", "GroupNorm", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
    "LogSigmoid", "Mish", "PReLU", "ParameterDict", "ParameterList", "ReLU6", "SiLU",
    "Softmin", "Softplus", "Softsign", "Unflatten",
]
__all__ += [
    "CircularPad1d", "CircularPad2d", "ConstantPad1d", "ConstantPad2d", "CosineSimilarity",
    "PairwiseDistance", "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d",
    "ReplicationPad2d", "ZeroPad1d", "ZeroPad2d",
]
__all__ += [
    "AlphaDropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout", "GLU",
    "Hardshrink", "RMSNorm", "RReLU", "Softmax2d", "Softshrink", "Tanhshrink", "Threshold",
]
__all__ += [
    "AdaptiveAvgPool1d", "AvgPool1d", "MaxPool1d", "Upsample", "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
]
