"""`go19 tiny-model DIR`: a tiny random Qwen2.5-VL made on the spot (no download), to try
`go19 serve --engine hf`, vLLM and adapter training without weights or a GPU. The builder
is :mod:`orchestrator.serve.hf.tiny` (the vlm extra, imported only when this runs)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from orchestrator.commands import SUMMARIES, examples, extra_problem


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tiny-model",
        help=SUMMARIES["tiny-model"],
        description="Build a random Qwen2.5-VL from a config, with a byte-level tokenizer "
        "made here and the real Qwen2-VL processor, and save it in DIR (replacing DIR's "
        "contents): AutoProcessor, AutoModelForImageTextToText, `go19 serve --engine hf "
        "--model DIR` and vLLM load it like any Qwen2.5-VL folder. It plays no Go: LoRA "
        "adapters trained on a go19 export learn what to answer. Needs the vlm extra; "
        "docs/vlm.md.",
        epilog=examples("go19 tiny-model models/tiny", "go19 tiny-model models/tiny --seed 1"),
    )
    parser.add_argument("dir", type=Path, metavar="DIR", help="the folder to write")
    parser.add_argument("--seed", type=int, default=0, help="torch's seed for the weights")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out: Path = args.dir
    if out.exists() and not out.is_dir():
        print(f"tiny-model: {out}: exists and is not a folder", file=sys.stderr)
        return 2
    problem = extra_problem("the tiny model")
    if problem:
        print(f"tiny-model: {problem}", file=sys.stderr)
        return 2
    from orchestrator.serve.hf.tiny import build

    try:
        parameters = build(out, args.seed)
    except OSError as exc:
        print(f"tiny-model: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(f"tiny Qwen2.5-VL ({parameters / 1000:.0f} k parameters) in {out}")
    return 0
