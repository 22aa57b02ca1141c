"""Automatic mixed precision, as ``torch.amp``: ``autocast`` and ``GradScaler``.

``autocast`` (from lamina.autograd) runs matrix products in bfloat16 or float16
and losses, norms and reductions in float32; ``GradScaler`` scales the loss so
that float16 gradients do not underflow, and skips the steps whose gradients
overflowed. See the mixed-precision guide in the docs.

Example:
    >>> from lamina import autograd, nn, optim
    >>> from lamina.amp import GradScaler, autocast
    >>> net = nn.Linear(4, 2)
    >>> opt = optim.SGD(net.parameters(), lr=0.1)
    >>> scaler = GradScaler()
    >>> with autocast("cpu"):
    ...     loss = (net(autograd.ones(3, 4)) ** 2).mean()
    >>> scaler.scale(loss).backward()
    >>> scaler.step(opt)
    >>> scaler.update()
    >>> scaler.get_scale()
    65536.0
"""

from lamina.autograd import autocast, get_autocast_dtype, is_autocast_enabled

from ._grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "get_autocast_dtype", "is_autocast_enabled"]
