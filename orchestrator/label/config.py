"""The two files KataGo reads besides its net: the analysis config and the OpenCL tuning.

Decisions written into the config (docs in :mod:`orchestrator.label.engine`):

- ``reportAnalysisWinratesAs = BLACK``: every winrate and scoreLead is Black's, whoever is
  to move, so a label never depends on KataGo's idea of the side to move.
- ``nnRandomize = false``: the net always sees the board as it is (no random symmetry), so
  the same position gives the same policy on every run; labels are reproducible.
- ``maxVisits = 1``: only a query that names no ``maxVisits`` uses it; our client always
  names one. One visit is the raw policy, the only affordable setting on a CPU.
- ``openclTunerFile``: KataGo loads this file as it is, whatever its name, and never
  autotunes (on pocl, autotuning takes about 8 minutes and then crashes).
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import orchestrator
from orchestrator.files import atomic_write

PREPARED = ".katago"  # the folder `make katago` prepares, in the repository
TUNER_RESOURCE = "opencl-tune-cpu.txt"
MODEL_NAME = "b10c384h6nbttflrs.bin.gz"
KATAGO_VERSION = "1.18.1"


@dataclass(frozen=True, slots=True)
class KataGoPaths:
    """Where ``make katago`` puts things (``.katago/`` in the repository by default)."""

    root: Path

    @property
    def binary(self) -> Path:
        return self.root / "katago"  # a link to the unpacked AppImage's AppRun

    @property
    def unpacked(self) -> Path:
        return self.root / f"katago-{KATAGO_VERSION}"

    @property
    def model(self) -> Path:
        return self.root / MODEL_NAME

    @property
    def config(self) -> Path:
        return self.root / "analysis.cfg"

    @property
    def tuner(self) -> Path:
        return self.root / TUNER_RESOURCE

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def missing(self) -> list[Path]:
        """What a prepared KataGo needs and is not there."""
        return [p for p in (self.binary, self.model, self.config, self.tuner) if not p.is_file()]


def prepared_katago() -> KataGoPaths | None:
    """The KataGo ``make katago`` prepared: in the working folder, else in the repository
    this package lives in (on a Ray node, that node's)."""
    for root in (Path.cwd() / PREPARED, Path(orchestrator.__file__).resolve().parents[1]
                 / PREPARED):
        paths = KataGoPaths(root.resolve())
        if not paths.missing():
            return paths
    return None


@dataclass(frozen=True, slots=True)
class AnalysisSettings:
    num_analysis_threads: int = 2  # positions searched at once
    num_search_threads: int = 1  # threads per position; 1 keeps every search deterministic
    max_visits: int = 1
    nn_cache_power_of_two: int = 16  # 65k cached evaluations, a few hundred MB at most


def tuner_parameters() -> str:
    """KataGo's default OpenCL tuning (format VERSION=13), valid for any OpenCL device."""
    return resources.files(__package__).joinpath(TUNER_RESOURCE).read_text(encoding="utf-8")


def render_config(
    tuner_file: Path, log_file: Path, settings: AnalysisSettings = AnalysisSettings()
) -> str:
    s = settings
    lines = [
        "# KataGo analysis-engine config written by go19 (orchestrator/label/config.py).",
        "# `make katago` rewrites it; open_katago() overrides logFile per run.",
        f"logFile = {log_file.resolve()}",
        "logToStderr = false",
        "logAllRequests = false",
        "logAllResponses = false",
        "logSearchInfo = false",
        "reportAnalysisWinratesAs = BLACK",
        f"maxVisits = {s.max_visits}",
        f"numAnalysisThreads = {s.num_analysis_threads}",
        f"numSearchThreadsPerAnalysisThread = {s.num_search_threads}",
        f"nnMaxBatchSize = {s.num_analysis_threads * s.num_search_threads}",
        f"nnCacheSizePowerOfTwo = {s.nn_cache_power_of_two}",
        f"nnMutexPoolSizePowerOfTwo = {min(s.nn_cache_power_of_two, 12)}",
        "nnRandomize = false",
        f"openclTunerFile = {tuner_file.resolve()}",
        "openclUseFP16 = false",
    ]
    return "\n".join(lines) + "\n"


def write_katago_files(paths: KataGoPaths, settings: AnalysisSettings = AnalysisSettings()) -> None:
    """Write the analysis config and the tuning file it names."""
    for path, text in (
        (paths.tuner, tuner_parameters()),
        (paths.config, render_config(paths.tuner, paths.logs / "analysis.log", settings)),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode("utf-8"))
