"""Plugins built for interface v1.0 or v1.1, seen through interface v2.

Interface v2 changed two things a plugin shows (``docs/backend-interface.md``):
``ewise_strided(op, ...)``, which took the op's name, became one kernel per op,
``ewise_strided_OP(...)``; and every backend declares its kernels' dtypes,
where a v1.0 backend's arithmetic kernels implicitly took floats only. The
registry wraps a v1.x plugin in :class:`V1Backend`, which supplies both, so
nothing above the registry knows interface v1 existed.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from ._interface import (
    API_MINOR_VERSION,
    API_VERSION,
    BINARY_OPS,
    METADATA,
    OPTIONAL,
    REQUIRED,
    REVERSED_SCALAR_OPS,
    STRIDED_OPS,
    UNARY_OPS,
    api_minor_version,
)

# The kernels interface v1.0 asked to accept float dtypes only (its int64 arrays
# were for indexing and comparisons); a v1.0 backend is read that way.
_V10_ARITHMETIC = ("add", "sub", "mul", "div", "power", "maximum", "minimum")
_V10_FLOAT_ONLY = frozenset(
    [f"{family}_{op}" for family in ("ewise", "scalar", "ewise_strided")
     for op in _V10_ARITHMETIC]
    + [f"scalar_{op}" for op in REVERSED_SCALAR_OPS]
    + [f"ewise_{op}" for op in UNARY_OPS]
    + ["reduce_sum", "reduce_max", "reduce_min", "reduce_argmax", "matmul", "matmul_batched",
       "matmul_strided", "reduce_sum_axis", "softmax_last", "logsumexp_last",
       "layer_norm_last", "im2col", "col2im"])


class V1Backend:
    """A v1.x ``plugin`` with interface v2's names and declarations.

    Every attribute the plugin has passes through, except the version, the
    per-op strided kernels (``ewise_strided_OP`` calls the plugin's
    ``ewise_strided`` with the op's name, bound once here) and
    ``kernel_dtypes`` (spelled out for every kernel, as v2 asks).
    """

    def __init__(self, plugin: Any) -> None:
        self._plugin = plugin
        self.api_version = API_VERSION
        self.api_minor_version = API_MINOR_VERSION
        self.adapted_from = (1, api_minor_version(plugin))
        strided = getattr(plugin, "ewise_strided", None)
        # v1 asked ewise_strided to take the ops of the v1.0 binary family
        self._strided = ({f"ewise_strided_{op}": partial(strided, op) for op in BINARY_OPS}
                         if strided is not None else {})
        self.kernel_dtypes = self._declared_dtypes()

    def __getattr__(self, name: str) -> Any:
        strided = self.__dict__.get("_strided", {})
        if name in strided:
            return strided[name]
        if name == "ewise_strided" or name.startswith("ewise_strided_"):
            raise AttributeError(name)  # v2 has no string-keyed strided kernel
        return getattr(self.__dict__["_plugin"], name)

    def __repr__(self) -> str:
        major, minor = self.adapted_from
        return f"<{self._plugin!r} through the interface v{major}.{minor} adapter>"

    def _declared_dtypes(self) -> dict[str, tuple[str, ...]]:
        plugin = self._plugin
        listed = tuple(str(d) for d in getattr(plugin, "dtypes", ()))
        names = [n for n in REQUIRED + OPTIONAL if n not in METADATA and hasattr(self, n)]
        if self.adapted_from[1] >= 1:
            declared = {k: tuple(v) for k, v in
                        dict(getattr(plugin, "kernel_dtypes", {}) or {}).items()}
            strided = declared.get("ewise_strided", listed)
            for op in STRIDED_OPS:
                name = f"ewise_strided_{op}"
                if name in names:
                    own = declared.get(f"ewise_{op}", listed)
                    declared[name] = tuple(d for d in strided if d in own)
            return declared
        floats = tuple(d for d in listed if d.startswith("float"))
        return {n: floats for n in names if n in _V10_FLOAT_ONLY}
