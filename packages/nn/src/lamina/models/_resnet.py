"""Residual convolutional networks for 32x32 CIFAR-10 images.

Two ResNet9s:

- :class:`ResNet9`, the small network of CMU 10-714 (dlsys) hw4: conv-bn-relu
  blocks with 16-32-64-128 channels, two residual pairs, 431,946 parameters.
- :class:`CIFARResNet9`, the DAWNBench-style network of David Page's
  "How to train your ResNet" (64-128-256-512 channels, max pooling, a
  scaled linear head), about 6.57M parameters.
"""

from __future__ import annotations

from typing import Any

from lamina import nn
from lamina.autograd import Tensor

__all__ = ["CIFARResNet9", "ConvBN", "ResNet9"]


class ConvBN(nn.Sequential):
    """Conv2d (padding k // 2) -> BatchNorm2d -> ReLU.

    Args:
        in_channels, out_channels: C_in and C_out.
        kernel_size: an odd square kernel size.
        stride: the convolution's stride.
        bias: give the convolution a bias (dlsys does; a following
            BatchNorm makes it redundant, so Page's network does not).
        device: where the parameters live.

    Shape:
        (N, C_in, H, W) -> (N, C_out, ceil(H / stride), ceil(W / stride)).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 bias: bool = True, device: Any = None) -> None:
        super().__init__(
            nn.Conv2d(in_channels, out_channels, kernel_size, stride=stride,
                      padding=kernel_size // 2, bias=bias, device=device),
            nn.BatchNorm2d(out_channels, device=device),
            nn.ReLU())


class ResNet9(nn.Sequential):
    """The dlsys ResNet9 (CMU 10-714 hw4): 431,946 parameters.

    Layout (for 32x32 inputs): ConvBN(3, 16, 7, stride 4) -> ConvBN(16, 32, 3, 2)
    -> Residual(ConvBN(32, 32, 3) x2) -> ConvBN(32, 64, 3, 2) -> ConvBN(64, 128, 3, 2)
    -> Residual(ConvBN(128, 128, 3) x2) -> Flatten -> Linear(128, 128) -> ReLU
    -> Linear(128, num_classes).

    Args:
        num_classes: output logits.
        device: where the parameters live.

    Shape:
        (N, 3, 32, 32) -> (N, num_classes).

    Example:
        >>> from lamina import autograd
        >>> model = ResNet9()
        >>> model.num_parameters(), model(autograd.randn(2, 3, 32, 32)).shape
        (431946, (2, 10))
    """

    def __init__(self, num_classes: int = 10, device: Any = None) -> None:
        def res(channels: int) -> nn.Module:
            return nn.Residual(nn.Sequential(ConvBN(channels, channels, 3, device=device),
                                             ConvBN(channels, channels, 3, device=device)))

        super().__init__(
            ConvBN(3, 16, 7, 4, device=device), ConvBN(16, 32, 3, 2, device=device), res(32),
            ConvBN(32, 64, 3, 2, device=device), ConvBN(64, 128, 3, 2, device=device), res(128),
            nn.Flatten(), nn.Linear(128, 128, device=device), nn.ReLU(),
            nn.Linear(128, num_classes, device=device))


class Scale(nn.Module):
    """Multiply by a constant (Page's 0.125 on the logits); any shape."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def forward(self, x: Tensor) -> Tensor:
        return x * self.factor

    def extra_repr(self) -> str:
        return f"{self.factor}"


class CIFARResNet9(nn.Sequential):
    """The DAWNBench-style ResNet9 (64-128-256-512 channels), about 6.57M parameters.

    Layout: prep ConvBN(3, 64) -> ConvBN(64, 128) + MaxPool(2) + Residual(ConvBN x2)
    -> ConvBN(128, 256) + MaxPool(2) -> ConvBN(256, 512) + MaxPool(2)
    + Residual(ConvBN x2) -> MaxPool(4) -> Flatten -> Linear(512, num_classes,
    no bias) -> x0.125. Convolutions are 3x3 without bias.

    Args:
        num_classes: output logits.
        device: where the parameters live.

    Shape:
        (N, 3, 32, 32) -> (N, num_classes).
    """

    def __init__(self, num_classes: int = 10, device: Any = None) -> None:
        def cbn(cin: int, cout: int) -> nn.Module:
            return ConvBN(cin, cout, 3, bias=False, device=device)

        def res(channels: int) -> nn.Module:
            return nn.Residual(nn.Sequential(cbn(channels, channels), cbn(channels, channels)))

        super().__init__(
            cbn(3, 64),
            cbn(64, 128), nn.MaxPool2d(2), res(128),
            cbn(128, 256), nn.MaxPool2d(2),
            cbn(256, 512), nn.MaxPool2d(2), res(512),
            nn.MaxPool2d(4), nn.Flatten(),
            nn.Linear(512, num_classes, bias=False, device=device), Scale(0.125))
