"""Optimizers and learning-rate schedulers (PyTorch-shaped).

Gradient clipping lives in :mod:`lamina.nn.utils` (``clip_grad_norm_``), as
in PyTorch, and is re-exported here for convenience.
"""

from lamina.nn.utils import clip_grad_norm_

from . import lr_scheduler
from ._adadelta import Adadelta
from ._adam import Adam, AdamW
from ._adam_variants import Adamax, NAdam, RAdam
from ._optimizer import Optimizer, ParamState
from ._rmsprop import Adagrad, RMSprop
from ._sgd import SGD

__all__ = ["SGD", "Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "NAdam", "Optimizer",
           "ParamState", "RAdam", "RMSprop", "clip_grad_norm_", "lr_scheduler"]
