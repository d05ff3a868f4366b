"""The files go19 writes for KataGo: the analysis config and the OpenCL tuning it names."""

from __future__ import annotations

import pytest

from orchestrator.label.config import (
    AnalysisSettings,
    KataGoPaths,
    render_config,
    tuner_parameters,
    write_katago_files,
)
from orchestrator.label.setup import katago_present
from tests.conftest import SHARED

SHARED_TUNING = SHARED / "katago" / "opencl-tune-cpu.txt"


def _settings(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines()
             if line.strip() and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


@pytest.mark.skipif(not SHARED_TUNING.is_file(), reason=f"{SHARED_TUNING} not found")
def test_packaged_tuning_is_the_measured_one():
    assert tuner_parameters() == SHARED_TUNING.read_text()


def test_tuning_covers_every_kernel_katago_tunes():
    text = tuner_parameters()
    assert text.startswith("VERSION=13\n")
    for section in ("#xGemmDirect", "#xGemm", "#conv3x3", "#gPool", "#transformer",
                    "#transformerRMSNorm"):
        assert section + "\n" in text


def test_config_pins_perspective_fp32_tuning_and_threads(tmp_path):
    text = render_config(tmp_path / "t.txt", tmp_path / "logs" / "a.log",
                         AnalysisSettings(num_analysis_threads=3, max_visits=8))
    settings = _settings(text)
    assert settings["reportAnalysisWinratesAs"] == "BLACK"
    assert settings["openclUseFP16"] == "false"
    assert settings["openclTunerFile"] == str(tmp_path / "t.txt")
    assert settings["logFile"] == str(tmp_path / "logs" / "a.log")
    assert settings["nnRandomize"] == "false"
    assert (settings["numAnalysisThreads"], settings["numSearchThreadsPerAnalysisThread"],
            settings["nnMaxBatchSize"], settings["maxVisits"]) == ("3", "1", "3", "8")


def test_written_files_leave_only_binary_and_model_missing(tmp_path):
    paths = KataGoPaths(tmp_path / ".katago")
    write_katago_files(paths)
    assert paths.tuner.read_text() == tuner_parameters()
    assert _settings(paths.config.read_text())["openclTunerFile"] == str(paths.tuner)
    assert paths.missing() == [paths.binary, paths.model]
    assert not katago_present(paths)
