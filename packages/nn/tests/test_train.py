"""Training end to end: a loss that falls, the models, and the lamina-train CLI."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from lamina import autograd as ag
from lamina import nn, optim
from lamina.data import DataLoader, TensorDataset
from lamina.models import MLP, MLPResNet, evaluate, fit
from lamina.models._cli import build_parser, main
from lamina.models.recipes import RECIPES


def test_training_smoke_loss_falls():
    ag.manual_seed(0)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((256, 10)).astype(np.float32)
    y = (x[:, :3].sum(1) > 0).astype(np.int64) + (x[:, 3] > 1).astype(np.int64)
    model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 3))
    opt = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    loader = DataLoader(TensorDataset(x, y), 32, shuffle=True, generator=0)
    history = fit(model, loader, loader, opt, epochs=5, show_progress=False)
    losses = [r["train_loss"] for r in history]
    assert losses[-1] < 0.6 * losses[0]
    assert history[-1]["test_acc"] > 0.85


def test_models_shapes_and_structure():
    ag.manual_seed(0)
    x = ag.randn(4, 1, 28, 28)
    assert MLP(784, (16, 16), 10)(x).shape == (4, 10)
    resnet = MLPResNet(784, hidden_dim=32, num_blocks=2, drop_prob=0.1)
    assert resnet(x).shape == (4, 10)
    names = [n for n, _ in resnet.named_parameters()]
    assert names[:2] == ["1.weight", "1.bias"] and "3.0.fn.1.weight" in names
    resnet.eval()
    a, b = resnet(x), resnet(x)
    np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    ln = MLPResNet(784, 32, 1, norm=nn.LayerNorm)
    assert any(isinstance(m, nn.LayerNorm) for m in ln.modules())
    assert evaluate(ln, [(x, ag.tensor([0, 1, 2, 3]))], nn.CrossEntropyLoss())["acc"] >= 0


def test_recipe_registry_and_parser():
    assert "mnist" in RECIPES
    args = build_parser().parse_args(["mnist", "--model", "mlp-resnet", "--epochs", "2"])
    assert args.model == "mlp-resnet" and args.epochs == 2 and args.data is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["mnist", "--model", "vgg"])


def test_cli_mnist_on_the_bundled_subset(tmp_path, capsys):
    log, ckpt = tmp_path / "log.csv", tmp_path / "ckpt.safetensors"
    code = main(["mnist", "--epochs", "1", "--hidden", "64", "--no-progress",
                 "--log", str(log), "--save", str(ckpt)])
    assert code == 0
    out = capsys.readouterr().out
    assert "5,000 training / 1,000 test images" in out and "final test accuracy" in out
    rows = list(csv.DictReader(log.open()))
    assert len(rows) == 1 and float(rows[0]["test_acc"]) > 0.5  # chance is 0.1
    saved = nn.load(ckpt)
    assert {"model", "optimizer", "scheduler", "rng", "position", "options"} <= set(saved)
    assert saved["recipe"] == "mnist" and saved["model_config"] == {"model": "mlp", "hidden": 64}


def test_cli_json_log_resnet_and_errors(tmp_path, capsys):
    log = tmp_path / "log.json"
    code = main(["mnist", "--model", "mlp-resnet", "--epochs", "1", "--hidden", "32",
                 "--batch-size", "250", "--no-progress", "--log", str(log)])
    assert code == 0 and json.loads(log.read_text())[0]["epoch"] == 1
    assert main(["mnist", "--data", str(tmp_path), "--no-progress"]) == 1
    assert "missing file train-images-idx3-ubyte.gz" in capsys.readouterr().err


def test_cli_plot_with_or_without_matplotlib(tmp_path, capsys):
    plot = tmp_path / "curves.png"
    code = main(["mnist", "--epochs", "1", "--hidden", "16", "--no-progress",
                 "--plot", str(plot)])
    try:
        import matplotlib  # noqa: F401
    except ImportError:  # refused before training, not after it
        assert code == 2 and "--plot needs matplotlib" in capsys.readouterr().err
    else:
        assert code == 0 and plot.stat().st_size > 0


def test_registering_a_recipe_name_twice_is_an_error():
    from lamina.models.recipes import register_recipe

    with pytest.raises(ValueError, match="already exists"):
        register_recipe(RECIPES["mnist"])
