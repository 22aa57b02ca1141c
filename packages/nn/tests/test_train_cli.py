"""lamina-train never loses work: outputs checked first, periodic and Ctrl-C
checkpoints, --resume bit for bit; and its output (device, --help, plain lines
when not on a terminal, load_model)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from _same_run import assert_same_weights
from lamina import ndarray as nd
from lamina import nn
from lamina.models import load_model
from lamina.models._cli import main

# A small MLP-ResNet: dropout (Lamina's generator), BatchNorm buffers, Adam
# state and a per-batch OneCycle schedule all have to come back on resume.
TINY = ["mnist", "--model", "mlp-resnet", "--hidden", "16", "--batch-size", "250",
        "--epochs", "4", "--no-progress"]


def _weights(path: Path) -> dict[str, np.ndarray]:
    ckpt = nn.load(path, as_numpy=True)
    return {**{f"model.{k}": v for k, v in ckpt["model"].items()},
            **{f"adam.{i}.{k}": v for i, s in ckpt["optimizer"]["state"].items()
               for k, v in s.items() if isinstance(v, np.ndarray)}}


def _assert_same_weights(a: Path, b: Path) -> None:
    wa, wb = _weights(a), _weights(b)
    assert sorted(wa) == sorted(wb) and len(wa) > 10
    for key in wa:
        np.testing.assert_array_equal(wa[key], wb[key], err_msg=key)


def _without_times(history: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("epoch_time", "elapsed")} for r in history]


def _only_run(root: Path) -> Path:
    """The one run folder under a --checkpoint-dir."""
    runs = list(root.iterdir())
    assert len(runs) == 1 and runs[0].is_dir(), runs
    return runs[0]


@pytest.fixture(scope="module")
def straight(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 4-epoch run, done once: its checkpoints and final --save."""
    folder = tmp_path_factory.mktemp("straight")
    code = main([*TINY, "--checkpoint-dir", str(folder / "ck"), "--keep-checkpoints", "3",
                 "--save", str(folder / "final.safetensors")])
    assert code == 0
    return folder


def test_four_epochs_equal_two_then_resume_two(straight, tmp_path, capsys):
    # keep-last-K: of the four periodic checkpoints the newest three remain
    kept = sorted(p.name for p in _only_run(straight / "ck").iterdir())
    assert kept == [f"mnist-epoch000000{i}.safetensors" for i in (2, 3, 4)]
    capsys.readouterr()
    resumed = tmp_path / "resumed.safetensors"
    ck = _only_run(straight / "ck") / "mnist-epoch0000002.safetensors"
    assert main(["mnist", "--resume", str(ck), "--no-progress",
                 "--checkpoint-dir", str(tmp_path / "again"), "--save", str(resumed)]) == 0
    out = capsys.readouterr().out
    assert "epoch 1:" not in out and "epoch 3:" in out and "epoch 4:" in out
    _assert_same_weights(straight / "final.safetensors", resumed)
    a, b = nn.load(straight / "final.safetensors"), nn.load(resumed)
    assert _without_times(a["position"]["history"]) == _without_times(b["position"]["history"])
    assert a["scheduler"] == b["scheduler"] and a["rng"] == b["rng"]


@pytest.mark.parametrize("workers", ["0", "2"])  # Ctrl-C reaches loader workers too
def test_ctrl_c_writes_a_checkpoint_exits_130_and_resumes_bit_for_bit(straight, tmp_path,
                                                                       workers):
    folder = tmp_path / "ck"
    # A real SIGINT to the run's process group (as a terminal's Ctrl-C, loader workers
    # included), sent by the run itself at its fifth step boundary: a signal sent
    # from here after a sleep can arrive after a fast machine's last epoch.
    child = ("import os, signal, sys\n"
             "from lamina.models import _checkpoint, _cli\n"
             "check, calls = _checkpoint.Checkpoints.check_stop, []\n"
             "def check_stop(self, position):\n"
             "    calls.append(1)\n"
             "    if len(calls) == 5:\n"
             "        os.killpg(0, signal.SIGINT)\n"
             "    check(self, position)\n"
             "_checkpoint.Checkpoints.check_stop = check_stop\n"
             "sys.exit(_cli.main(sys.argv[1:]))\n")
    proc = subprocess.run(
        [sys.executable, "-c", child, *TINY, "--checkpoint-dir", str(folder),
         "--checkpoint-every", "0", "--num-workers", workers],
        capture_output=True, text=True, timeout=120, start_new_session=True)
    err = proc.stderr
    assert proc.returncode == 130, err
    saved = _only_run(folder) / "mnist-interrupted.safetensors"
    assert f"checkpoint written to {saved}" in err and f"--resume {saved}" in err
    assert sorted(os.listdir(saved.parent)) == [saved.name]  # no temporary files left
    position = nn.load(saved)["position"]
    assert position["epoch"] < 4
    resumed = tmp_path / "resumed.safetensors"
    assert main(["mnist", "--resume", str(saved), "--no-progress",
                 "--checkpoint-dir", str(folder), "--save", str(resumed)]) == 0
    _assert_same_weights(straight / "final.safetensors", resumed)


def test_resume_refuses_changed_options_and_other_recipes(straight, capsys):
    ck = _only_run(straight / "ck") / "mnist-epoch0000003.safetensors"
    assert main(["mnist", "--resume", str(ck), "--hidden", "64"]) == 2
    assert "--hidden 64 differs from the checkpoint's 16" in capsys.readouterr().err
    assert main(["cifar10", "--resume", str(ck)]) == 2
    assert "is a mnist checkpoint, not cifar10" in capsys.readouterr().err
    assert main(["mnist", "--resume", str(straight / "missing.safetensors")]) == 2
    assert "no such checkpoint" in capsys.readouterr().err


@pytest.mark.parametrize("option", ["--save", "--log", "--plot"])
def test_unwritable_outputs_fail_before_training(tmp_path, capsys, monkeypatch, option):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if not installed
    start = time.perf_counter()
    code = main(["mnist", "--epochs", "1", "--no-progress", option,
                 str(tmp_path / "missing" / "out.file")])
    captured = capsys.readouterr()
    assert code == 2 and time.perf_counter() - start < 5
    assert "does not exist" in captured.err and "mnist:" not in captured.out  # no training
    assert main(["mnist", "--epochs", "1", "--plot", str(tmp_path / "p.png")]) == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert main(["mnist", "--checkpoint-dir", str(tmp_path / "file" / "ck")]) == 2
    assert "is not a writable folder" in capsys.readouterr().err


def test_nn_save_is_atomic_fsyncs_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    import lamina.nn._serialization as ser

    path = tmp_path / "ck.safetensors"
    nn.save({"w": np.ones(3, np.float32)}, path)
    events: list[str] = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append("replace"),
                                                     real_replace(a, b))[1])
    nn.save({"w": np.zeros(3, np.float32)}, path)
    assert events[:2] == ["fsync", "replace"]  # the data is on disk before the rename

    def broken(tensors, filename, metadata=None):
        Path(filename).write_bytes(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(ser, "serialize_file", broken)
    with pytest.raises(OSError, match="disk full"):
        nn.save({"w": np.full(3, 7, np.float32)}, path)
    assert os.listdir(tmp_path) == ["ck.safetensors"]
    np.testing.assert_array_equal(nn.load(path, as_numpy=True)["w"], np.zeros(3))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        nn.save({"w": np.ones(1)}, tmp_path / "nowhere" / "ck.safetensors")


def test_output_redirected_is_plain_lines_naming_the_device(tmp_path):
    log = tmp_path / "out.txt"
    with log.open("w") as f:
        code = subprocess.call([sys.executable, "-m", "lamina.models._cli", "mnist",
                                "--epochs", "2", "--hidden", "8", "--checkpoint-every", "0",
                                "--checkpoint-dir", str(tmp_path)],
                               stdout=f, stderr=subprocess.STDOUT)
    text = log.read_text()
    assert code == 0, text
    assert "\r" not in text and "batch/s" not in text  # no progress bar refreshes
    lines = text.splitlines()
    assert lines[0].endswith(f"device {nd.get_device(None).name}")
    assert [line.split(":")[0] for line in lines[1:]] == ["epoch 1", "epoch 2",
                                                          "final test accuracy"]


def test_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["mnist", "--help"])
    assert exc.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for expected in ("training epochs (default: 10)", "training batch size (default: 128)",
                     "hidden width (default: 256)", "random seed (default: 0)",
                     "every N epochs (iterations for shakespeare); 0 for none (default: 1)",
                     "keep the newest K periodic checkpoints of the run (default: 3)"):
        assert expected in text, expected
    from lamina.models._generate import main as generate_main

    with pytest.raises(SystemExit):
        generate_main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "characters to add (default: 500)" in text and "(default: 0.8)" in text


def test_load_model_rebuilds_the_recipe_model(tmp_path):
    ck = tmp_path / "mlp.safetensors"
    assert main(["mnist", "--epochs", "1", "--hidden", "8", "--no-progress",
                 "--checkpoint-every", "0", "--save", str(ck)]) == 0
    model = load_model(ck)
    assert model[1].weight.shape == (8, 784) and not model.training  # not MLP()'s 512
    saved = nn.load(ck, as_numpy=True)["model"]
    for name, value in model.state_dict().items():
        np.testing.assert_array_equal(value.numpy(), saved[name])
    with pytest.raises(ValueError, match="not a lamina-train checkpoint"):
        nn.save({"model": saved}, tmp_path / "plain.safetensors")
        load_model(tmp_path / "plain.safetensors")


def _ptb(folder: Path) -> list[str]:
    for split, n in (("train", 200), ("valid", 20), ("test", 20)):
        words = " ".join(f"w{(i * 7) % 11}" for i in range(n))
        (folder / f"ptb.{split}.txt").write_text((words + "\n") * 3)
    return ["ptb", "--data", str(folder), "--epochs", "2", "--hidden", "8", "--bptt", "5",
            "--batch-size", "4", "--dropout", "0.2", "--no-progress"]


def _shakespeare(folder: Path) -> list[str]:
    rng = np.random.default_rng(0)
    words = ["the ", "king ", "and ", "queen ", "shall ", "go\n"]
    (folder / "input.txt").write_text("".join(rng.choice(words, 1500)))
    return ["shakespeare", "--data", str(folder), "--iters", "12", "--eval-interval", "6",
            "--eval-iters", "2", "--n-layer", "1", "--n-embd", "16", "--block-size", "8",
            "--batch-size", "4", "--dropout", "0.1", "--sample-tokens", "0",
            "--no-progress"]


def _mnist(folder: Path) -> list[str]:
    return ["mnist", "--hidden", "16", "--batch-size", "500", "--epochs", "2", "--no-progress"]


@pytest.mark.parametrize("precision", ["fp32", "bf16", "fp16"])
@pytest.mark.parametrize("make", [_ptb, _shakespeare, _mnist], ids=["ptb", "shakespeare", "mnist"])
def test_stopped_mid_run_and_resumed_equals_straight(make, precision, tmp_path, monkeypatch):
    """Every recipe resumes bit for bit from a stop in the middle of an epoch (ptb: its
    hidden state comes back too) or between evaluations (shakespeare), at every
    --precision (fp16: the GradScaler's state comes back too)."""
    from lamina.models._checkpoint import Checkpoints

    narrow = {"bf16": "bfloat16", "fp16": "float16"}.get(precision)
    if narrow is not None and narrow not in nd.default_device().dtypes:
        pytest.skip(f"the default device has no {narrow}")
    if narrow is not None and make is not _mnist and nd.default_device().type == "cuda":
        pytest.skip("on cuda (emulated: minutes each) mixed precision resumes are checked "
                    "with mnist; the tests session checks every recipe")
    args = [*make(tmp_path), "--precision", precision]
    straight, resumed = tmp_path / "straight.safetensors", tmp_path / "resumed.safetensors"
    assert main([*args, "--checkpoint-dir", str(tmp_path / "a"), "--save", str(straight)]) == 0
    real = Checkpoints.check_stop
    calls = {"n": 0}

    def stop_after_three_steps(self: Checkpoints, position: dict) -> None:
        calls["n"] += 1
        self._stop = self._stop or calls["n"] == 4  # as if Ctrl-C came during step 4
        real(self, position)

    monkeypatch.setattr(Checkpoints, "check_stop", stop_after_three_steps)
    assert main([*args, "--checkpoint-dir", str(tmp_path / "b")]) == 130
    monkeypatch.setattr(Checkpoints, "check_stop", real)
    saved = next((tmp_path / "b").glob("*/*-interrupted.safetensors"))
    assert nn.load(saved)["position"].get("totals", {"batch": 4})["batch"] == 4
    assert main([args[0], "--resume", str(saved), "--checkpoint-dir", str(tmp_path / "b"),
                 "--no-progress", "--save", str(resumed)]) == 0
    a, b = nn.load(straight, as_numpy=True), nn.load(resumed, as_numpy=True)
    assert_same_weights(a["model"], b["model"])
    assert a["scaler"] == b["scaler"] and bool(a["scaler"]) == (precision == "fp16")
    if nd.default_device().type == "cuda":
        return  # its losses, and so its histories, agree to rounding only
    assert _without_times(a["position"]["history"]) == _without_times(b["position"]["history"])


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pseudo-terminal")
def test_on_a_terminal_evaluation_lines_are_not_glued_to_the_bar(tmp_path):
    """On a terminal the bar is drawn; a record printed while it is open (shakespeare
    evaluates mid-bar) starts a line of its own, as the terminal shows it."""
    args = _shakespeare(tmp_path)[:-1]  # with the progress bar
    import fcntl
    import struct
    import termios

    controller, terminal = os.openpty()
    # 24 rows of 100 columns: a new pty has 0 columns, where a bar draws as nothing
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    proc = subprocess.Popen([sys.executable, "-m", "lamina.models._cli", *args,
                             "--checkpoint-every", "0"], stdout=terminal, stderr=terminal)
    os.close(terminal)
    chunks = []
    while True:
        try:
            chunk = os.read(controller, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(controller)
    assert proc.wait(timeout=60) == 0
    text = b"".join(chunks).decode()
    assert "it/s" in text or "s/it" in text  # the bar was drawn
    shown = [line.rstrip("\r").split("\r")[-1] for line in text.split("\n")]
    records = [line for line in shown if "val loss" in line]
    assert len(records) == 3  # iter 6, iter 12 and the final line
    assert all(line.startswith(("iter ", "final val loss")) for line in records), records


QUICK = ["mnist", "--hidden", "8", "--batch-size", "1000", "--no-progress"]


def _run_of(out: str) -> str:
    """The run id of the ``checkpoints of run ID: FOLDER`` line a run ends with."""
    line = next(line for line in out.splitlines() if line.startswith("checkpoints of run "))
    return line.split()[3].rstrip(":")


def test_runs_sharing_a_checkpoint_dir_never_touch_each_other(tmp_path, capsys):
    """Issue 31: a 3-epoch run, then a 2-epoch run in the same folder; each keeps its own
    newest two checkpoints, and --resume says which run and epoch it continues."""
    ck = tmp_path / "ck"
    common = [*QUICK, "--checkpoint-dir", str(ck), "--keep-checkpoints", "2"]
    assert main([*common, "--epochs", "3"]) == 0
    first = _run_of(capsys.readouterr().out)
    assert main([*common, "--epochs", "2"]) == 0
    second = _run_of(capsys.readouterr().out)
    assert first != second and sorted(p.name for p in ck.iterdir()) == sorted([first, second])
    for run, epochs, kept in ((first, 3, (2, 3)), (second, 2, (1, 2))):
        files = sorted((ck / run).iterdir())
        assert [p.name for p in files] == [f"mnist-epoch000000{i}.safetensors" for i in kept]
        for path, epoch in zip(files, kept):
            saved = nn.load(path)
            assert saved["run"] == run and saved["options"]["epochs"] == epochs
            assert saved["position"]["epoch"] == epoch + 1 and saved["resumed_from"] is None
    before = {p: p.read_bytes() for p in (ck / first).iterdir()}
    resume_from = ck / first / "mnist-epoch0000002.safetensors"
    assert main(["mnist", "--resume", str(resume_from), "--no-progress",
                 "--checkpoint-dir", str(ck)]) == 0
    out = capsys.readouterr().out
    assert f"resuming run {first} at epoch 3 from {resume_from}" in out.splitlines()[0]
    third = _run_of(out)
    assert third not in (first, second) and len(list(ck.iterdir())) == 3
    assert {p: p.read_bytes() for p in (ck / first).iterdir()} == before  # untouched
    continued = nn.load(ck / third / "mnist-epoch0000003.safetensors")
    assert continued["run"] == third and continued["resumed_from"] == first


def test_resume_takes_output_locations_from_the_command_line_only(tmp_path, capsys):
    """Issue 31: a checkpoint whose recorded options name output files cannot make
    lamina-train write there; recorded values are checked as the command line's are."""
    ck = tmp_path / "ck"
    assert main([*QUICK, "--epochs", "2", "--checkpoint-dir", str(ck)]) == 0
    saved = nn.load(_only_run(ck) / "mnist-epoch0000001.safetensors")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    crafted = tmp_path / "crafted.safetensors"
    nn.save({**saved, "options": {**saved["options"],
                                  "save": str(elsewhere / "model.safetensors"),
                                  "log": str(elsewhere / "log.csv"),
                                  "plot": str(elsewhere / "plot.png"),
                                  "checkpoint_dir": str(elsewhere / "ck")}}, crafted)
    mine = tmp_path / "mine"
    assert main(["mnist", "--resume", str(crafted), "--no-progress",
                 "--checkpoint-dir", str(mine)]) == 0
    assert list(elsewhere.iterdir()) == []
    assert [p.name for p in _only_run(mine).iterdir()] == ["mnist-epoch0000002.safetensors"]
    capsys.readouterr()
    for bad, message in ((("hidden", 0), "the checkpoint's --hidden 0 is not valid: must be "
                          ">= 1, got 0"),
                         (("optimizer", "lbfgs"), "the checkpoint's --optimizer 'lbfgs' is "
                          "not valid: must be one of ['adam', 'sgd']"),
                         (("warp", 9), "records an option --warp that lamina-train mnist "
                          "does not have")):
        nn.save({**saved, "options": {**saved["options"], bad[0]: bad[1]}}, crafted)
        assert main(["mnist", "--resume", str(crafted), "--no-progress",
                     "--checkpoint-dir", str(mine)]) == 2
        assert message in capsys.readouterr().err
