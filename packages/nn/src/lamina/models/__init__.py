"""Reference models and the training recipes behind ``lamina-train``."""

from ._gpt import GPT, GPTConfig, KVCache, StaticKVCache
from ._language_model import LanguageModel, detach_hidden, evaluate_lm, train_lm_epoch
from ._loading import load_model
from ._mlp import MLP, MLPResNet, ResidualBlock
from ._resnet import CIFARResNet9, ConvBN, ResNet9
from ._sampling import generate, generate_tokens
from ._trainer import evaluate, fit, train_epoch

__all__ = [
    "MLP", "CIFARResNet9", "ConvBN", "MLPResNet", "ResNet9", "ResidualBlock", "evaluate", "fit",
    "train_epoch",
    "LanguageModel", "detach_hidden", "evaluate_lm", "train_lm_epoch",
    "GPT", "GPTConfig", "KVCache", "StaticKVCache", "generate", "generate_tokens", "load_model",
]
