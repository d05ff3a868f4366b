"""`go19 label ... --ray [ADDRESS]` (also `go19 review`'s): the options of the label job over
Ray actors, one per KataGo (:mod:`orchestrator.cluster.label_job`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from orchestrator.commands import positive_int

if TYPE_CHECKING:
    from orchestrator.cluster.label_job import RayJob

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


def ray_job(args: argparse.Namespace) -> RayJob | None:
    """Where ``--ray`` runs the engines, or None without it (the cluster package is
    imported only then)."""
    if args.ray is None:
        return None
    from orchestrator.cluster.label import ClusterOptions
    from orchestrator.cluster.label_job import RayJob

    return RayJob(None if args.ray == LOCAL else args.ray,
                  ClusterOptions(engines=args.engines, gpus_per_engine=args.gpus_per_engine,
                                 cpus_per_engine=args.cpus_per_engine))
