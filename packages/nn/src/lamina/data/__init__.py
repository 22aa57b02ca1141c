"""Datasets, data loading and transforms (numpy in, Tensors out of the DataLoader)."""

from . import transforms
from ._cifar import CIFAR10, CIFAR10_MEAN, CIFAR10_STD, SafeUnpickler, load_cifar_batch
from ._dataset import ConcatDataset, Dataset, Subset, TensorDataset, random_split
from ._distributed import DistributedSampler
from ._loader import DataLoader, WorkerError, default_collate, to_tensors
from ._mnist import MNIST, DatasetFileError, bundled_mnist_dir, download_mnist, read_idx
from ._ptb import PTB, BPTTBatches, TextCorpus, batchify
from ._random import seed_transforms, transform_rng
from ._shakespeare import Shakespeare, default_shakespeare_dir
from ._text import CharTokenizer, Vocabulary, WordTokenizer

__all__ = [
    "MNIST", "CharTokenizer", "ConcatDataset", "DataLoader", "Dataset", "DatasetFileError",
    "DistributedSampler",
    "Subset", "TensorDataset", "Vocabulary", "WordTokenizer", "bundled_mnist_dir",
    "default_collate", "download_mnist", "random_split", "read_idx", "seed_transforms",
    "to_tensors", "transform_rng", "transforms", "CIFAR10", "CIFAR10_MEAN", "CIFAR10_STD",
    "SafeUnpickler", "load_cifar_batch", "PTB", "BPTTBatches", "TextCorpus", "batchify",
    "Shakespeare", "default_shakespeare_dir", "WorkerError",
]
