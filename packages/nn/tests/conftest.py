"""Shared fixtures: where the real datasets live, and skip markers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from lamina import ndarray as nd

# packages/nn/tests -> repository root is parents[3]; the shared data sits beside it.
_ROOT = Path(__file__).resolve().parents[3]


def shared_data_dir() -> Path:
    """``$LAMINA_DATA`` if set, else ``../shared/data`` relative to the repository root."""
    env = os.environ.get("LAMINA_DATA")
    return Path(env) if env else _ROOT.parent / "shared" / "data"


@pytest.fixture
def mnist_dir() -> Path:
    """The full MNIST folder; skips the test when it is absent."""
    path = shared_data_dir() / "mnist"
    if not (path / "train-images-idx3-ubyte.gz").is_file():
        pytest.skip(f"full MNIST not found at {path} (set LAMINA_DATA to the shared data folder)")
    return path


def available_devices() -> list[str]:
    """Every device whose backend is available here (numpy always; cpu, cuda when built)."""
    return [info.name for info in nd.list_backends() if info.status == "available"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "device" in metafunc.fixturenames:
        devices = available_devices()
        marks = {"cuda": [pytest.mark.cuda]}
        metafunc.parametrize("device", [pytest.param(d, marks=marks.get(d, []))
                                        for d in devices])


@pytest.fixture(autouse=True)
def _checkpoints_in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lamina-train's default --checkpoint-dir goes to the test's tmp_path, not the cwd."""
    import lamina.models._cli as cli

    monkeypatch.setattr(cli, "DEFAULT_CHECKPOINT_DIR", str(tmp_path / "lamina-checkpoints"))
