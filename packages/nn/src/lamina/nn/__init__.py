"""Modules, layers, losses, initialisation and checkpoints (PyTorch-shaped).

``save``/``load`` live here rather than at ``lamina.save``: ``lamina`` is a
PEP 420 namespace package shared by several distributions, so it has no
``__init__.py`` that could hold functions.
"""

from . import functional, init, utils
from ._activations import (
    CELU,
    ELU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    SiLU,
    Softmin,
    Softplus,
    Softsign,
)
from ._attention import MultiheadAttention
from ._containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from ._conv import Conv1d, Conv2d, ConvTranspose2d
from ._errors import CheckpointError, ShapeError, StateDictError
from ._layers import (
    GELU,
    Dropout,
    Embedding,
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
from ._norm import BatchNorm1d, BatchNorm2d, GroupNorm, LayerNorm
from ._parameter import Parameter
from ._pooling import AdaptiveAvgPool2d, AvgPool2d, MaxPool2d
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
