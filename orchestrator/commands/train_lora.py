"""`go19 train-lora`: one LoRA adapter trained with TRL's SFTTrainer on a go19 export
(:mod:`orchestrator.train.lora`, imported only when this runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.commands import SUMMARIES, examples, extra_problem


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "train-lora",
        help=SUMMARIES["train-lora"],
        description="Train a LoRA adapter (the language model's projections) on an SFT "
        "export's samples with TRL's SFTTrainer, on the CPU, and save it in OUT: "
        "`go19 serve --engine hf --adapter NAME=OUT` serves it. Needs the vlm extra and "
        "trl; `make demo-vlm` runs it on the tiny model.",
        epilog=examples("go19 train-lora --model models/tiny --export sft --out adapters/a",
                        "go19 train-lora --model models/tiny --export sft --out adapters/a "
                        "--steps 50"),
    )
    parser.add_argument("--model", type=Path, required=True, help="the base model's folder")
    parser.add_argument("--export", type=Path, required=True,
                        help="a `go19 dataset export` folder (SFT parquet)")
    parser.add_argument("--out", type=Path, required=True, help="the adapter's folder")
    parser.add_argument("--steps", type=int, default=100, help="optimiser steps (default 100)")
    parser.add_argument("--batch", type=int, default=4, help="samples per step (default 4)")
    parser.add_argument("--learning-rate", type=float, default=5e-3,
                        help="(default 5e-3: the random tiny model learns in minutes)")
    parser.add_argument("--seed", type=int, default=0, help="(default 0)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.steps < 1 or args.batch < 1 or args.threads < 1:
        print("train-lora: --steps, --batch and --threads must be at least 1", file=sys.stderr)
        return 2
    problem = extra_problem("training")
    if problem is None:
        try:
            import trl  # noqa: F401
        except ImportError:
            problem = "trl is missing: pip install trl"
    if problem:
        print(f"train-lora: {problem}", file=sys.stderr)
        return 2
    from orchestrator.train.lora import LoraRun, train

    print(f"train-lora: {args.export} -> {args.out}, {args.steps} steps of {args.batch}",
          flush=True)
    try:
        result = train(LoraRun(args.model, args.export, args.out, steps=args.steps,
                               batch=args.batch, learning_rate=args.learning_rate,
                               seed=args.seed, threads=args.threads),
                       lambda line: print(line, flush=True))
    except (OSError, ValueError) as exc:
        print(f"train-lora: {exc}", file=sys.stderr)
        return 2
    print(f"train-lora: {result.samples} samples, {result.steps} steps, mean loss "
          f"{result.loss:.3f}, {result.seconds:.0f} s; adapter in {args.out}")
    return 0
