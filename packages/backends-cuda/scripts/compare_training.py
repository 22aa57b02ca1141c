"""Compare two ``lamina-train --log FILE.json`` runs of one recipe on two devices.

The same seed, data order and initial weights on both devices: the runs differ
only by the devices' rounding (CUDA's reductions sum in another order than
the reference device's), so their losses and accuracies must agree closely.
Used by ``nox -s backend_cuda_emulated`` to check a short MNIST training on the
emulated ``cuda`` device against the same run on ``cpu``.

Usage: python compare_training.py RUN.json REFERENCE.json [--acc-tol 0.02] [--min-acc 0.8]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path)
    parser.add_argument("reference", type=Path)
    parser.add_argument("--acc-tol", type=float, default=0.02,
                        help="largest allowed |test accuracy difference| per epoch")
    parser.add_argument("--loss-rtol", type=float, default=0.05,
                        help="largest allowed relative test loss difference per epoch")
    parser.add_argument("--min-acc", type=float, default=0.8,
                        help="final test accuracy both runs must reach")
    args = parser.parse_args(argv)
    run, ref = (json.loads(p.read_text()) for p in (args.run, args.reference))
    if len(run) != len(ref) or not run:
        print(f"compare_training: {len(run)} and {len(ref)} epochs logged", file=sys.stderr)
        return 1
    failures = []
    for a, b in zip(run, ref, strict=True):
        d_acc = abs(a["test_acc"] - b["test_acc"])
        d_loss = abs(a["test_loss"] - b["test_loss"]) / max(abs(b["test_loss"]), 1e-12)
        print(f"epoch {a['epoch']}: test_acc {a['test_acc']:.4f} vs {b['test_acc']:.4f} "
              f"(|diff| {d_acc:.4f}), test_loss {a['test_loss']:.4f} vs {b['test_loss']:.4f} "
              f"(rel diff {d_loss:.4f})")
        if d_acc > args.acc_tol:
            failures.append(f"epoch {a['epoch']}: accuracy differs by {d_acc:.4f}")
        if d_loss > args.loss_rtol:
            failures.append(f"epoch {a['epoch']}: test loss differs by {d_loss:.2%}")
    for name, log in (("run", run), ("reference", ref)):
        if log[-1]["test_acc"] < args.min_acc:
            failures.append(f"{name} reached only {log[-1]['test_acc']:.4f} < {args.min_acc}")
    for failure in failures:
        print(f"compare_training: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
