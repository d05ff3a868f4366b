"""Training datasets from recorded and collected games: ``go19 dataset build`` and
``go19 dataset check``. Read a built dataset with :func:`load` (every field as one
array) or :func:`iter_shards` (shard by shard); both verify each shard's sha256."""

from orchestrator.dataset.build import BuildOptions, Counts, Stage, build
from orchestrator.dataset.shards import (
    FIELDS,
    DatasetError,
    GameTableRow,
    iter_shards,
    load,
    load_games,
    read_manifest,
)
from orchestrator.positions.rows import Positions
from orchestrator.positions.samples import GameRead

__all__ = [
    "FIELDS", "BuildOptions", "Counts", "DatasetError", "GameRead", "GameTableRow",
    "Positions", "Stage",
    "build", "iter_shards", "load", "load_games", "read_manifest",
]
