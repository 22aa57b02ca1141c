"""Error classes shared by every Lamina layer.

Messages name the op, show the offending values, and end with the fix where
there is one: ``matmul: shapes (2, 3) and (4, 5) are not aligned: 3 (dim 1 of
arg 0) != 4 (dim 0 of arg 1)``.
"""


class ShapeError(ValueError):
    """A shape, axis or size that does not fit the op."""


class DTypeError(TypeError):
    """A dtype the op or the device does not support."""


class DeviceError(RuntimeError):
    """A device that is unknown, unavailable, or mixed with another in one op."""
