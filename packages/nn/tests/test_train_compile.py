"""lamina-train --compile: the same training, bit for bit, with replayed steps."""

from __future__ import annotations

from pathlib import Path

import pytest
from _same_run import assert_same_weights
from lamina import nn
from lamina.models._cli import main
from test_train_cli import _shakespeare as shakespeare_args


def _shakespeare(folder: Path) -> list[str]:
    return [a for a in shakespeare_args(folder) if a != "--no-progress"]


def _mnist(folder: Path) -> list[str]:
    return ["mnist", "--model", "mlp", "--hidden", "16", "--batch-size", "500",
            "--epochs", "2"]


@pytest.mark.parametrize("make", [_mnist, _shakespeare], ids=["mnist", "shakespeare"])
def test_compile_trains_to_the_same_weights(make, tmp_path: Path, capsys) -> None:
    args = [*make(tmp_path), "--no-progress", "--checkpoint-every", "0"]
    saved = {}
    for flag in ([], ["--compile"]):
        out = tmp_path / f"final{len(flag)}.safetensors"
        assert main([*args, *flag, "--checkpoint-dir", str(tmp_path / f"ck{len(flag)}"),
                     "--save", str(out)]) == 0
        saved[len(flag)] = nn.load(out, as_numpy=True)["model"]
    assert "graph break" not in capsys.readouterr().err
    assert_same_weights(saved[0], saved[1])
