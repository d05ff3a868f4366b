"""What a dataset build is asked for (:class:`BuildOptions`), checked as it is made: read
by the build (:mod:`.build`) and by the selection of its rows (:mod:`.selection`)."""

from __future__ import annotations

from dataclasses import dataclass

from orchestrator.dataset.shards import DatasetError
from orchestrator.files import MAX_SGF_BYTES

SHARD_SIZE = 1 << 16


@dataclass(frozen=True)
class BuildOptions:
    winner_only: bool = False
    tactical_bias: bool = False
    tactics_only: bool = False
    max_per_game: int | None = None
    dedup: bool = True
    include_fallback: bool = False
    min_moves: int = 0
    seed: int = 0
    require_provenance: bool = False
    shard_size: int = SHARD_SIZE
    compress: bool = True  # deflated shards: ~25x smaller, a few % slower to build
    max_file_bytes: int | None = MAX_SGF_BYTES  # a file over it is rejected unread

    def __post_init__(self) -> None:
        if self.max_per_game is not None and self.max_per_game < 1:
            raise DatasetError(f"max_per_game must be at least 1, not {self.max_per_game}")
        if self.tactical_bias and self.max_per_game is None:
            raise DatasetError("tactical_bias needs max_per_game (it decides which to pick)")
        if self.min_moves < 0 or self.shard_size < 1:
            raise DatasetError("min_moves must be >= 0 and shard_size >= 1")
