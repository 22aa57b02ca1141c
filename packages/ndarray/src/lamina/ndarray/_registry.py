"""The backend registry: devices, plugin discovery and the default device.

Backends are found through the ``lamina.backends`` entry-point group (the
numpy reference backend too, from lamina-ndarray's own pyproject). The group
is read once; a plugin's object is imported only when its device is first
requested or when :func:`list_backends` is called, and the outcome is cached.
A plugin that fails to import, declares another ``api_version``, lacks a
required kernel or finds no hardware is recorded with the reason and never
breaks the others; asking for its device raises :class:`DeviceError` naming
the plugin, its version and the reason.

The built-in names ``numpy``, ``cpu`` and ``cuda`` belong to Lamina's own
distributions (:data:`RESERVED`): an entry point of that name from any other
distribution is refused, wherever it sits on ``sys.path``, so an installed
package cannot silently take over a built-in device. Plugin imports run
outside the registry's lock (one lock per backend), so a plugin whose import
hangs stalls only its own device.
"""

from __future__ import annotations

import os
import re
import threading
import time
import traceback as _traceback
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from ._adapter_v1 import V1Backend
from ._dtypes import DTYPES
from ._errors import DeviceError
from ._interface import (
    API_VERSION,
    BackendProtocol,
    KernelTable,
    api_minor_version,
    kernel_dtypes,
    missing_kernels,
    resolve_kernels,
)

__all__ = ["RESERVED", "BackendInfo", "Device", "default_device", "get_device",
           "list_backends", "refresh", "set_default_device"]

GROUP = "lamina.backends"
ENV_VAR = "LAMINA_DEVICE"

_SPEC = re.compile(r"^([A-Za-z_][A-Za-z0-9_.\-]*)(?::(\d+))?$")
_REQUIRED_DTYPES = ("float32", "int64")

RESERVED = {"numpy": "lamina-ndarray", "cpu": "lamina-backend-cpu",
            "cuda": "lamina-backend-cuda"}
"""Built-in device names and the only distribution allowed to register each."""


@dataclass(frozen=True)
class BackendInfo:
    """What the registry knows about one discovered plugin.

    Attributes:
        name: device type the plugin registers (the entry point's name).
        distribution: distribution that declared the entry point, e.g.
            ``"lamina-backend-cuda"`` (``"?"`` when unknown).
        version: that distribution's version (``"?"`` when unknown).
        entry_point: the entry point's value, ``"module:object"``.
        api_version: the interface version the backend declares, or ``None``
            when it could not be loaded or declares none.
        status: ``"available"``, ``"unavailable"``, ``"incompatible"`` or
            ``"failed"``.
        reason: why the backend is not available (empty when it is).
        traceback: the original traceback when loading failed, else empty.
        dtypes: the dtypes the backend lists (empty when unknown).
        api_minor_version: the minor interface version it declares (0 for v1.0 and v2.0).
    """

    name: str
    distribution: str
    version: str
    entry_point: str
    api_version: int | None
    status: str
    reason: str
    traceback: str
    dtypes: tuple[str, ...]
    api_minor_version: int = 0

    @property
    def lacks(self) -> tuple[str, ...]:
        """What the backend does not support of Lamina's dtypes: a dtype it does not
        list, or ``"int64 arithmetic"`` for a v1.0 backend (int64 for indices only)."""
        out = tuple(d.name for d in DTYPES if d.name not in self.dtypes)
        if self.api_version == 1 and self.api_minor_version < 1 and "int64" in self.dtypes:
            out += ("int64 arithmetic",)
        return out

    @property
    def plugin(self) -> str:
        """``"distribution version"``, how error messages name the plugin."""
        return f"{self.distribution} {self.version}"


class Device:
    """A device: one backend, and an index for backends with several devices.

    Get devices with :func:`get_device`; they are cached, one object per name,
    so ``a.device is b.device`` holds whenever ``a.device == b.device``.

    Attributes:
        type: the backend name, e.g. ``"numpy"``, ``"cpu"``, ``"cuda"``.
        index: the device index (0 for single-device backends).
        name: ``type`` for single-device backends, ``f"{type}:{index}"`` for
            backends that provide ``device_count``.
        backend: the loaded backend object.
        kernels: the backend's kernels, resolved once when the device was
            created (optional ones ``None`` where the backend lacks them).
        dtypes: the dtypes the backend lists.
        kernel_dtypes: the dtypes each kernel accepts, by kernel name (see
            :func:`lamina.ndarray._interface.kernel_dtypes`).
        narrow_tables: the float16/bfloat16 kernel tables (``_narrow.py``).

    Example:
        >>> dev = get_device("numpy")
        >>> dev, str(dev), dev is get_device(dev)
        (device('numpy'), 'numpy', True)
        >>> dev.kernels.matmul_strided is not None, dev.kernels.set_num_threads
        (True, None)
    """

    __slots__ = ("type", "index", "name", "backend", "kernels", "dtypes", "kernel_dtypes",
                 "narrow_tables", "_plugin", "_alloc", "_alloc_arg")

    def __init__(self, type: str, index: int, name: str, backend: BackendProtocol,
                 kernels: KernelTable | None = None, plugin: str = "") -> None:
        self.type = type
        self.index = index
        self.name = name
        self.backend = backend
        self.kernels = resolve_kernels(backend) if kernels is None else kernels
        self.dtypes: tuple[str, ...] = tuple(backend.dtypes)
        self.kernel_dtypes = kernel_dtypes(backend)
        # float16/bfloat16 kernel tables by dtype, with the table each was built from
        # (_narrow.widened)
        self.narrow_tables: dict[str, tuple[KernelTable, KernelTable]] = {}
        self._plugin = plugin or type
        # What allocates a buffer, and its dtype argument by dtype name: the
        # optional `empty` with the dtype's index where the backend has it (a
        # cheaper call), else `Array` with the name.
        empty = self.kernels.empty
        self._alloc: Any = self.kernels.Array if empty is None else empty
        self._alloc_arg: dict[str, Any] = {
            d: d if empty is None else i for i, d in enumerate(self.dtypes)}

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"device('{self.name}')"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Device):
            return self.name == other.name
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.name)

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # Unpickling (e.g. in a DataLoader worker) resolves the name again.
        return get_device, (self.name,)

    # ------------------------------------------------------------------ settings
    def _function(self, name: str, what: str) -> Any:
        function = getattr(self.kernels, name)
        if function is None:
            raise DeviceError(f"device {self.name!r} has no {what}: its backend "
                              f"({self._plugin}) does not provide the optional {name}()")
        return function

    def set_num_threads(self, n: int) -> None:
        """Use ``n`` threads (>= 1) for this device's kernels.

        Raises:
            TypeError: ``n`` is not an int.
            ValueError: ``n`` is below 1.
            DeviceError: the backend has no thread setting (e.g. ``numpy``).
        """
        setter = self._function("set_num_threads", "thread setting")
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"set_num_threads: expected an int >= 1, got {type(n).__name__} "
                            f"{n!r}")
        if n < 1:
            raise ValueError(f"set_num_threads: expected an int >= 1, got {n}")
        setter(n)

    def num_threads(self) -> int:
        """How many threads this device's kernels use.

        Raises:
            DeviceError: the backend has no thread setting.
        """
        return int(self._function("num_threads", "thread setting")())

    def memory_stats(self) -> dict[str, int]:
        """The backend allocator's counters (bytes in use, cached, peak, ...).

        Raises:
            DeviceError: the backend reports no memory statistics.
        """
        return dict(self._function("memory_stats", "memory statistics")())

    def empty_cache(self) -> None:
        """Return the allocator's cached, unused blocks to the system.

        Raises:
            DeviceError: the backend has no allocator cache.
        """
        self._function("empty_cache", "allocator cache")()

    def synchronize(self) -> None:
        """Wait until every kernel queued on this device has finished (a no-op
        for backends that run kernels synchronously)."""
        if self.kernels.synchronize is not None:
            self.kernels.synchronize()


class _Registry:
    """Caches: entry points, load outcomes, Device objects and the default.

    ``lock`` guards these dictionaries only and is never held while a plugin
    is imported; ``load_locks`` holds one lock per backend name so that two
    threads asking for the same device import it once.
    """

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.entry_points: dict[str, EntryPoint] | None = None
        self.duplicates: list[tuple[EntryPoint, EntryPoint]] = []
        self.refused: list[EntryPoint] = []
        self.load_locks: dict[str, threading.Lock] = {}
        self.loaded: dict[str, tuple[BackendInfo, Any]] = {}
        self.devices: dict[str, Device] = {}
        self.default: Device | None = None


_state = _Registry()


def refresh() -> None:
    """Forget every cache: entry points, loaded plugins, devices, the default.

    Meant for tests and for long-running sessions that installed a plugin.
    Devices obtained before remain valid objects but are no longer the cached
    ones.
    """
    with _state.lock:
        _state.entry_points = None
        _state.duplicates = []
        _state.refused = []
        _state.load_locks.clear()
        _state.loaded.clear()
        _state.devices.clear()
        _state.default = None


def _dist_of(ep: EntryPoint) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "?", "?"
    name = dist.metadata["Name"] or getattr(dist, "name", None) or "?"
    return str(name), str(dist.version or "?")


def _canonical(dist: str) -> str:
    return re.sub(r"[-_.]+", "-", dist).lower()


def _discover() -> dict[str, EntryPoint]:
    with _state.lock:
        if _state.entry_points is None:
            found: dict[str, EntryPoint] = {}
            duplicates = []
            refused = []
            for ep in entry_points(group=GROUP):
                owner = RESERVED.get(ep.name)
                if owner is not None and _canonical(_dist_of(ep)[0]) != owner:
                    refused.append(ep)
                    continue
                if ep.name in found:
                    if found[ep.name].value != ep.value or _dist_of(ep) != _dist_of(
                            found[ep.name]):
                        duplicates.append((found[ep.name], ep))
                    continue
                found[ep.name] = ep
            _state.entry_points = found
            _state.duplicates = duplicates
            _state.refused = refused
        return _state.entry_points


def _info(ep: EntryPoint, status: str, reason: str = "", tb: str = "",
          api_version: Any = None, dtypes: tuple[str, ...] = (), minor: int = 0
          ) -> BackendInfo:
    dist, version = _dist_of(ep)
    if not isinstance(api_version, int) or isinstance(api_version, bool):
        api_version = None
    return BackendInfo(ep.name, dist, version, ep.value, api_version, status, reason, tb,
                       dtypes, minor)


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _load_entry(ep: EntryPoint) -> tuple[BackendInfo, Any]:
    """Import one plugin and classify it; never raises."""
    try:
        obj = ep.load()
    except (Exception, SystemExit) as exc:
        return _info(ep, "failed", f"import failed: {_describe(exc)}",
                     _traceback.format_exc()), None
    api = getattr(obj, "api_version", None)
    minor = api_minor_version(obj)
    try:
        dtypes = tuple(str(d) for d in getattr(obj, "dtypes", ()))
    except Exception:
        dtypes = ()
    if api == 1:  # a v1.0 or v1.1 plugin: through the adapter (_adapter_v1)
        obj = V1Backend(obj)
    elif api != API_VERSION:
        return _info(ep, "incompatible",
                     f"declares api_version {api!r}, but lamina.ndarray implements "
                     f"api_version {API_VERSION} (and 1, through an adapter); install a "
                     f"release of the plugin built for interface {API_VERSION}",
                     api_version=api, dtypes=dtypes), None
    missing = missing_kernels(obj)
    lacking = [d for d in _REQUIRED_DTYPES if d not in dtypes]
    if missing or lacking:
        what = (f"missing required kernels: {', '.join(missing)}" if missing
                else f"dtypes {dtypes} lack required {', '.join(lacking)}")
        return _info(ep, "incompatible", f"{what} (interface v{API_VERSION}, see "
                     "docs/backend-interface.md)", api_version=api, dtypes=dtypes), None
    try:
        available = bool(obj.is_available())
        reason = "" if available else str(obj.unavailable_reason() or "no reason given")
    except Exception as exc:
        return _info(ep, "failed", f"is_available() raised {_describe(exc)}",
                     _traceback.format_exc(), api, dtypes, minor), None
    if not available:
        return _info(ep, "unavailable", reason, api_version=api, dtypes=dtypes,
                     minor=minor), None
    return _info(ep, "available", api_version=api, dtypes=dtypes, minor=minor), obj


def _load(name: str) -> tuple[BackendInfo, Any] | None:
    """The cached load outcome for backend ``name``; ``None`` when not installed.

    The import runs under the backend's own lock, not the registry's, so a
    plugin that hangs while importing blocks only callers of that backend.
    """
    with _state.lock:
        if name in _state.loaded:
            return _state.loaded[name]
        ep = _discover().get(name)
        if ep is None:
            return None
        gate = _state.load_locks.setdefault(name, threading.Lock())
    with gate:
        with _state.lock:
            if name in _state.loaded:
                return _state.loaded[name]
        outcome = _load_entry(ep)
        with _state.lock:
            return _state.loaded.setdefault(name, outcome)


def _refusal(ep: EntryPoint) -> BackendInfo:
    dist = _dist_of(ep)[0]
    return _info(ep, "failed", f"name {ep.name!r} is reserved for {RESERVED[ep.name]}; "
                 f"{dist} may not register it, so it is ignored; uninstall {dist}")


def _pending(name: str, timeout: float) -> BackendInfo:
    ep = _discover()[name]
    return _info(ep, "failed", f"import did not finish within {timeout:g} s (still "
                 "running; a plugin import that hangs stalls only this device)")


def _load_all(names: list[str], timeout: float | None) -> dict[str, BackendInfo]:
    """Load outcomes of ``names``; with a timeout, each load runs in its own thread."""
    if timeout is None:
        return {name: loaded[0] for name in names if (loaded := _load(name)) is not None}
    workers = {name: threading.Thread(target=_load, args=(name,), daemon=True,
                                      name=f"lamina-load-{name}") for name in names}
    for worker in workers.values():
        worker.start()
    deadline = time.monotonic() + timeout
    infos = {}
    for name, worker in workers.items():
        worker.join(max(0.0, deadline - time.monotonic()))
        with _state.lock:
            loaded = _state.loaded.get(name)
        infos[name] = loaded[0] if loaded is not None else _pending(name, timeout)
    return infos


def list_backends(timeout: float | None = None) -> list[BackendInfo]:
    """Load every discovered plugin and report on each, sorted by name.

    Never raises for a broken plugin: its status and reason say what went
    wrong. A second distribution registering a name already taken is listed
    as ``"failed"`` (the first one found on ``sys.path`` wins), and so is a
    distribution registering a :data:`RESERVED` name it does not own.

    Args:
        timeout: seconds to wait for plugin imports in all; a plugin still
            importing then is listed as ``"failed"`` (not cached: a later
            call waits for it again). ``None`` waits as long as imports take.

    Example:
        >>> [b.status for b in list_backends() if b.name == "numpy"]
        ['available']
    """
    infos = list(_load_all(list(_discover()), timeout).values())
    with _state.lock:
        for kept, dup in _state.duplicates:
            k_dist, k_ver = _dist_of(kept)
            infos.append(_info(dup, "failed", f"name {dup.name!r} is already registered "
                               f"by {k_dist} {k_ver} ({kept.value}); this one is ignored; "
                               "uninstall one of them"))
        infos.extend(_refusal(ep) for ep in _state.refused)
    return sorted(infos, key=lambda info: info.name)


def _unusable(name: str, info: BackendInfo) -> DeviceError:
    if info.status == "unavailable":
        return DeviceError(f"device {name!r} is unavailable: plugin {info.plugin} reports: "
                           f"{info.reason}")
    if info.status == "incompatible":
        return DeviceError(f"device {name!r} is incompatible: plugin {info.plugin} "
                           f"({info.entry_point}): {info.reason}")
    return DeviceError(f"device {name!r} failed to load: plugin {info.plugin} "
                       f"({info.entry_point}): {info.reason}; see the traceback with "
                       "`python -m lamina.ndarray --traceback`")


def _parse(spec: str) -> tuple[str, int | None]:
    match = _SPEC.match(spec.strip())
    if match is None:
        raise DeviceError(f"invalid device {spec!r}: expected a backend name with an "
                          "optional index, e.g. 'numpy', 'cpu' or 'cuda:1'")
    index = match.group(2)
    return match.group(1), None if index is None else int(index)


def _device_count(info: BackendInfo, kernels: KernelTable) -> int | None:
    counter = kernels.device_count
    if counter is None:
        return None
    try:
        return int(counter())
    except Exception as exc:
        raise DeviceError(f"device {info.name!r}: plugin {info.plugin} device_count() "
                          f"raised {_describe(exc)}") from exc


def get_device(spec: str | Device | None = None) -> Device:
    """The :class:`Device` for ``spec``, loading its plugin on first use.

    Args:
        spec: a device name (``"numpy"``, ``"cpu"``, ``"cuda"`` == ``"cuda:0"``,
            ``"cuda:1"``), a :class:`Device` (returned as is), or ``None`` for
            :func:`default_device`.

    Raises:
        DeviceError: the name is malformed or no installed plugin registers it
            (the message lists the installed ones); the plugin failed to load,
            is incompatible or unavailable (the message names the plugin, its
            version and the reason); the index is out of range.
        TypeError: ``spec`` is neither a string, a Device nor None.

    Example:
        >>> get_device("numpy").dtypes
        ('float32', 'float64', 'int64')
    """
    if spec is None:
        return default_device()
    if isinstance(spec, Device):
        return spec
    if not isinstance(spec, str):
        raise TypeError(f"get_device: expected a device name, a Device or None, got "
                        f"{type(spec).__name__} {spec!r}")
    with _state.lock:
        cached = _state.devices.get(spec)
        if cached is not None:
            return cached
    device = _resolve(spec)  # may import the plugin: outside the registry's lock
    with _state.lock:
        return _state.devices.setdefault(spec, device)


def _resolve(spec: str) -> Device:
    type_, index = _parse(spec)
    loaded = _load(type_)
    if loaded is None:
        refused = [ep for ep in _state.refused if ep.name == type_]
        if refused:
            raise DeviceError(f"device {spec!r} is not installed: {_refusal(refused[0]).reason}")
        known = ", ".join(sorted(_discover())) or "none"
        raise DeviceError(f"unknown device {spec!r}: installed backends are {known}; "
                          f"install a plugin that registers {type_!r} in the "
                          f"{GROUP!r} entry-point group")
    info, backend = loaded
    if backend is None:
        raise _unusable(type_ if index is None else spec, info)
    kernels = _kernels_of(type_, backend)
    count = _device_count(info, kernels)
    if count is None:
        if index not in (None, 0):
            raise DeviceError(f"device {spec!r} is out of range: backend {type_!r} "
                              f"({info.plugin}) has a single device; use {type_!r}")
        name, index = type_, 0
    else:
        index = 0 if index is None else index
        if index >= count:
            have = f"{type_}:0..{type_}:{count - 1}" if count else "none"
            raise DeviceError(f"device {spec!r} is out of range: plugin {info.plugin} "
                              f"reports {count} device(s) ({have})")
        name = f"{type_}:{index}"
    with _state.lock:
        cached = _state.devices.get(name)  # "cpu:0" after "cpu": one Device, one table
    if cached is not None:
        return cached
    device = Device(type_, index, name, backend, kernels, info.plugin)
    with _state.lock:
        return _state.devices.setdefault(name, device)


def _kernels_of(type_: str, backend: Any) -> KernelTable:
    """The kernel table of a device of ``type_``: that of a cached device of the
    same backend, or a new one (resolving looks every kernel name up once)."""
    with _state.lock:
        for device in _state.devices.values():
            if device.type == type_ and device.backend is backend:
                return device.kernels
    return resolve_kernels(backend)


def default_device() -> Device:
    """The default device, resolved once and cached.

    ``LAMINA_DEVICE`` when set (an error if that device is not usable), else
    ``cpu`` when that plugin is installed and available, else ``numpy``.
    :func:`set_default_device` overrides it.

    Raises:
        DeviceError: ``LAMINA_DEVICE`` names a device that is not usable.
    """
    with _state.lock:
        if _state.default is not None:
            return _state.default
    picked = _pick_default()
    with _state.lock:
        if _state.default is None:
            _state.default = picked
        return _state.default


def _pick_default() -> Device:
    env = os.environ.get(ENV_VAR, "").strip()
    if env:
        try:
            return get_device(env)
        except DeviceError as exc:
            raise DeviceError(f"{ENV_VAR}={env!r} is not usable: {exc}; unset {ENV_VAR} "
                              "or set it to an available device (see `python -m "
                              "lamina.ndarray`)") from exc
    try:
        return get_device("cpu")
    except DeviceError:
        return get_device("numpy")


def set_default_device(spec: str | Device | None) -> Device | None:
    """Make ``spec`` the default device (``None`` goes back to automatic choice).

    The device is resolved now, so an unusable one raises :class:`DeviceError`
    here rather than at first use.

    Returns:
        The previous explicit or cached default, or ``None`` when none was
        resolved yet.
    """
    device = None if spec is None else get_device(spec)
    with _state.lock:
        previous = _state.default
        _state.default = device
        return previous
