"""Connect to Ray once per command: ``auto`` (a running cluster), an address, or ``None``
for a local Ray started for this command and stopped with it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any


class ClusterError(Exception):
    """Ray is missing or cannot be reached; ``str()`` is one line."""


def import_ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise ClusterError("--ray needs Ray: pip install 'go19[cluster]'") from None
    return ray


def check_address(address: str | None) -> None:
    """An input folder or file taken as the address (``--ray INPUT ...``): say so."""
    if address not in (None, "auto") and Path(address).exists():
        raise ClusterError(f"--ray {address}: that is a file or folder, not a Ray address; "
                           "put --ray after the inputs or write --ray=ADDRESS")


@contextmanager
def ray_session(address: str | None, *, num_cpus: int | None = None) -> Iterator[Any]:
    """``ray`` itself, initialised; shut down on exit only if this command started it.
    A Ray already initialised in this process (a test's ``ray.init``) is used as it is."""
    check_address(address)
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    try:
        if address is None:
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
                     configure_logging=False)
        else:
            ray.init(address=address, log_to_driver=False, configure_logging=False)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = "a local Ray" if address is None else f"Ray at {address}"
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ClusterError(f"cannot start or reach {where}: {first}") from None
    try:
        yield ray
    finally:
        ray.shutdown()
