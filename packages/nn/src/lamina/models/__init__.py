"""Reference models and the training recipes behind ``lamina-train``."""

from ._mlp import MLP, MLPResNet, ResidualBlock
from ._trainer import evaluate, fit, train_epoch

__all__ = ["MLP", "MLPResNet", "ResidualBlock", "evaluate", "fit", "train_epoch"]
