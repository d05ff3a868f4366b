"""`go19 label ... --ray [ADDRESS]`: the label command over Ray actors (one per KataGo).

Only the engines differ from the single-engine path: the games, the folder, ``--resume``,
the summary and the exit statuses are the same (:mod:`orchestrator.commands.label`).
"""

from __future__ import annotations

import argparse
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

from orchestrator.commands import positive_int

LOCAL = "local"


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number >= 0")
    return value


def add_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("Ray cluster (pip install 'go19[cluster]', docs/cluster.md)")
    group.add_argument("--ray", nargs="?", const=LOCAL, metavar="ADDRESS",
                       help="run the engines as Ray actors: `auto` joins the running cluster, "
                       "an address joins that one, no value starts a local Ray for this "
                       "command (write it as --ray=ADDRESS before the inputs; default: no "
                       "Ray, one KataGo here)")
    group.add_argument("--engines", type=positive_int, default=2, metavar="N",
                       help="KataGo engines, one Ray actor each (with --ray; default 2)")
    group.add_argument("--gpus-per-engine", type=positive_float, default=0.0, metavar="G",
                       help="GPUs Ray reserves per engine (default 0: the CPU KataGo)")
    group.add_argument("--cpus-per-engine", type=positive_float, default=1.0, metavar="C",
                       help="CPUs Ray reserves per engine (default 1)")


def run(args: argparse.Namespace) -> int:
    # Imported here: commands.label imports this module for its options.
    from orchestrator.cluster.label import ClusterOptions, RayLabelRun
    from orchestrator.cluster.label_actor import EngineSpec
    from orchestrator.cluster.ray_session import (
        ClusterError,
        check_address,
        import_ray,
        ray_session,
    )
    from orchestrator.commands.label import finish, open_folder, run_options
    from orchestrator.label.progress import PlainReporter, RichReporter

    options = run_options(args)
    given = {name: None if getattr(args, name) is None else str(Path(getattr(args, name))
                                                                  .resolve())
             for name in ("katago", "model", "config")}
    threads = None if args.gpus_per_engine else max(1, round(args.cpus_per_engine))
    spec = EngineSpec(binary=given["katago"], model=given["model"], config=given["config"],
                      log_dir=str(args.out.resolve()), opencl_threads=threads)
    cluster = ClusterOptions(engines=args.engines, gpus_per_engine=args.gpus_per_engine,
                             cpus_per_engine=args.cpus_per_engine)
    address = None if args.ray == LOCAL else args.ray
    try:
        check_address(address)
        import_ray()  # before anything is written
    except ClusterError as exc:
        print(f"label: {exc}", file=sys.stderr)
        return 2
    # Input without a game to label is refused as plain `label` refuses it: before Ray
    # starts, nothing written.
    opened = open_folder(args, options, lambda _: None, refuse_empty=True)
    if isinstance(opened, int):
        return opened
    _, games, void_files, writer = opened
    tty = sys.stderr.isatty()
    reporter = RichReporter() if tty else PlainReporter()
    label_run = RayLabelRun(writer, spec, options, cluster, reporter)

    def label() -> None:
        shown = reporter if isinstance(reporter, RichReporter) else nullcontext()
        with ray_session(address, num_cpus=None) as ray, shown:
            label_run.run(ray, games)

    def more() -> dict[str, Any]:
        return {"ray": {"address": args.ray, "engines": cluster.engines,
                        "gpus_per_engine": cluster.gpus_per_engine,
                        "cpus_per_engine": cluster.cpus_per_engine,
                        "nodes": sorted({s.node for s in label_run.slots if s.node})}}

    return finish(label, label_run, writer, options, args, games,
                  void_files, fatal=(ClusterError,), more=more)
