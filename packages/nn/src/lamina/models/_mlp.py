"""Reference models: MLP and MLPResNet (as in CMU 10-714 dlsys, homework 2)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from lamina import nn

__all__ = ["MLP", "MLPResNet", "ResidualBlock"]


def MLP(in_features: int = 784, hidden: Sequence[int] = (512, 512),  # noqa: N802
        num_classes: int = 10, drop_prob: float = 0.0) -> nn.Sequential:
    """A multilayer perceptron: Flatten, then (Linear, ReLU, Dropout) per hidden layer.

    Args:
        in_features: size of the flattened input.
        hidden: widths of the hidden layers.
        num_classes: output logits.
        drop_prob: dropout after each hidden activation (0 disables it).

    Shape:
        input (N, *) with prod(*) = in_features -> logits (N, num_classes).

    Example:
        >>> from lamina import autograd
        >>> MLP(784, (32,), 10)(autograd.zeros(2, 1, 28, 28)).shape
        (2, 10)
    """
    layers: list[nn.Module] = [nn.Flatten()]
    width = in_features
    for size in hidden:
        layers += [nn.Linear(width, size), nn.ReLU()]
        if drop_prob:
            layers.append(nn.Dropout(drop_prob))
        width = size
    layers.append(nn.Linear(width, num_classes))
    return nn.Sequential(*layers)


def ResidualBlock(dim: int, hidden_dim: int,  # noqa: N802
                  norm: Callable[[int], nn.Module] = nn.BatchNorm1d,
                  drop_prob: float = 0.1) -> nn.Sequential:
    """ReLU(x + norm(Linear(Dropout(ReLU(norm(Linear(x))))))).

    Shape:
        (N, dim) -> (N, dim).
    """
    inner = nn.Sequential(nn.Linear(dim, hidden_dim), norm(hidden_dim), nn.ReLU(),
                          nn.Dropout(drop_prob), nn.Linear(hidden_dim, dim), norm(dim))
    return nn.Sequential(nn.Residual(inner), nn.ReLU())


def MLPResNet(dim: int = 784, hidden_dim: int = 100, num_blocks: int = 3,  # noqa: N802
              num_classes: int = 10, norm: Callable[[int], nn.Module] = nn.BatchNorm1d,
              drop_prob: float = 0.1) -> nn.Sequential:
    """Flatten, Linear(dim, hidden), ReLU, num_blocks ResidualBlocks(hidden, hidden // 2), Linear.

    Args:
        dim: size of the flattened input.
        hidden_dim: width of the residual stream.
        num_blocks: residual blocks.
        num_classes: output logits.
        norm: normalisation layer factory (BatchNorm1d or LayerNorm).
        drop_prob: dropout inside each block.

    Shape:
        input (N, *) with prod(*) = dim -> logits (N, num_classes).
    """
    blocks = [ResidualBlock(hidden_dim, hidden_dim // 2, norm, drop_prob)
              for _ in range(num_blocks)]
    return nn.Sequential(nn.Flatten(), nn.Linear(dim, hidden_dim), nn.ReLU(), *blocks,
                         nn.Linear(hidden_dim, num_classes))
