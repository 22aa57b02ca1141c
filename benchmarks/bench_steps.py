"""Whole training steps: Lamina (cpu backend) vs PyTorch CPU, at 1 and 2 threads.

Rows (float32, the same weights and inputs in both libraries):

- conv2d 3->16 3x3 pad 1 forward + backward, batch 32, 32x32 (``bench_cnn``);
- char GPT (4 layers x 128, context 64) train step, batch 32, AdamW (``bench_gpt``);
- MLP 784-256-10 SGD train step, batch 128;
- dlsys ResNet9 train step, batch 128, Adam (``bench_cnn``);
- LSTM LM (embedding 10k x 100, LSTM 100, Linear 100->10k) forward + backward,
  20 steps x batch 32; and the same model with PyTorch's LSTM written from
  primitive ops (one input projection for all steps, then per step a matmul,
  ``chunk``, ``sigmoid`` and ``tanh``: no fused cell), against the same Lamina step;
- a 1-element ``x + y`` with ``x.requires_grad``, forward only (``bench_autograd``);
- a few-channel conv net (PyTorch's MNIST example: conv 1->32, conv 32->64,
  max-pool, dropout, Linear 9216->128->10), batch 64, Adadelta train step;
- the PTB word model (2x200 LSTM, vocab 10k, 35 steps x batch 20) with gradient
  clipping and SGD (``bench_lstm``).

For each thread count both libraries are set to it (``torch.set_num_threads``, the
cpu device's ``set_num_threads``; restored afterwards) and every row is timed in
``--rounds`` interleaved rounds (Lamina then PyTorch, the order flipping each round),
each after warm-up calls and, above one thread, a pause so the other library's
OpenMP/OpenBLAS workers stop spinning. A row reports both medians, their ratio
(PyTorch time / Lamina time: > 1 means Lamina is faster) and the min-max of the
per-round ratios. Before timing, each row checks that both libraries give finite
losses that agree at step 0 from the same weights, so a broken step cannot be timed.

    python benchmarks/bench_steps.py [--rounds 3] [--threads 1,2] [--only ROW] [--out PATH]

writes PATH.md and PATH.json (default ``results/train_steps_<machine tag>``, the tag
naming the CPU, core count and the cpu backend's ISA path; ``LAMINA_CPU_ISA``
picks the path). ``nox -s bench_steps`` runs it.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
import lamina.autograd as ag  # noqa: E402  (Lamina first: see docs/guides/gemm.md)
import lamina.ndarray as nd  # noqa: E402
import torch  # noqa: E402
from _machine import cpu_model, machine  # noqa: E402
from _timing import row, seconds_per_call  # noqa: E402
from lamina import nn, optim  # noqa: E402

DEVICE = "cpu"
SCALE = {"ms": 1e3, "us": 1e6}  # seconds to each case's unit
PAUSE = 0.5  # seconds between the libraries' timings above one thread


@dataclass
class Pair:
    """The two callables a row times, each returning its result (a loss, a gradient).

    ``reference``, when given, returns the (Lamina, PyTorch) values compared by the
    sanity check in place of the first step's results (for steps with dropout).
    """

    ours: Callable[[], Any]
    theirs: Callable[[], Any]
    reference: Callable[[], tuple[Any, Any]] | None = None
    rtol: float = 1e-3


@dataclass
class Case:
    name: str
    size: str
    unit: str  # "ms" or "us"
    build: Callable[[], Pair]


def _twin(ours: Any, theirs: torch.nn.Module) -> torch.nn.Module:
    """``theirs`` with ``ours``'s weights (the state-dict names match)."""
    theirs.load_state_dict({k: torch.from_numpy(v.numpy().copy())
                            for k, v in ours.state_dict().items()})
    return theirs


def _inputs(shape: tuple[int, ...], classes: int) -> tuple[Any, Any, Any, Any]:
    """(x, y) for Lamina and for PyTorch: standard-normal float32 and int64 labels."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.integers(0, classes, shape[0])
    return (ag.tensor(x, device=DEVICE), ag.tensor(y, device=DEVICE),
            torch.from_numpy(x), torch.from_numpy(y))


def _train_pair(model: Any, twin: torch.nn.Module, opt: Any, topt: torch.optim.Optimizer,
                shape: tuple[int, ...]) -> tuple[Callable[[], float], Callable[[], float]]:
    """Cross-entropy train steps (zero_grad, forward, backward, step) returning the loss."""
    x, y, tx, ty = _inputs(shape, 10)
    loss_fn = nn.CrossEntropyLoss()

    def ours() -> float:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    def theirs() -> float:
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(twin(tx), ty)
        loss.backward()
        topt.step()
        return loss.item()

    return ours, theirs


def _mlp() -> Pair:
    ag.manual_seed(0)
    model = nn.Sequential(nn.Linear(784, 256, device=DEVICE), nn.ReLU(),
                          nn.Linear(256, 10, device=DEVICE))
    tnn = torch.nn
    twin = _twin(model, tnn.Sequential(tnn.Linear(784, 256), tnn.ReLU(), tnn.Linear(256, 10)))
    ours, theirs = _train_pair(model, twin, optim.SGD(model.parameters(), lr=0.01),
                               torch.optim.SGD(twin.parameters(), lr=0.01), (128, 784))
    return Pair(ours, theirs)


def _mnist_net(lib: Any, **device: Any) -> Any:
    """PyTorch's MNIST example network in ``lib`` (``lamina.nn`` or ``torch.nn``)."""
    return lib.Sequential(
        lib.Conv2d(1, 32, 3, **device), lib.ReLU(), lib.Conv2d(32, 64, 3, **device), lib.ReLU(),
        lib.MaxPool2d(2), lib.Dropout(0.25), lib.Flatten(), lib.Linear(9216, 128, **device),
        lib.ReLU(), lib.Dropout(0.5), lib.Linear(128, 10, **device))


def _convnet() -> Pair:
    ag.manual_seed(0)
    model = _mnist_net(nn, device=DEVICE)
    twin = _twin(model, _mnist_net(torch.nn))
    ours, theirs = _train_pair(model, twin, optim.Adadelta(model.parameters(), lr=1.0),
                               torch.optim.Adadelta(twin.parameters(), lr=1.0), (64, 1, 28, 28))
    x, _, tx, _ = _inputs((64, 1, 28, 28), 10)

    def reference() -> tuple[Any, Any]:
        """Eval-mode logits: the dropout masks of the train steps differ."""
        model.eval()
        twin.eval()
        try:
            with torch.no_grad(), ag.no_grad():
                return model(x), twin(tx)
        finally:
            model.train()
            twin.train()

    return Pair(ours, theirs, reference)


def _resnet9() -> Pair:
    from bench_cnn import _resnet_cases

    return Pair(*_resnet_cases(DEVICE, optimizer="adam"))


def _conv() -> Pair:
    from bench_cnn import _conv_cases

    return Pair(*_conv_cases(DEVICE))


def _gpt() -> Pair:
    from bench_gpt import _train_cases

    return Pair(*_train_cases(batch=32))


def _add() -> Pair:
    from bench_autograd import _add_cases

    return Pair(*_add_cases(DEVICE, requires_grad=True))


def _ptb() -> Pair:
    from bench_lstm import _cases

    return Pair(*_cases(DEVICE))


LM_VOCAB, LM_WIDTH, LM_STEPS, LM_BATCH = 10_000, 100, 20, 32


def _torch_primitive_lstm(rnn: torch.nn.LSTM, emb: torch.Tensor) -> torch.Tensor:
    """One-layer ``rnn`` over (L, N, E) ``emb`` from primitive ops, as Lamina's layer
    computes it: every step's input projection in one product, then the cell per step."""
    w_t = rnn.weight_hh_l0.T
    xp = emb @ rnn.weight_ih_l0.T + (rnn.bias_ih_l0 + rnn.bias_hh_l0)
    h = c = torch.zeros(emb.shape[1], rnn.hidden_size)
    outs = []
    for t in range(emb.shape[0]):
        i, f, g, o = (xp[t] + h @ w_t).chunk(4, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        outs.append(h)
    return torch.stack(outs)


def _lstm_lm(primitive: bool) -> Pair:
    """Forward + backward of the 1-layer LSTM LM; PyTorch's LSTM fused or from primitives."""
    from bench_lstm import twins
    from lamina.models._language_model import token_nll

    ag.manual_seed(0)
    model, twin = twins(DEVICE, LM_VOCAB, LM_WIDTH, LM_WIDTH, 1)
    rng = np.random.default_rng(0)
    x_np, y_np = (rng.integers(0, LM_VOCAB, (LM_STEPS, LM_BATCH)) for _ in range(2))
    x, y = ag.tensor(x_np, device=DEVICE), ag.tensor(y_np, device=DEVICE).reshape(-1)
    tx, ty = torch.from_numpy(x_np), torch.from_numpy(y_np).reshape(-1)

    def ours() -> Any:
        model.zero_grad()
        logits, _ = model(x)
        loss = token_nll(logits.reshape(-1, LM_VOCAB), y)
        loss.backward()
        return loss

    def theirs() -> Any:
        twin.zero_grad()
        emb = twin["encoder"](tx)
        out = _torch_primitive_lstm(twin["rnn"], emb) if primitive else twin["rnn"](emb)[0]
        loss = torch.nn.functional.cross_entropy(twin["decoder"](out).reshape(-1, LM_VOCAB), ty)
        loss.backward()
        return loss

    return Pair(ours, theirs)


LM_SIZE = f"V {LM_VOCAB}, E/H {LM_WIDTH}, {LM_STEPS}x{LM_BATCH}"
CASES = [
    Case("conv2d 3->16 3x3 pad 1 fwd+bwd", "32x3x32x32", "ms", _conv),
    Case("char GPT train step (AdamW)", "4x128, ctx 64, batch 32", "ms", _gpt),
    Case("MLP 784-256-10 train step (SGD)", "batch 128", "ms", _mlp),
    Case("ResNet9 (dlsys) train step (Adam)", "batch 128", "ms", _resnet9),
    Case("LSTM LM fwd+bwd", LM_SIZE, "ms", lambda: _lstm_lm(False)),
    Case("LSTM LM fwd+bwd, torch from primitive ops", LM_SIZE, "ms", lambda: _lstm_lm(True)),
    Case("add 1 element, requires_grad (fwd)", "1", "us", _add),
    Case("MNIST conv net train step (Adadelta)", "batch 64, 1x28x28", "ms", _convnet),
    Case("PTB LSTM train step (clip, SGD)", "2x200, V 10000, 35x20", "ms", _ptb),
]


def _to_numpy(value: Any) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    if isinstance(value, ag.Tensor):
        return np.asarray(value.detach().numpy())
    return np.asarray(value, dtype=np.float64)


def sanity_check(name: str, pair: Pair) -> float:
    """Runs one step of each library (the first, from the same weights) and raises
    RuntimeError unless both results are finite and agree (or ``pair.reference``'s do).

    Returns:
        The largest absolute difference between the compared results.
    """
    ref = pair.reference() if pair.reference is not None else None
    first = _to_numpy(pair.ours()), _to_numpy(pair.theirs())
    for lib, value in zip(("Lamina", "PyTorch"), first):
        if not np.all(np.isfinite(value)):
            raise RuntimeError(f"bench_steps: {name}: {lib}'s first step gave a non-finite "
                               f"result {value}; fix the step before timing it")
    ours, theirs = first if ref is None else (_to_numpy(ref[0]), _to_numpy(ref[1]))
    scale = max(1.0, float(np.max(np.abs(theirs))))
    err = float(np.max(np.abs(ours - theirs)))
    if ours.shape != theirs.shape or err > pair.rtol * scale:
        raise RuntimeError(f"bench_steps: {name}: Lamina and PyTorch disagree from the same "
                           f"weights (max |difference| {err:.3g} > {pair.rtol} x {scale:.3g}); "
                           "the two steps do not compute the same thing")
    return err


def measure(pair: Pair, threads: int, rounds: int, min_time: float
            ) -> tuple[list[float], list[float]]:
    """Seconds per call of Lamina and of PyTorch in each of ``rounds`` interleaved rounds."""
    times: dict[str, list[float]] = {"lamina": [], "torch": []}
    fns = {"lamina": pair.ours, "torch": pair.theirs}
    for fn in fns.values():  # warm-up at this thread count
        _pause(threads)
        fn(), fn()
    for k in range(rounds):
        for name in (("lamina", "torch") if k % 2 == 0 else ("torch", "lamina")):
            _pause(threads)
            times[name].append(seconds_per_call(fns[name], min_time))
    return times["lamina"], times["torch"]


def _pause(threads: int) -> None:
    if threads > 1:
        time.sleep(PAUSE)


def set_threads(n: int) -> None:
    """Both libraries' intra-op thread counts."""
    torch.set_num_threads(n)
    nd.get_device(DEVICE).set_num_threads(n)


def run(cases: list[Case], thread_counts: list[int], rounds: int, min_time: float
        ) -> list[dict[str, object]]:
    """Rows in ``_timing.row``'s format plus threads, per-round times and ratio range."""
    pairs, diffs = {}, {}
    for case in cases:
        pairs[case.name] = pair = case.build()
        diffs[case.name] = sanity_check(case.name, pair)
    rows: list[dict[str, object]] = []
    old = torch.get_num_threads(), nd.get_device(DEVICE).num_threads()
    try:
        for threads in thread_counts:
            set_threads(threads)
            for case in cases:
                ours, theirs = measure(pairs[case.name], threads, rounds, min_time)
                ratios = [t / o for o, t in zip(ours, theirs)]
                s = SCALE[case.unit]
                rows.append(row(case.name, case.size, "lamina[cpu]", "torch cpu",
                                statistics.median(ours) * s, statistics.median(theirs) * s,
                                case.unit, False, threads=threads, ratio_min=min(ratios),
                                ratio_max=max(ratios), lamina_rounds=[t * s for t in ours],
                                torch_rounds=[t * s for t in theirs],
                                step0_max_abs_diff=diffs[case.name]))
                print(_line(rows[-1]), flush=True)
    finally:
        torch.set_num_threads(old[0])
        nd.get_device(DEVICE).set_num_threads(old[1])
    for case in cases:  # the steps still compute something after all the timing
        for lib, value in zip(("Lamina", "PyTorch"), (pairs[case.name].ours(),
                                                      pairs[case.name].theirs())):
            if not np.all(np.isfinite(_to_numpy(value))):
                raise RuntimeError(f"bench_steps: {case.name}: {lib}'s result became "
                                   "non-finite during the timing; the figures are void")
    return rows


def _line(r: dict[str, Any]) -> str:
    return (f"| {r['op']} | {r['size']} | {r['threads']} | {r['lamina_value']:.3g} | "
            f"{r['baseline_value']:.3g} | {r['unit']} | {r['ratio']:.2f} | "
            f"{r['ratio_min']:.2f}-{r['ratio_max']:.2f} |")


def markdown(rows: list[dict[str, object]], info: dict[str, object], rounds: int) -> str:
    """The result file: the machine, how the figures were taken, and the table."""
    header = ", ".join(f"{k} {v}" for k, v in info.items())
    return "\n".join([
        "# Training steps: Lamina vs PyTorch (benchmarks/bench_steps.py)", "", header, "",
        f"Medians of {rounds} interleaved rounds in one process, both libraries at the row's "
        "thread count. ratio = PyTorch time / Lamina time (> 1: Lamina faster); range: the "
        "lowest and highest per-round ratio.", "",
        "| step | size | threads | lamina | pytorch | unit | ratio | ratio range |",
        "|---|---|---:|---:|---:|---|---:|---|", *map(_line, rows), ""])


def machine_tag() -> str:
    """``<cpu>-f<family>m<model>-<cores>cpu_<isa>``, e.g. ``amd-epyc-f25m17-2cpu_avx2``."""
    import os

    import lamina_backend_cpu

    described = re.match(r"(.*) \(family (\S+) model (\S+)\)$", cpu_model())
    name, family, model = described.groups() if described else ("cpu", "?", "?")
    name = re.sub(r"\((r|tm)\)|processor|\bcpu\b|@.*|\d+-core", "", name.lower())
    slug = re.sub(r"[^a-z0-9]+", "-", name).strip("-") or "cpu"
    return f"{slug}-f{family}m{model}-{os.cpu_count()}cpu_{lamina_backend_cpu.isa()}"


def _thread_counts(text: str) -> list[int]:
    try:
        counts = [int(t) for t in text.split(",")]
    except ValueError:
        counts = []
    if not counts or min(counts) < 1:
        raise argparse.ArgumentTypeError(f"--threads takes positive integers separated by "
                                         f"commas, e.g. 1,2; got {text!r}")
    return counts


def selected(parser: argparse.ArgumentParser, cases: list[Case], only: str | None
             ) -> list[Case]:
    """The cases whose name contains ``only`` (all for None); a parser error where Lamina's
    default device is not the cpu backend or no case matches."""
    if nd.default_device().name != DEVICE:
        parser.error(f"Lamina's default device is {nd.default_device().name!r}: this benchmark "
                     "measures the cpu backend; install lamina-backend-cpu and unset "
                     "LAMINA_DEVICE")
    chosen = [c for c in cases if only is None or only.lower() in c.name.lower()]
    if not chosen:
        parser.error(f"--only {only!r} matches no row; rows: " + "; ".join(c.name for c in cases))
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per row")
    parser.add_argument("--threads", type=_thread_counts, default=[1, 2],
                        help="thread counts, comma-separated (default 1,2)")
    parser.add_argument("--only", default=None, metavar="ROW",
                        help="only the rows whose name contains ROW (case-insensitive)")
    parser.add_argument("--min-time", type=float, default=1.0,
                        help="seconds each library runs a row per round (default 1.0)")
    parser.add_argument("--out", default=None, help="writes OUT.md and OUT.json (default "
                        "benchmarks/results/train_steps_<machine tag>)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    cases = selected(parser, CASES, args.only)
    out = Path(args.out) if args.out else HERE / "results" / f"train_steps_{machine_tag()}"
    rows = run(cases, args.threads, args.rounds, args.min_time)
    info = machine()
    info.pop("lamina_threads", None)  # the default, not what ran: each row names its count
    info["threads"] = ",".join(map(str, args.threads))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(
        {"machine": info, "rounds": args.rounds, "min_time_s": args.min_time, "rows": rows},
        indent=1))
    text = markdown(rows, info, args.rounds)
    out.with_suffix(".md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
