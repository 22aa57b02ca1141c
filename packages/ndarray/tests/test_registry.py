"""The plugin registry, with fake plugins installed through real entry points.

Each fake plugin is a ``*.dist-info`` directory (METADATA + entry_points.txt)
next to its module in a temporary directory; the checks run in a subprocess
with that directory on ``PYTHONPATH``, so discovery goes through
``importlib.metadata`` exactly as for a pip-installed plugin.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from lamina.ndarray import API_MINOR_VERSION, API_VERSION, DeviceError, get_device, list_backends
from lamina.ndarray._registry import Device, _state, default_device, refresh, set_default_device

# A full backend built on the numpy one, so only the behaviour under test differs.
_DELEGATE = """
from lamina.ndarray._numpy_backend import backend as _numpy

class Backend:
    name = {name!r}
    api_version = {api_version!r}
    dtypes = ("float32", "int64")
    def __getattr__(self, attr):
        if attr in {hidden!r}:
            raise AttributeError(attr)
        return getattr(_numpy, attr)
    def is_available(self):
        return {available!r}
    def unavailable_reason(self):
        return "" if {available!r} else "no CUDA-capable device is detected"
{extra}
backend = Backend()
"""

PLUGINS = {
    # entry name: (distribution, version, module, module source)
    "broken": ("fake-broken", "0.1", "fake_broken",
               "raise ImportError('libfake.so.1: cannot open shared object file')\n"),
    "oldapi": ("fake-oldapi", "0.2", "fake_oldapi",
               _DELEGATE.format(name="oldapi", api_version=3, hidden=(), available=True,
                                extra="")),
    "partial": ("fake-partial", "0.3", "fake_partial",
                _DELEGATE.format(name="partial", api_version=2,
                                 hidden=("matmul", "reduce_argmax"), available=True,
                                 extra="")),
    "fakegpu": ("lamina-backend-fakegpu", "0.1.0", "fake_gpu",
                _DELEGATE.format(name="fakegpu", api_version=2, hidden=(), available=False,
                                 extra="")),
    "multi": ("fake-multi", "1.0", "fake_multi",
              _DELEGATE.format(name="multi", api_version=2, hidden=(), available=True,
                               extra="    def device_count(self):\n        return 2\n")),
}

# A stand-in for the real cpu plugin: it must come from the distribution that owns
# the name (see RESERVED), or the registry refuses it.
CPU = {"cpu": ("lamina-backend-cpu", "9.9", "fake_cpu",
               _DELEGATE.format(name="cpu", api_version=2, hidden=(), available=True,
                                extra=""))}


def install(root: Path, plugins: dict[str, tuple[str, str, str, str]]) -> Path:
    """Write each plugin as a module plus a dist-info with its entry point."""
    root.mkdir(parents=True, exist_ok=True)
    for entry, (dist, version, module, source) in plugins.items():
        (root / f"{module}.py").write_text(source)
        info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir(exist_ok=True)  # one distribution may register several names
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        points = info / "entry_points.txt"
        lines = points.read_text() if points.exists() else "[lamina.backends]\n"
        points.write_text(f"{lines}{entry} = {module}:backend\n")
    return root


# Some checks compare the whole table of backends or the automatic default, so
# they need an environment where numpy is the only real backend (``nox -s
# ndarray``, which CI runs too); beside the compiled plugins they would test
# the environment rather than the registry.
REAL_PLUGINS = sorted(ep.name for ep in entry_points(group="lamina.backends")
                      if ep.name != "numpy")
bare_install = pytest.mark.skipif(
    bool(REAL_PLUGINS), reason=f"needs numpy as the only installed backend; found "
    f"{', '.join(REAL_PLUGINS)} (run `nox -s ndarray`)")


@pytest.fixture(scope="module")
def fakes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("fakes"), PLUGINS)


def run(path: Path, code: str, device: str | None = None,
        args: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """Run ``code`` (or ``-m lamina.ndarray`` when empty) with ``path`` on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(path), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("LAMINA_DEVICE", None)
    if device is not None:
        env["LAMINA_DEVICE"] = device
    cmd = [sys.executable, "-c", textwrap.dedent(code)] if code else [
        sys.executable, "-m", "lamina.ndarray", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)


def run_json(path: Path, code: str, device: str | None = None) -> dict:
    proc = run(path, code, device)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


ERRORS = """
import json
from lamina.ndarray import DeviceError, get_device
out = {}
for spec in SPECS:
    try:
        out[spec] = ["ok", str(get_device(spec))]
    except DeviceError as exc:
        out[spec] = [type(exc).__name__, str(exc)]
print(json.dumps(out))
"""


def device_errors(path: Path, *specs: str) -> dict[str, list[str]]:
    return run_json(path, ERRORS.replace("SPECS", repr(list(specs))))


@bare_install
def test_import_loads_no_plugin_and_numpy_keeps_working(fakes):
    out = run_json(fakes, """
        import json, sys
        import lamina.ndarray as ln
        fakes = ["fake_broken", "fake_oldapi", "fake_partial", "fake_gpu", "fake_multi"]
        before = [m for m in fakes if m in sys.modules]
        x = ln.ones((2, 3), device="numpy") + 1
        after_use = [m for m in fakes if m in sys.modules]
        ln.list_backends()
        after_list = [m for m in fakes if m in sys.modules]
        print(json.dumps([before, after_use, after_list, float(x.sum().item()),
                          str(ln.default_device())]))
    """)
    before, after_use, after_list, total, default = out
    assert before == [] and after_use == []
    assert sorted(after_list) == ["fake_gpu", "fake_multi", "fake_oldapi", "fake_partial"]
    assert total == 12.0
    assert default == "numpy"


@bare_install
def test_list_backends_statuses_and_reasons(fakes):
    out = run_json(fakes, """
        import dataclasses, json
        from lamina.ndarray import list_backends
        print(json.dumps({b.name: dataclasses.asdict(b) for b in list_backends()}))
    """)
    assert {name: info["status"] for name, info in out.items()} == {
        "broken": "failed", "fakegpu": "unavailable", "multi": "available",
        "numpy": "available", "oldapi": "incompatible", "partial": "incompatible"}
    broken = out["broken"]
    assert broken["distribution"] == "fake-broken" and broken["version"] == "0.1"
    assert broken["entry_point"] == "fake_broken:backend"
    assert broken["reason"] == ("import failed: ImportError: libfake.so.1: cannot open "
                                "shared object file")
    assert "Traceback" in broken["traceback"] and "fake_broken.py" in broken["traceback"]
    assert broken["api_version"] is None and broken["dtypes"] == []
    assert out["oldapi"]["api_version"] == 3
    assert out["oldapi"]["reason"].startswith("declares api_version 3, but lamina.ndarray "
                                              "implements api_version 2 (and 1, through an "
                                              "adapter)")
    assert out["partial"]["reason"].startswith("missing required kernels: matmul, "
                                               "reduce_argmax")
    assert out["fakegpu"]["reason"] == "no CUDA-capable device is detected"
    assert out["fakegpu"]["traceback"] == ""
    assert out["numpy"]["distribution"] == "lamina-ndarray"
    assert out["numpy"]["dtypes"] == ["float32", "float64", "int64", "bool", "float16", "bfloat16"]
    assert out["multi"]["reason"] == ""


@bare_install
def test_get_device_errors_name_the_plugin_version_and_reason(fakes):
    out = device_errors(fakes, "fakegpu", "broken", "oldapi", "partial", "nosuch",
                        "multi:2", "numpy:1", "bad name")
    assert out["fakegpu"] == ["DeviceError", "device 'fakegpu' is unavailable: plugin "
                              "lamina-backend-fakegpu 0.1.0 reports: no CUDA-capable "
                              "device is detected"]
    assert out["broken"][1].startswith(
        "device 'broken' failed to load: plugin fake-broken 0.1 (fake_broken:backend): "
        "import failed: ImportError: libfake.so.1: cannot open shared object file; ")
    assert out["oldapi"][1].startswith(
        "device 'oldapi' is incompatible: plugin fake-oldapi 0.2 (fake_oldapi:backend): "
        "declares api_version 3, but lamina.ndarray implements api_version 2 (and 1, "
        "through an adapter); install ")
    assert "missing required kernels: matmul, reduce_argmax" in out["partial"][1]
    assert out["nosuch"] == ["DeviceError", "unknown device 'nosuch': installed backends "
                             "are broken, fakegpu, multi, numpy, oldapi, partial; install "
                             "a plugin that registers 'nosuch' in the 'lamina.backends' "
                             "entry-point group"]
    assert out["multi:2"] == ["DeviceError", "device 'multi:2' is out of range: plugin "
                              "fake-multi 1.0 reports 2 device(s) (multi:0..multi:1)"]
    assert out["numpy:1"][0] == "DeviceError" and "single device" in out["numpy:1"][1]
    assert out["bad name"][0] == "DeviceError" and "invalid device" in out["bad name"][1]


def test_multi_device_names_and_caching(fakes):
    out = run_json(fakes, """
        import json
        from lamina.ndarray import get_device
        m, m0, m1 = get_device("multi"), get_device("multi:0"), get_device("multi:1")
        print(json.dumps([str(m), repr(m1), m is m0, m1.index, m1.type, m == m1,
                          list(m1.dtypes)]))
    """)
    assert out == ["multi:0", "device('multi:1')", True, 1, "multi", False,
                   ["float32", "int64"]]


@pytest.mark.parametrize("device,expected", [
    ("fakegpu", "LAMINA_DEVICE='fakegpu' is not usable: device 'fakegpu' is unavailable: "
                "plugin lamina-backend-fakegpu 0.1.0 reports: no CUDA-capable device is "
                "detected; unset LAMINA_DEVICE or set it to an available device"),
    ("nosuch", "LAMINA_DEVICE='nosuch' is not usable: unknown device 'nosuch'"),
])
def test_lamina_device_that_is_not_usable(fakes, device, expected):
    out = run_json(fakes, """
        import json
        from lamina.ndarray import DeviceError, default_device, get_device
        try:
            default_device()
            result = "no error"
        except DeviceError as exc:
            result = str(exc)
        print(json.dumps([result, str(get_device("numpy"))]))
    """, device=device)
    assert out[0].startswith(expected), out[0]
    assert out[1] == "numpy"  # explicit devices keep working


@bare_install
@pytest.mark.parametrize("device,expected", [("multi:1", "multi:1"), ("numpy", "numpy"),
                                             ("", "numpy")])
def test_lamina_device_picks_the_default(fakes, device, expected):
    assert run_json(fakes, DEFAULT_NAME, device=device) == expected


DEFAULT_NAME = ("import json; from lamina.ndarray import default_device as d; "
                "print(json.dumps(str(d())))")


def test_cpu_is_the_default_when_available(tmp_path):
    root = install(tmp_path / "with-cpu", CPU)
    code = DEFAULT_NAME
    assert run_json(root, code) == "cpu"
    assert run_json(root, code, device="numpy") == "numpy"


def test_cpu_unavailable_falls_back_to_numpy(tmp_path):
    dist, version, module, _ = CPU["cpu"]
    source = _DELEGATE.format(name="cpu", api_version=2, hidden=(), available=False,
                              extra="")
    root = install(tmp_path / "cpu-off", {"cpu": (dist, version, module, source)})
    code = DEFAULT_NAME
    assert run_json(root, code) == "numpy"


@bare_install
def test_main_prints_the_table(fakes):
    proc = run(fakes, "")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["name", "distribution", "version", "api", "dtypes", "lacks",
                                "status"]
    rows = {line.split()[0]: line for line in lines[1:] if line.strip()}
    api = f"{API_VERSION}.{API_MINOR_VERSION}"
    assert rows["numpy"].split() == ["numpy", "lamina-ndarray", "0.1.0", api,
                                     "float32,float64,int64,bool,float16,bfloat16", "-",
                                     "available"]
    assert rows["fakegpu"].endswith("unavailable: no CUDA-capable device is detected")
    assert "failed: import failed: ImportError: libfake.so.1" in rows["broken"]
    assert rows["broken"].split()[1:4] == ["fake-broken", "0.1", "?"]
    assert "incompatible: declares api_version 3" in rows["oldapi"]
    assert lines[-1] == "default device: numpy (automatic)"


def test_main_traceback_and_bad_lamina_device(fakes):
    proc = run(fakes, "", args=("--traceback",))
    assert "--- broken (fake-broken 0.1) ---" in proc.stdout
    assert "ImportError: libfake.so.1" in proc.stdout
    proc = run(fakes, "", device="fakegpu")
    assert proc.returncode == 1
    assert "default device: none (LAMINA_DEVICE='fakegpu' is not usable" in proc.stdout


def test_duplicate_name_is_listed_and_the_first_wins(tmp_path):
    first = install(tmp_path / "first", {"multi": PLUGINS["multi"]})
    second = {"multi": ("other-multi", "2.0", "other_multi", PLUGINS["multi"][3])}
    root = install(tmp_path / "second", second)
    infos = run_json(Path(os.pathsep.join([str(first), str(root)])), """
        import json
        from lamina.ndarray import list_backends, get_device
        print(json.dumps([[b.name, b.distribution, b.status, b.reason]
                          for b in list_backends() if b.name == "multi"]
                         + [type(get_device("multi").backend).__module__]))
    """)
    *rows, winner = infos
    assert winner == "fake_multi"
    assert len(rows) == 2 and {r[2] for r in rows} == {"available", "failed"}
    failed = next(r for r in rows if r[2] == "failed")
    assert failed[1] == "other-multi"
    assert "is already registered by" in failed[3] and "uninstall one of them" in failed[3]


# A plugin that registers the built-in names, with an add that subtracts.
HOSTILE = {name: ("evil-plugin", "6.6", f"evil_{name}",
                  _DELEGATE.format(name=name, api_version=2, hidden=(), available=True,
                                   extra="    def ewise_add(self, a, b, out):\n"
                                         "        _numpy.ewise_sub(a, b, out)\n"))
           for name in ("numpy", "cpu")}


def test_another_distribution_cannot_take_over_a_builtin_name(tmp_path):
    # First on sys.path, so before the fix it won the name and became the default.
    root = install(tmp_path / "hostile", HOSTILE)
    out = run_json(root, """
        import json
        import lamina.ndarray as ln
        from lamina.ndarray import DeviceError, get_device, list_backends
        rows = [[b.name, b.status, b.reason] for b in list_backends()
                if b.distribution == "evil-plugin"]
        try:
            cpu = type(get_device("cpu").backend).__module__
        except DeviceError as exc:
            cpu = str(exc)
        sums = {str(d): (ln.ones(3, device=d) + ln.ones(3, device=d)).tolist()
                for d in ("numpy", None)}
        print(json.dumps([rows, cpu, sums, type(ln.default_device().backend).__module__]))
    """)
    rows, cpu, sums, default_module = out
    assert sorted(r[0] for r in rows) == ["cpu", "numpy"]
    for name, status, reason in rows:
        assert status == "failed"
        owner = {"cpu": "lamina-backend-cpu", "numpy": "lamina-ndarray"}[name]
        assert reason == (f"name {name!r} is reserved for {owner}; evil-plugin may not "
                          "register it, so it is ignored; uninstall evil-plugin")
    assert not cpu.startswith("evil")
    if "cpu" not in REAL_PLUGINS:
        assert cpu.startswith("device 'cpu' is not installed: name 'cpu' is reserved")
    assert sums == {"numpy": [2.0, 2.0, 2.0], "None": [2.0, 2.0, 2.0]}
    assert not default_module.startswith("evil")


STUCK = {"stuck": ("fake-stuck", "0.1", "fake_stuck", "import time\ntime.sleep(20)\n")}


def test_a_plugin_whose_import_hangs_stalls_only_its_own_device(tmp_path):
    root = install(tmp_path / "stuck", STUCK)
    out = run_json(root, """
        import json, threading, time
        import lamina.ndarray as ln
        from lamina.ndarray import get_device, list_backends
        threading.Thread(target=get_device, args=("stuck",), daemon=True).start()
        time.sleep(0.5)  # the thread now imports fake_stuck
        start = time.monotonic()
        total = float((ln.ones(3, device="numpy") * 2).sum().item())
        ln.default_device()
        infos = {b.name: [b.status, b.reason] for b in list_backends(timeout=1.0)}
        print(json.dumps([time.monotonic() - start, total, infos["stuck"],
                          infos["numpy"][0]]))
    """)
    elapsed, total, stuck, numpy_status = out
    assert elapsed < 10 and total == 6.0 and numpy_status == "available"
    assert stuck == ["failed", "import did not finish within 1 s (still running; a plugin "
                     "import that hangs stalls only this device)"]
    proc = run(root, "", args=("--timeout", "1"))
    assert proc.returncode == 0, proc.stderr
    assert "failed: import did not finish within 1 s" in proc.stdout


# In-process checks of the API on the real environment (numpy is always there).

@pytest.fixture
def fresh_registry():
    """Restore the default device afterwards; cached Devices stay the same objects
    (other tests hold them, so no refresh() here)."""
    previous = _state.default
    yield
    _state.default = previous


def test_devices_are_cached_and_compare_by_name(fresh_registry):
    dev = get_device("numpy")
    assert dev is get_device("numpy") is get_device("numpy:0") is get_device(dev)
    assert isinstance(dev, Device) and dev.type == "numpy" and dev.index == 0
    assert str(dev) == "numpy" and repr(dev) == "device('numpy')"
    assert hash(dev) == hash("numpy") and dev == get_device("numpy")
    assert dev.dtypes == ("float32", "float64", "int64", "bool", "float16", "bfloat16")
    assert get_device(None) is default_device()


def test_device_pickles_to_the_cached_object(fresh_registry):
    import pickle

    dev = get_device("numpy")
    assert pickle.loads(pickle.dumps(dev)) is dev


def test_set_default_device(fresh_registry, monkeypatch):
    monkeypatch.delenv("LAMINA_DEVICE", raising=False)
    set_default_device("numpy")
    assert default_device() is get_device("numpy")
    with pytest.raises(DeviceError, match="unknown device 'nosuch'"):
        set_default_device("nosuch")
    assert default_device() is get_device("numpy")  # unchanged after the error
    set_default_device(None)
    assert default_device().type in {b.name for b in list_backends()}


def test_refresh_forgets_the_caches(fresh_registry):
    dev = get_device("numpy")
    refresh()
    try:
        assert get_device("numpy") is not dev and get_device("numpy") == dev
    finally:
        _state.devices["numpy"] = dev  # later tests compare with `is`


def test_get_device_rejects_other_types():
    with pytest.raises(TypeError, match="get_device: expected a device name"):
        get_device(3)  # type: ignore[arg-type]


def kit(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(path), *filter(None, [env.get("PYTHONPATH")])])
    return subprocess.run([sys.executable, "-m", "lamina.ndarray.conformance", *args],
                          env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("name,why", [
    ("broken", "failed to load: import failed: ImportError: libfake.so.1"),
    ("partial", "is incompatible: missing required kernels: matmul, reduce_argmax"),
    ("fakegpu", "is unavailable: no CUDA-capable device is detected"),
])
def test_kit_fails_for_a_backend_that_is_not_usable(fakes, name, why):
    proc = kit(fakes, name, "-q")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert why in proc.stderr and "the kit needs a backend that loads" in proc.stderr


def test_kit_fails_when_every_test_was_skipped(fakes):
    # "multi" lists no float64, so every selected test skips: nothing was checked.
    proc = kit(fakes, "multi", "-q", "-k", "test_matmul_known_values and float64")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "no test passed against 'multi'" in proc.stderr
    assert kit(fakes, "multi", "-q", "-k", "test_matmul_known_values").returncode == 0


def test_kit_without_pytest_says_what_to_install(tmp_path):
    (tmp_path / "pytest.py").write_text("raise ImportError(\"No module named 'pytest'\")\n")
    proc = kit(tmp_path, "numpy")
    assert proc.returncode == 2
    assert "pip install 'lamina-ndarray[conformance]'" in proc.stderr
    assert "Traceback" not in proc.stderr
