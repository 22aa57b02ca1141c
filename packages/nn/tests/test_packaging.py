"""Packaging and the first five minutes, checked on the checkout: the LICENSE
in every package, py.typed, version bounds between Lamina's distributions, the
dist session's artifact check, and the demo announcing its C++ build."""

from __future__ import annotations

import functools
import importlib.util
import io
import sys
import tarfile
import types
import zipfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
if not (ROOT / "noxfile.py").is_file():
    pytest.skip("not a checkout of the Lamina repository (no noxfile.py)",
                allow_module_level=True)

FOLDERS = ["ndarray", "autograd", "nn", "backends-cpu", "backends-cuda"]
TYPED = ["ndarray/src/lamina/ndarray", "autograd/src/lamina/autograd", "nn/src/lamina/nn",
         "nn/src/lamina/optim", "nn/src/lamina/data", "nn/src/lamina/models",
         "backends-cpu/src/lamina_backend_cpu", "backends-cuda/src/lamina_backend_cuda"]


@functools.cache
def _noxfile() -> Any:
    """The noxfile's module, run against a stand-in for nox (not installed in test
    environments): its sessions are the plain functions."""
    stand_in = types.ModuleType("nox")
    setattr(stand_in, "session", lambda func=None, **kwargs: func or (lambda f: f))  # noqa: B010
    setattr(stand_in, "options", types.SimpleNamespace())  # noqa: B010
    spec = importlib.util.spec_from_file_location("lamina_noxfile", ROOT / "noxfile.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    real = sys.modules.get("nox")
    sys.modules["nox"] = stand_in
    try:
        spec.loader.exec_module(module)
    finally:
        if real is None:
            del sys.modules["nox"]
        else:
            sys.modules["nox"] = real
    return module


def _pyproject(folder: str) -> dict[str, Any]:
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "packages" / folder / "pyproject.toml").read_text())


def test_license_file_in_the_repository_and_every_package():
    text = (ROOT / "LICENSE").read_text()
    assert "Apache License" in text and "Version 2.0, January 2004" in text
    for folder in FOLDERS:
        assert (ROOT / "packages" / folder / "LICENSE").read_text() == text, folder
        assert _pyproject(folder)["project"]["license"] == "Apache-2.0"
    sdist = _pyproject("nn")["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    assert "LICENSE" in sdist


def test_every_typed_package_has_py_typed():
    missing = [p for p in TYPED if not (ROOT / "packages" / p / "py.typed").is_file()]
    assert not missing


def test_lamina_dependencies_are_bounded_and_met_by_the_siblings():
    from packaging.requirements import Requirement

    versions = {_pyproject(f)["project"]["name"]: _pyproject(f)["project"]["version"]
                for f in FOLDERS}
    checked = 0
    for folder in FOLDERS:
        project = _pyproject(folder)["project"]
        reqs = project["dependencies"] + [r for extra in
                                          project.get("optional-dependencies", {}).values()
                                          for r in extra]
        for req in map(Requirement, reqs):
            if req.name not in versions:
                continue
            operators = {s.operator for s in req.specifier}
            assert "<" in operators and ">=" in operators, f"{folder}: {req} is unbounded"
            assert req.specifier.contains(versions[req.name]), f"{folder}: {req}"
            checked += 1
    assert checked >= 5


def _wheel(path: Path, names: list[str]) -> None:
    with zipfile.ZipFile(path, "w") as z:
        for name in names:
            z.writestr(name, "")


def _sdist(path: Path, names: list[str]) -> None:
    with tarfile.open(path, "w:gz") as tar:
        for name in names:
            tar.addfile(tarfile.TarInfo(name), io.BytesIO(b""))


def test_dist_session_artifact_check(tmp_path):
    check = _noxfile().check_artifacts
    _wheel(tmp_path / "lamina_nn-0.1.0-py3-none-any.whl",
           ["lamina/nn/py.typed", "lamina_nn-0.1.0.dist-info/licenses/LICENSE"])
    _sdist(tmp_path / "lamina_nn-0.1.0.tar.gz", ["lamina_nn-0.1.0/LICENSE"])
    assert check(tmp_path, ["nn"]) == []
    _wheel(tmp_path / "lamina_backend_cpu-0.1.0-cp311-cp311-linux_x86_64.whl",
           ["lamina_backend_cpu/_core.so"])
    _sdist(tmp_path / "lamina_backend_cpu-0.1.0.tar.gz", ["lamina_backend_cpu-0.1.0/x"])
    problems = " ".join(check(tmp_path, ["nn", "backend_cpu"]))
    for expected in ("no LICENSE in its .dist-info", "no py.typed", "not a manylinux wheel",
                     "lamina_backend_cpu-0.1.0.tar.gz: no LICENSE"):
        assert expected in problems
    assert "0 wheels" in " ".join(check(tmp_path, ["autograd"]))


class _Recorder:
    """Enough of a nox Session to record what a session function asks for."""

    posargs: list[str] = []

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def log(self, message: str) -> None:
        self.calls.append(("log", message))

    def install(self, *args: str, **kwargs: Any) -> None:
        self.calls.append(("install", " ".join(args)))

    def run(self, *args: str, **kwargs: Any) -> None:
        self.calls.append(("run", " ".join(args)))


def test_demo_announces_the_cpu_build_before_starting_it():
    nox_module = _noxfile()
    session = _Recorder()
    nox_module.demo(session)
    kinds = [kind for kind, _ in session.calls]
    assert kinds == ["log", "install", "run"]
    assert "Building the C++ cpu backend" in session.calls[0][1]
    assert "packages/backends-cpu" in session.calls[1][1]
    assert session.calls[2][1].startswith("lamina-train mnist")
