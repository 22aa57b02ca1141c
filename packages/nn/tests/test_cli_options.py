"""lamina-train and lamina-generate refuse every out-of-range option with a one-line
argparse error (exit status 2, no traceback) and honour every valid one as given: no
``value or default`` that turns ``--lr 0`` into the default learning rate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from lamina import autograd as ag
from lamina import nn
from lamina.models._cli import build_parser, main
from lamina.models._generate import build_parser as generate_parser

# (argv, the option argparse names, what it says): every numeric option of every
# recipe and of lamina-generate, each just outside its range.
TRAIN_REFUSED = [
    (["mnist", "--hidden", "0"], "--hidden", "must be >= 1, got 0"),
    (["mnist", "--epochs", "0"], "--epochs", "must be >= 1, got 0"),
    (["mnist", "--batch-size", "-2"], "--batch-size", "must be >= 1, got -2"),
    (["mnist", "--lr", "-0.1"], "--lr", "must be >= 0, got -0.1"),
    (["mnist", "--lr", "inf"], "--lr", "must be a finite number >= 0, got inf"),
    (["mnist", "--lr", "nan"], "--lr", "must be a finite number >= 0, got nan"),
    (["mnist", "--lr", "fast"], "--lr", "expected a number, got 'fast'"),
    (["mnist", "--seed", "-1"], "--seed", "must be >= 0, got -1"),
    (["mnist", "--num-workers", "-1"], "--num-workers", "must be >= 0, got -1"),
    (["mnist", "--checkpoint-every", "-1"], "--checkpoint-every", "must be >= 0, got -1"),
    (["mnist", "--keep-checkpoints", "0"], "--keep-checkpoints", "must be >= 1, got 0"),
    (["mnist", "--nproc", "0"], "--nproc", "must be >= 1, got 0"),
    (["mnist", "--weight-decay", "-1"], "--weight-decay", "must be >= 0, got -1"),
    (["mnist", "--device", "bogus"], "--device", "unknown device 'bogus'"),
    (["cifar10", "--train-size", "-5"], "--train-size", "must be >= 1, got -5"),
    (["cifar10", "--test-size", "0"], "--test-size", "must be >= 1, got 0"),
    (["cifar10", "--label-smoothing", "1.5"], "--label-smoothing",
     "must be in [0, 1], got 1.5"),
    (["cifar10", "--crop-padding", "-1"], "--crop-padding", "must be >= 0, got -1"),
    (["cifar10", "--zca-eps", "-1"], "--zca-eps", "must be >= 0, got -1"),
    (["cifar10", "--tta-shift", "-1"], "--tta-shift", "must be >= 0, got -1"),
    (["cifar10", "--weight-decay", "inf"], "--weight-decay",
     "must be a finite number >= 0, got inf"),
    (["cifar10", "--norm-bias-decay", "-0.0001"], "--norm-bias-decay",
     "must be >= 0, got -0.0001"),
    (["ptb", "--hidden", "0"], "--hidden", "must be >= 1, got 0"),
    (["ptb", "--layers", "0"], "--layers", "must be >= 1, got 0"),
    (["ptb", "--bptt", "0"], "--bptt", "must be >= 1, got 0"),
    (["ptb", "--dropout", "1.5"], "--dropout", "must be in [0, 1], got 1.5"),
    (["ptb", "--clip", "-1"], "--clip", "must be >= 0, got -1"),
    (["ptb", "--init-range", "-0.1"], "--init-range", "must be >= 0, got -0.1"),
    (["ptb", "--lr-decay", "inf"], "--lr-decay", "must be a finite number >= 0, got inf"),
    (["ptb", "--decay-after", "-1"], "--decay-after", "must be >= 0, got -1"),
    (["ptb", "--max-batches", "0"], "--max-batches", "must be >= 1, got 0"),
    (["shakespeare", "--iters", "0"], "--iters", "must be >= 1, got 0"),
    (["shakespeare", "--eval-interval", "0"], "--eval-interval", "must be >= 1, got 0"),
    (["shakespeare", "--eval-iters", "0"], "--eval-iters", "must be >= 1, got 0"),
    (["shakespeare", "--n-layer", "0"], "--n-layer", "must be >= 1, got 0"),
    (["shakespeare", "--n-head", "0"], "--n-head", "must be >= 1, got 0"),
    (["shakespeare", "--n-embd", "0"], "--n-embd", "must be >= 1, got 0"),
    (["shakespeare", "--block-size", "0"], "--block-size", "must be >= 1, got 0"),
    (["shakespeare", "--dropout", "1"], "--dropout", "must be in [0, 1), got 1"),
    (["shakespeare", "--weight-decay", "nan"], "--weight-decay",
     "must be a finite number >= 0, got nan"),
    (["shakespeare", "--warmup-iters", "-1"], "--warmup-iters", "must be >= 0, got -1"),
    (["shakespeare", "--min-lr-ratio", "2"], "--min-lr-ratio", "must be in [0, 1], got 2"),
    (["shakespeare", "--grad-clip", "-1"], "--grad-clip", "must be >= 0, got -1"),
    (["shakespeare", "--sample-tokens", "-1"], "--sample-tokens", "must be >= 0, got -1"),
]

GENERATE_REFUSED = [
    (["--device", "bogus"], "--device", "unknown device 'bogus'"),
    (["--temperature", "inf"], "--temperature", "must be a finite number >= 0, got inf"),
    (["--temperature", "-0.5"], "--temperature", "must be >= 0, got -0.5"),
    (["--top-k", "0"], "--top-k", "must be >= 1, got 0"),
    (["--max-new-tokens", "-1"], "--max-new-tokens", "must be >= 0, got -1"),
    (["--seed", "-1"], "--seed", "must be >= 0, got -1"),
]


def _refused(parse, argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exc:
        parse(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("argv,option,says", TRAIN_REFUSED,
                         ids=[" ".join(a) for a, _, _ in TRAIN_REFUSED])
def test_lamina_train_refuses_out_of_range_options(argv, option, says, capsys):
    err = _refused(build_parser().parse_args, argv, capsys)
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"lamina-train {argv[0]}: error: argument {option}: {says}"), err


@pytest.mark.parametrize("argv,option,says", GENERATE_REFUSED,
                         ids=[" ".join(a) for a, _, _ in GENERATE_REFUSED])
def test_lamina_generate_refuses_out_of_range_options(argv, option, says, capsys):
    err = _refused(generate_parser().parse_args, ["--checkpoint", "x", *argv], capsys)
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"lamina-generate: error: argument {option}: {says}"), err


def test_boundary_values_are_accepted_as_given():
    args = build_parser().parse_args(
        ["mnist", "--lr", "0", "--seed", "0", "--checkpoint-every", "0", "--weight-decay", "0",
         "--hidden", "1", "--device", "numpy"])
    assert (args.lr, args.seed, args.checkpoint_every, args.hidden) == (0.0, 0, 0, 1)
    args = build_parser().parse_args(["shakespeare", "--grad-clip", "0", "--dropout", "0.99",
                                      "--min-lr-ratio", "1", "--warmup-iters", "0"])
    assert (args.grad_clip, args.dropout, args.min_lr_ratio) == (0.0, 0.99, 1.0)
    args = generate_parser().parse_args(["--checkpoint", "x", "--temperature", "0",
                                         "--max-new-tokens", "0"])
    assert (args.temperature, args.max_new_tokens) == (0.0, 0)


def _script(tool: str, *argv: str) -> subprocess.CompletedProcess[str]:
    code = f"import sys; from lamina.models.{tool} import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True,
                          text=True, timeout=120)


def test_bad_options_are_one_line_errors_not_tracebacks(tmp_path):
    """Issue 31: these two printed tracebacks (a DeviceError, a ZeroDivisionError)."""
    (tmp_path / "input.txt").write_text("to be or not to be\n" * 200)
    train = _script("_cli", "shakespeare", "--data", str(tmp_path), "--iters", "2",
                    "--eval-interval", "0", "--n-layer", "1", "--n-embd", "8",
                    "--block-size", "4", "--sample-tokens", "0", "--no-progress",
                    "--checkpoint-dir", str(tmp_path / "ck"))
    generate = _script("_generate", "--checkpoint", str(tmp_path / "none.safetensors"),
                       "--device", "bogus")
    for proc, last in ((train, "lamina-train shakespeare: error: argument --eval-interval: "
                              "must be >= 1, got 0"),
                       (generate, "lamina-generate: error: argument --device: unknown device "
                                  "'bogus'")):
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert proc.stderr.strip().splitlines()[-1].startswith(last), proc.stderr
        assert proc.stdout == ""  # nothing trained


QUICK = ["--epochs", "1", "--no-progress", "--checkpoint-every", "0"]


def test_mnist_lr_0_is_honoured_exactly(tmp_path):
    """Issue 31: --lr 0 trained at Adam's default 1e-3 while the checkpoint said 0."""
    from lamina.models.recipes.mnist import build_model

    ck = tmp_path / "lr0.safetensors"
    assert main(["mnist", "--lr", "0", "--hidden", "8", "--batch-size", "500", *QUICK,
                 "--save", str(ck)]) == 0
    saved = nn.load(ck, as_numpy=True)
    assert saved["options"]["lr"] == 0.0 and saved["position"]["history"][0]["lr"] == 0.0
    assert all(g["lr"] == 0.0 for g in saved["optimizer"]["param_groups"])
    ag.manual_seed(0)  # the recipe's seed: the weights it started from
    initial = build_model("mlp", 8).state_dict()
    for name, value in initial.items():
        np.testing.assert_array_equal(saved["model"][name], value.numpy(), err_msg=name)


def test_cifar10_optimizer_takes_lr_0_and_defaults_only_for_none():
    from lamina.models.recipes.cifar10 import make_optimizer

    params = [nn.Parameter(ag.ones(2))]
    for name, default in (("sgd", 0.4), ("adam", 2e-3)):
        assert make_optimizer(name, params, 0.0, 0.0).param_groups[0]["lr"] == 0.0
        assert make_optimizer(name, params, None, 0.0).param_groups[0]["lr"] == default


def _ptb(folder: Path) -> list[str]:
    for split in ("train", "valid", "test"):
        (folder / f"ptb.{split}.txt").write_text(" ".join(f"w{i % 5}" for i in range(60)))
    return ["ptb", "--data", str(folder), "--hidden", "4", "--layers", "1", "--bptt", "5",
            "--batch-size", "2", "--max-batches", "2"]


def _shakespeare(folder: Path) -> list[str]:
    (folder / "input.txt").write_text("to be or not to be\n" * 40)
    return ["shakespeare", "--data", str(folder), "--iters", "2", "--eval-interval", "2",
            "--eval-iters", "1", "--n-layer", "1", "--n-embd", "8", "--block-size", "4",
            "--batch-size", "2", "--sample-tokens", "0", "--warmup-iters", "0",
            "--no-progress", "--checkpoint-every", "0"]


@pytest.mark.parametrize("make", [_ptb, _shakespeare], ids=["ptb", "shakespeare"])
def test_language_recipes_honour_lr_0(make, tmp_path):
    argv = make(tmp_path)
    if argv[0] == "ptb":
        argv += QUICK
    ck = tmp_path / "lr0.safetensors"
    assert main([*argv, "--lr", "0", "--save", str(ck)]) == 0
    saved = nn.load(ck, as_numpy=True)
    assert [r["lr"] for r in saved["position"]["history"]] == [0.0]
    assert saved["optimizer"]["param_groups"][0]["lr"] == 0.0


def test_ptb_clip_0_disables_clipping(tmp_path):
    """``--clip 0`` means no clipping, as shakespeare's ``--grad-clip 0`` does (it used to
    clip every gradient to norm 0, so nothing trained)."""
    runs = {}
    for clip in ("0", "1e9"):
        ck = tmp_path / f"clip{clip}.safetensors"
        assert main([*_ptb(tmp_path), *QUICK, "--clip", clip, "--save", str(ck)]) == 0
        runs[clip] = nn.load(ck, as_numpy=True)["model"]
    from lamina.models.recipes.ptb import model_from_config

    ag.manual_seed(0)
    initial = model_from_config(nn.load(ck)["model_config"]).state_dict()
    assert any(not np.array_equal(runs["0"][k], v.numpy()) for k, v in initial.items())
    for name, value in runs["1e9"].items():
        np.testing.assert_array_equal(runs["0"][name], value, err_msg=name)
