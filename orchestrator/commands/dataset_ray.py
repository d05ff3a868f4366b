"""`go19 dataset build ... --ray [ADDRESS]`: the build's reading on Ray tasks
(:mod:`orchestrator.cluster.dataset`); everything else is the single-process build."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from orchestrator.commands import max_file_bytes
from orchestrator.dataset.shards import DatasetError
from orchestrator.export.pipeline import Runner
from orchestrator.positions.samples import GameRead

LOCAL = "local"
Reader = Callable[[Sequence[str]], Iterable[GameRead]]


def add_options(parser: argparse.ArgumentParser,
                what: str = "read and replay the files") -> None:
    parser.add_argument("--ray", nargs="?", const=LOCAL, metavar="ADDRESS",
                        help=f"{what} in Ray tasks (pip install "
                        "'go19[cluster]', docs/cluster.md): `auto` joins the running "
                        "cluster, an address joins that one, no value starts a local Ray "
                        "(write it as --ray=ADDRESS before the inputs); same dataset "
                        "(default: no Ray, --workers processes here)")


@contextmanager
def reader(args: argparse.Namespace) -> Iterator[Reader | None]:
    """The build's reader for ``--ray``, or None without it (``--workers`` then)."""
    if args.ray is None:
        yield None
        return
    from orchestrator.cluster.dataset import ray_reader
    from orchestrator.cluster.ray_session import ClusterError, ray_session

    try:
        with ray_session(None if args.ray == LOCAL else args.ray) as ray:
            yield ray_reader(ray, max_bytes=max_file_bytes(args))
    except ClusterError as exc:  # Ray missing or unreachable: one line, as bad input
        raise DatasetError(str(exc)) from None


@contextmanager
def runner(args: argparse.Namespace) -> Iterator[Runner | None]:
    """The export's runner for ``--ray`` (chunks as Ray tasks), or None without it."""
    if args.ray is None:
        yield None
        return
    from orchestrator.cluster.dataset import ray_runner
    from orchestrator.cluster.ray_session import ClusterError, ray_session

    try:
        with ray_session(None if args.ray == LOCAL else args.ray) as ray:
            yield ray_runner(ray)
    except ClusterError as exc:
        raise DatasetError(str(exc)) from None
