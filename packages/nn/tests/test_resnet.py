"""ResNet9 models: sizes, agreement with a PyTorch twin, a few training steps whose loss
falls, and ``lamina-train cifar10`` end to end on a small written dataset."""

from __future__ import annotations

import csv
import pickle
import sys
from pathlib import Path

import numpy as np
import torch
from _torch_helpers import assert_close, copy_weights
from lamina import autograd as ag
from lamina import nn, optim
from lamina.models import CIFARResNet9, ResNet9
from lamina.models._cli import main as train_main

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from train_cifar10 import torch_model  # noqa: E402

torch.set_num_threads(1)


def test_parameter_counts():
    assert ResNet9().num_parameters() == 431_946
    assert CIFARResNet9().num_parameters() == sum(p.numel() for p in
                                                  torch_model("resnet9-dawn").parameters())


def test_resnet9_matches_torch_twin():
    torch.manual_seed(0)
    ref, model = torch_model("resnet9"), ResNet9()
    copy_weights(ref, model)
    x_np = np.random.default_rng(0).standard_normal((4, 3, 32, 32)).astype(np.float32)
    y_np = np.array([1, 0, 3, 9])
    x = ag.tensor(x_np, requires_grad=True)
    loss = nn.CrossEntropyLoss()(model(x), ag.tensor(y_np))
    xt = torch.tensor(x_np, requires_grad=True)
    loss_t = torch.nn.functional.cross_entropy(ref(xt), torch.tensor(y_np))
    assert abs(loss.item() - loss_t.item()) < 1e-4
    loss.backward()
    loss_t.backward()
    assert_close(x.grad, xt.grad, rtol=1e-3, atol=1e-5)
    grads = {k: p.grad for k, p in model.named_parameters()}
    for key, p in ref.named_parameters():
        assert_close(grads[key], p.grad, rtol=1e-3, atol=1e-4)
    for key, buf in ref.state_dict().items():
        assert_close(model.state_dict()[key], buf, atol=1e-5)


def test_cifar_resnet9_forward_shape():
    model = CIFARResNet9().eval()
    with ag.no_grad():
        assert model(ag.randn(2, 3, 32, 32)).shape == (2, 10)


def test_resnet9_training_steps_lower_the_loss():
    ag.manual_seed(0)
    rng = np.random.default_rng(0)
    x = ag.tensor(rng.standard_normal((32, 3, 32, 32)).astype(np.float32))
    y = ag.tensor(rng.integers(0, 10, 32))
    model = ResNet9()
    opt = optim.Adam(model.parameters(), lr=2e-3)
    losses = []
    for _ in range(6):
        opt.zero_grad()
        loss = nn.CrossEntropyLoss()(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0], losses


def _write_tiny_cifar(root: Path, n: int = 16) -> None:
    rng = np.random.default_rng(0)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        batch = {b"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8),
                 b"labels": [int(v) for v in rng.integers(0, 10, n)]}
        (root / name).write_bytes(pickle.dumps(batch, protocol=3))


def test_lamina_train_cifar10_cli(tmp_path, capsys):
    _write_tiny_cifar(tmp_path)
    log = tmp_path / "log.csv"
    code = train_main(["cifar10", "--data", str(tmp_path), "--epochs", "2", "--batch-size",
                       "16", "--train-size", "64", "--no-progress", "--log", str(log),
                       "--tta-shift", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "resnet9 (431,946 parameters), 64 training / 16 test images" in out
    assert "with flip and 1-pixel shift test-time augmentation" in out
    rows = list(csv.DictReader(log.open()))
    assert [int(r["epoch"]) for r in rows] == [1, 2]
    assert all(0.0 <= float(r["test_acc"]) <= 1.0 for r in rows)


def test_lamina_train_cifar10_missing_data(tmp_path, capsys):
    assert train_main(["cifar10", "--data", str(tmp_path), "--epochs", "1"]) == 1
    assert "missing file data_batch_1" in capsys.readouterr().err
