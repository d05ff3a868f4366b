"""`go19 dataset build INPUT... --out DIR`, `go19 dataset check DIR` and `go19 dataset
export DIR --out DIR` (SFT samples or DPO pairs)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from orchestrator.commands import (
    SUMMARIES,
    add_max_file_mib,
    count_int,
    dataset_ray,
    examples,
    max_file_bytes,
    positive_int,
)
from orchestrator.coords import MOVE_TEXTS
from orchestrator.dataset import BuildOptions, Counts, DatasetError, build
from orchestrator.dataset.build import EmptyDataset
from orchestrator.dataset.check import check_sample, describe, draw, sheet
from orchestrator.export.dpo import DEFAULT_MIN_LOSS, STYLES
from orchestrator.export.pipeline import DEFAULT_SHARD_SIZE, FORMATS, ExportOptions, export
from orchestrator.export.progress import ExportProgress
from orchestrator.files import atomic_write, sweep_partials
from orchestrator.label.join import TARGETS, LabelJoin
from orchestrator.label.store import LabelError, LabelSet
from orchestrator.positions.samples import GameRead
from orchestrator.prompt import PromptError, read_template
from orchestrator.sgf import TooLarge
from orchestrator.words import found_line, plural


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "dataset",
        help=SUMMARIES["dataset"],
        description="Turn recordings and SGF corpora into per-move training samples "
        "(sharded .npz + manifest.json), check a built dataset against its sources, and "
        "export it as a VLM trainer reads it: SFT samples (parquet, jsonl) or DPO preference "
        "pairs (--format dpo, from a dataset built with KataGo --labels).",
        epilog=examples(
            "go19 dataset build recordings --out datasets/demo",
            "go19 dataset export datasets/demo-kg --format dpo --out exports/dpo",
        ),
    )
    commands = parser.add_subparsers(dest="dataset_command", metavar="ACTION", required=True)

    b = commands.add_parser(
        "build",
        help="replay SGF files and write samples",
        description="Replay every 19x19 game under go19's rules (games rejected as "
        "`go19 replay --require-19` rejects them; void games skipped) and keep one sample "
        "per move: the board before it, side to move, the move, result and move number. "
        "Moves from the opening book or fallbacks are replayed but not kept as targets. "
        "Input without a usable game is refused: nothing is written, exit status 2.",
        epilog=examples(
            "go19 dataset build recordings ../shared/sgf/real/pro19 --out datasets/mixed",
            "go19 dataset build recordings --labels labels/demo --target katago "
            "--out datasets/demo-kg",
        ),
    )
    b.add_argument("inputs", nargs="+", type=Path, metavar="INPUT",
                   help="SGF file or folder (searched recursively)")
    b.add_argument("--out", type=Path, required=True, help="dataset folder to create")
    b.add_argument("--force", action="store_true", help="replace an existing dataset at --out")
    b.add_argument("--winner-only", action="store_true",
                   help="samples from the winner's moves only (games without a winner give none)")
    b.add_argument("--tactical-bias", action="store_true",
                   help="with --max-per-game: half the picks among capture/atari/escape moves")
    b.add_argument("--tactics-only", action="store_true",
                   help="only moves that capture, give atari or escape atari")
    b.add_argument("--max-per-game", type=positive_int, metavar="N",
                   help="at most N samples per game, spread over the game (default: all)")
    b.add_argument("--no-dedup", action="store_true",
                   help="keep positions (stones, side to move, ko) seen before")
    b.add_argument("--include-fallback", action="store_true",
                   help="keep opening-book and fallback moves as targets too")
    b.add_argument("--min-moves", type=count_int, default=0, metavar="N",
                   help="skip games shorter than N moves")
    b.add_argument("--require-provenance", action="store_true",
                   help="skip games whose source and licence the manifest does not give")
    b.add_argument("--source-manifest", type=Path, metavar="FILE",
                   help="provenance TSV (file, source, licence columns) or JSON "
                   "(default: none, every source unknown)")
    b.add_argument("--seed", type=int, default=0, help="seed for --tactical-bias picks")
    b.add_argument("--workers", type=positive_int, default=1, metavar="N",
                   help="processes reading and replaying (output is the same for any N); "
                   "N>1 pays on the pure path (2 on 2 cores: ~1.3x); with go19[fast] one "
                   "process builds ~2,800 games/s and taking the boards back from workers "
                   "costs more than it saves (2 workers: ~0.65x)")
    b.add_argument("--shard-size", type=positive_int, default=1 << 16, metavar="N",
                   help="samples per shard (default 65536)")
    b.add_argument("--no-compress", action="store_true",
                   help="store shards without deflate (the default deflates: boards of one "
                   "game differ by a stone or two, so shards are ~25x smaller)")
    b.add_argument("--labels", type=Path, metavar="DIR",
                   help="join KataGo labels written by `go19 label` (docs/labels.md; "
                   "default: no labels)")
    b.add_argument("--target", choices=TARGETS, default="played",
                   help="with --labels: the sample's move is the played one (KataGo's "
                   "fields ride along) or KataGo's best move (policy as soft target)")
    b.add_argument("--allow-missing-labels", action="store_true",
                   help="with --labels: keep positions without a label (label fields "
                   "NaN / -1) instead of dropping them")
    add_max_file_mib(b)
    dataset_ray.add_options(b)
    b.set_defaults(func=run_build)

    c = commands.add_parser(
        "check",
        help="check random samples against their SGFs (with sgfmill) and draw them",
        description="Draw random samples, confirm each against its source SGF replayed "
        "independently with sgfmill, print one line per sample and write a contact sheet "
        "of the boards with the target move crossed. Exits 1 if any sample disagrees.",
        epilog=examples("go19 dataset check datasets/demo",
                        "go19 dataset check datasets/demo --sample 100 --seed 7"),
    )
    c.add_argument("folder", type=Path, metavar="DIR", help="dataset folder (go19 dataset build)")
    c.add_argument("--sample", type=positive_int, default=20, metavar="N",
                   help="samples to draw")
    c.add_argument("--out", type=Path, help="contact sheet PNG (default DIR/check.png)")
    c.add_argument("--seed", type=int, default=0, help="seed of the draw")
    c.set_defaults(func=run_check)

    e = commands.add_parser(
        "export",
        help="write a dataset as VLM training data (parquet for HF/TRL, jsonl for "
        "LLaMA-Factory/ms-swift, dpo: preference pairs for all three)",
        description="Turn a built dataset into image + prompt + answer samples: the picture "
        "is go19's render of the board, byte for byte the PNG the GO19 client sends for "
        "that position (last move marked, at the size the player saw), the prompt a "
        "template, the answer the sample's move. --format dpo writes preference pairs "
        "instead, from a dataset built with --labels: one per move that lost at least "
        "--min-loss points by KataGo's score lead, chosen KataGo's move, rejected the played "
        "one (go19 review labels a run for it). docs/formats.md describes the formats.",
        epilog=examples(
            "go19 dataset export datasets/demo --format parquet --out exports/demo",
            "go19 dataset export datasets/demo-kg --format dpo --dpo-style llamafactory "
            "--out exports/dpo",
        ),
    )
    e.add_argument("dataset", type=Path, metavar="DATASET_DIR",
                   help="a folder written by `go19 dataset build` (its sha256s are checked)")
    e.add_argument("--out", type=Path, required=True, help="export folder to create")
    e.add_argument("--format", choices=FORMATS, default="parquet",
                   help="parquet (HF datasets / TRL, default), jsonl (LLaMA-Factory / "
                   "ms-swift), or dpo (preference pairs, see --dpo-style)")
    e.add_argument("--min-loss", type=float, default=DEFAULT_MIN_LOSS, metavar="POINTS",
                   help=f"dpo: pairs from moves that lost at least this many points "
                   f"(default {DEFAULT_MIN_LOSS:g})")
    e.add_argument("--dpo-style", choices=STYLES, default="trl",
                   help="dpo: the trainer's layout: trl (parquet with images, default), "
                   "llamafactory (ShareGPT jsonl, ranking dataset_info.json) or swift "
                   "(messages + rejected_response jsonl)")
    e.add_argument("--dpo-include-fallback", action="store_true",
                   help="dpo: also pair opening-book and fallback moves (a dataset built with "
                   "--include-fallback has them) as the rejected answer; by default only the "
                   "player's own moves are, since a fallback is the heuristic AI's move, not "
                   "the model's mistake")
    e.add_argument("--image-px", type=positive_int, metavar="N",
                   help="picture size for every sample (default: the image_px each recording's "
                   "player used, else the matchup default, 512)")
    e.add_argument("--prompt", type=Path, metavar="FILE",
                   help="prompt template with {placeholders} (default: the shipped one; see "
                   "docs/formats.md)")
    e.add_argument("--answer", choices=MOVE_TEXTS, default="gtp",
                   help="how the answer spells the move: gtp (Q16, default), sgf (pd) or "
                   "rowcol (3,15); a pass is 'pass'")
    e.add_argument("--shard-size", type=positive_int, default=DEFAULT_SHARD_SIZE, metavar="N",
                   help=f"samples per output shard at most (default {DEFAULT_SHARD_SIZE})")
    e.add_argument("--workers", type=positive_int, default=1, metavar="N",
                   help="processes rendering and writing (output is the same for any N)")
    e.add_argument("--force", action="store_true", help="replace an existing export at --out")
    dataset_ray.add_options(e, "render and write the chunks")
    e.set_defaults(func=run_export)


def _progress(started: float) -> Callable[[Counts], None]:
    def show(counts: Counts) -> None:
        rate = counts.games / max(time.monotonic() - started, 1e-9)
        print(f"\r{counts.games} games ({rate:.0f}/s), {counts.samples} samples",
              end="", file=sys.stderr, flush=True)
    return show


def _summary(manifest: dict, out: Path) -> str:
    c = manifest["counts"]
    rejected = ", ".join(f"{k} {n}" for k, n in c["rejected"].items()) or "none"
    skipped = ", ".join(f"{k} {n}" for k, n in c["skipped"].items()) or "none"
    excluded = ", ".join(f"{k} {n}" for k, n in c["excluded"].items() if n) or "none"
    return "\n".join([
        f"{out}: {plural(c['samples'], 'sample')} in {plural(len(manifest['shards']), 'shard')} "
        f"from {plural(c['games_kept'], 'game')} ({plural(c['files'], 'file')}, "
        f"{manifest['build']['seconds']} s)",
        f"  rejected: {rejected}",
        f"  skipped: {skipped}; void files {c['void_files']}",
        f"  positions {c['positions']}: excluded {excluded}; duplicates {c['duplicates']}; "
        f"not picked {c['not_picked']}",
        _provenance_line(manifest),
        *_labels_line(manifest.get("labels")),
    ])


def _provenance_line(manifest: dict) -> str:
    # Without a manifest every game's source is unknown by construction: counting them
    # read as a fault of the user's own recordings.
    if manifest.get("provenance_manifest") is None:
        return "  provenance: no manifest given (--source-manifest FILE records each game's " \
               "source and licence)"
    counts = manifest["counts"]["provenance"]
    return "  provenance: " + ", ".join(f"{k} {n}" for k, n in counts.items())


def _nothing(counts: Counts, out: Path) -> str:
    """The one line for a build that kept no sample."""
    found = found_line(counts.files, counts.games, counts.rejected, counts.skipped,
                       counts.void_files)
    if counts.games_kept == 0:
        return f"no usable game, nothing written to {out}: {found}"
    excluded = ", ".join(f"{k} {n}" for k, n in sorted(counts.excluded.items()) if n)
    kept = counts.games_kept
    return (f"no samples, nothing written to {out}: {found}; {plural(kept, 'game')}"
            f" kept, {counts.positions} positions: excluded {excluded or 'none'}, "
            f"duplicates {counts.duplicates}")


def _labels_line(labels: dict | None) -> list[str]:
    if labels is None:
        return []
    agreement = "n/a" if labels["agreement"] is None else f"{100 * labels['agreement']:.1f} %"
    missing = "kept" if labels["keep_missing"] else "dropped"
    return [f"  labels ({labels['target']}): {labels['labelled']} positions labelled, "
            f"{labels['missing']} without a label ({missing}; key mismatch "
            f"{labels['key_mismatch']}); played move = KataGo's in {agreement} of "
            f"{labels['samples_labelled']} labelled samples"]


def _join(args: argparse.Namespace) -> LabelJoin | None:
    if args.labels is None:
        if args.target != "played" or args.allow_missing_labels:
            raise DatasetError("--target katago and --allow-missing-labels need --labels DIR")
        return None
    return LabelJoin(LabelSet(args.labels), args.target, args.allow_missing_labels)


def _sweep(command: str, out: Path) -> None:
    """The partial folders of runs killed before they could clean up go first."""
    line = sweep_partials(out)
    if line is not None:
        print(f"{command}: {line}", file=sys.stderr)


def _say_refused(game: GameRead) -> None:
    """One line per file refused for its size (the others are counted in the summary)."""
    if game.reason == TooLarge.reason:
        print(f"dataset build: refused {game.path}: {game.detail}", file=sys.stderr)


def run_build(args: argparse.Namespace) -> int:
    started = time.monotonic()
    try:
        join = _join(args)
        options = BuildOptions(
            winner_only=args.winner_only, tactical_bias=args.tactical_bias,
            tactics_only=args.tactics_only, max_per_game=args.max_per_game,
            dedup=not args.no_dedup, include_fallback=args.include_fallback,
            min_moves=args.min_moves, seed=args.seed,
            require_provenance=args.require_provenance, shard_size=args.shard_size,
            compress=not args.no_compress, max_file_bytes=max_file_bytes(args),
        )
        _sweep("dataset build", args.out)
        with dataset_ray.reader(args) as reader:
            manifest = build(
                args.inputs, args.out, options, provenance=args.source_manifest,
                workers=args.workers, force=args.force,
                progress=_progress(started) if sys.stderr.isatty() else None, join=join,
                refuse_empty=True, reader=reader, on_rejected=_say_refused,
            )
    except EmptyDataset as exc:
        if sys.stderr.isatty():
            print(file=sys.stderr)
        print(f"dataset build: {_nothing(exc.counts, args.out)}", file=sys.stderr)
        return 2
    except (DatasetError, LabelError) as exc:
        print(f"dataset build: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"dataset build: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    if sys.stderr.isatty():
        print(file=sys.stderr)
    print(_summary(manifest, args.out))
    return 0


def run_check(args: argparse.Namespace) -> int:
    out = args.out or args.folder / "check.png"
    try:
        drawn = draw(args.folder, args.sample, args.seed)
    except DatasetError as exc:
        print(f"dataset check: {exc}", file=sys.stderr)
        return 2
    if not drawn:
        print(f"dataset check: {args.folder} has no samples", file=sys.stderr)
        return 2
    results = [check_sample(sample) for sample in drawn]
    for result in results:
        status = "ok" if result.ok else "MISMATCH"
        line = f"{status:<8} #{result.sample.index} {describe(result.sample)}"
        print(line if result.ok else f"{line}: {result.problem}")
    try:
        atomic_write(out, sheet(results))
    except OSError as exc:
        print(f"dataset check: cannot write {out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    bad = sum(not r.ok for r in results)
    print(f"{len(results) - bad}/{len(results)} samples agree with their SGF (sgfmill); "
          f"sheet: {out}")
    return 1 if bad else 0


def run_export(args: argparse.Namespace) -> int:
    try:
        options = ExportOptions(
            format=args.format, image_px=args.image_px, answer=args.answer,
            template=read_template(args.prompt),
            prompt_file=str(args.prompt) if args.prompt else None, shard_size=args.shard_size,
            min_loss=args.min_loss, dpo_style=args.dpo_style,
            dpo_include_fallback=args.dpo_include_fallback,
        )
        _sweep("dataset export", args.out)
        with dataset_ray.runner(args) as runner, ExportProgress() as progress:
            manifest = export(args.dataset, args.out, options, workers=args.workers,
                              force=args.force, progress=progress, runner=runner)
    except (DatasetError, PromptError) as exc:
        print(f"dataset export: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"dataset export: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    counts = manifest["counts"]
    sizes = ", ".join(f"{px} px {n}" for px, n in counts["image_px"].items()) or "none"
    print(f"{args.out}: {plural(counts['samples'], 'sample')} ({args.format}) in "
          f"{plural(counts['shards'], 'shard')} from {plural(counts['games'], 'game')}, "
          f"{manifest['seconds']} s; pictures: {sizes}")
    if args.format == "dpo":
        print(_pairs_line(counts, args.min_loss))
    return 0


def _pairs_line(counts: dict, min_loss: float) -> str:
    """Where a DPO export's pairs came from, and why ``chosen_loss`` is null if it is."""
    line = (f"  pairs from {counts['candidates']} samples: the played move lost at least "
            f"{min_loss:g} points and is not KataGo's")
    if counts["not_own"]:
        line += (f"; {counts['not_own']} such opening-book or fallback moves left out "
                 "(--dpo-include-fallback pairs them)")
    if counts["samples"] and not counts["chosen_loss"]:
        line += ("; chosen_loss is null in every pair: KataGo searched no move of its own "
                 "(labels at 1 visit, or not made by go19 review; go19 review --visits N, "
                 "N > 1, measures it)")
    return line
