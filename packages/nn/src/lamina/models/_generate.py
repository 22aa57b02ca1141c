"""``lamina-generate``: stream text from a GPT trained by ``lamina-train shakespeare``.

The sampling itself (:func:`generate`, with or without a key/value cache)
lives in :mod:`lamina.models._sampling`; this module reads the checkpoint and
the command line.

Example:
    lamina-generate --checkpoint gpt.safetensors --prompt "ROMEO:" \\
        --max-new-tokens 300 --temperature 0.8 --top-k 40
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
from lamina.data import CharTokenizer

from ._argtypes import HelpFormatter, integer, real
from ._argtypes import device as known_device
from ._checkpoint import read_checkpoint
from ._gpt import GPT
from ._loading import model_from_checkpoint
from ._sampling import generate, generate_tokens, sample_next

__all__ = ["generate", "generate_tokens", "load_gpt_checkpoint", "main", "sample_next"]


def load_gpt_checkpoint(path: str, device: Any = None) -> tuple[GPT, CharTokenizer]:
    """A GPT and its character tokenizer from a ``lamina-train shakespeare`` checkpoint
    (``--save``, ``--checkpoint-dir`` or Ctrl-C); the model is rebuilt by :func:`load_model`."""
    ckpt = read_checkpoint(path, device)
    if ckpt["recipe"] != "shakespeare" or "vocab" not in ckpt:
        raise ValueError(f"load_gpt_checkpoint: {path} is a {ckpt['recipe']} checkpoint, not "
                         f"a GPT; write one with lamina-train shakespeare --save")
    model = model_from_checkpoint(ckpt, device)
    if not isinstance(model, GPT):
        raise ValueError(f"load_gpt_checkpoint: {path} does not hold a GPT")
    return model, CharTokenizer(ckpt["vocab"])


def build_parser() -> argparse.ArgumentParser:
    """The ``lamina-generate`` parser; a value out of range is a usage error (exit 2)."""
    p = argparse.ArgumentParser(prog="lamina-generate", formatter_class=HelpFormatter,
                                description="Stream text from a trained character-level GPT.")
    p.add_argument("--checkpoint", required=True,
                   help="a lamina-train shakespeare checkpoint (--save or --checkpoint-dir)")
    p.add_argument("--prompt", default="\n", help="text to continue (default: a newline)")
    p.add_argument("--max-new-tokens", type=integer(0), default=500, help="characters to add")
    p.add_argument("--temperature", type=real(0.0), default=0.8, help="0 for greedy decoding")
    p.add_argument("--top-k", type=integer(1), default=None,
                   help="sample among the k most likely characters (default: all)")
    p.add_argument("--seed", type=integer(0), default=None,
                   help="sampling seed (default: fresh)")
    p.add_argument("--device", type=known_device, default=None,
                   help="device name (default: LAMINA_DEVICE or the best available)")
    cache = p.add_mutually_exclusive_group()
    cache.add_argument("--no-cache", action="store_true",
                       help="re-run the whole context per token")
    cache.add_argument("--compile", action="store_true",
                       help="decode with a static key/value cache through "
                            "lamina.autograd.compile (every step after the first replays)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``lamina-generate`` console script."""
    args = build_parser().parse_args(argv)
    try:
        model, tok = load_gpt_checkpoint(args.checkpoint, args.device)
        prompt = tok.encode(args.prompt)[None]
        sys.stdout.write(args.prompt)

        def stream(token: np.ndarray) -> None:
            sys.stdout.write(tok.decode(token))
            sys.stdout.flush()

        generate(model, prompt, args.max_new_tokens, args.temperature, args.top_k,
                 not args.no_cache, args.seed, on_token=stream, compile=args.compile)
    except (FileNotFoundError, KeyError, ValueError) as exc:
        print(f"lamina-generate: error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
