"""Bad recordings give one warning line naming the file (and line) and the rest of the
report; bad command lines give one error line and a non-zero exit, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import go19_here
from tests.report.synth import Game, journal_line, report_json, sgf_text, write_run

PLAYERS = {"alpha": {"kind": "heuristic"}, "beta": {"kind": "random"}}


def three_games(tmp_path: Path) -> Path:
    games = [Game(1, "alpha", "beta", "black"), Game(2, "beta", "alpha", "white"),
             Game(3, "alpha", "beta", "white")]
    return write_run(tmp_path / "rec", "bad-20260101-000000", games, PLAYERS, ("alpha", "beta"))




def test_unparseable_lines_are_skipped_with_file_and_line(tmp_path: Path, capsys) -> None:
    run_dir = three_games(tmp_path)
    journal = run_dir / "games.jsonl"
    lines = journal.read_text().splitlines()
    incomplete = json.loads(lines[2])
    del incomplete["winner"]
    journal.write_text("\n".join([lines[0], "{cut short by a kill", lines[1],
                                  json.dumps(incomplete)]) + "\n")
    # game 3's line lacks its winner; its SGF (hand-written, no GOXIXREC record) cannot
    # stand in for it, so game 3 is left out with a warning of its own
    report = report_json([run_dir], tmp_path / "out")
    assert report["totals"]["games"] == 2
    err = capsys.readouterr().err.splitlines()
    assert f"report: warning: {journal}:2: not valid JSON; line skipped" in err
    assert f"report: warning: {journal}:4: winner: Field required; line skipped" in err
    assert any(w.startswith(f"{run_dir / Game(3, 'a', 'b', None).sgf_name}: no games.jsonl "
                            "line and no GOXIXREC record") for w in report["warnings"])
    assert len(err) == len(report["warnings"]) == 3


def test_missing_sgf_warns_and_estimates_moves_asked(tmp_path: Path, capsys) -> None:
    run_dir = three_games(tmp_path)
    (run_dir / Game(2, "a", "b", None).sgf_name).unlink()
    report = report_json([run_dir], tmp_path / "out")
    assert report["totals"]["games"] == 3  # the journal line still counts
    (warning,) = capsys.readouterr().err.splitlines()
    assert warning.startswith(f"report: warning: {run_dir / 'games.jsonl'}:2: game 2: SGF ")
    assert "is missing" in warning
    # six plies, no book: three asked of each side in every game, estimated or read
    assert report["players"]["alpha"]["moves_asked"] == 9
    assert report["players"]["alpha"]["moves_asked_estimated_games"] == 1
    assert "1 games without SGF" in (tmp_path / "out" / "report.md").read_text()


def test_sgf_without_journal_line_is_rebuilt_from_its_record(tmp_path: Path) -> None:
    run_dir = three_games(tmp_path)
    extra = Game(4, "beta", "alpha", "black")
    record = journal_line("bad-20260101-000000", extra, PLAYERS)
    text = sgf_text(extra).replace(
        "RE[", "GOXIXREC[" + json.dumps(record).replace("]", "\\]") + "]RE[", 1)
    (run_dir / extra.sgf_name).write_text(text)
    report = report_json([run_dir], tmp_path / "out")
    assert report["totals"]["games"] == 4
    # beta won game 3 (as White) and the rebuilt game 4 (as Black)
    assert report["players"]["beta"]["as_black"]["wins"] == 1
    assert report["players"]["beta"]["results"]["wins"] == 2
    assert any("no games.jsonl line; using the record in the SGF" in w
               for w in report["warnings"])


def test_folders_that_are_not_runs_are_skipped(tmp_path: Path) -> None:
    run_dir = three_games(tmp_path)
    (tmp_path / "notes").mkdir()
    result = go19_here("report", run_dir, tmp_path / "notes", tmp_path / "nowhere",
                       "--out", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert (f"report: warning: skipping {tmp_path / 'notes'}: not a go19 run folder "
            "(no run.json or games.jsonl)") in result.stderr.splitlines()
    assert f"report: warning: skipping {tmp_path / 'nowhere'}: no such folder" in result.stderr
    assert json.loads((tmp_path / "out" / "report.json").read_text())["totals"]["games"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["{tmp}/notes"], "report: no go19 run folders given"),
        (["{run}", "--anchor", "gnugo"], "expected PLAYER=ELO"),
        (["{run}", "--anchor", "nobody=0"], "report: --anchor: anchor 'nobody' played no games"),
    ],
)
def test_command_line_errors_are_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    run_dir = three_games(tmp_path)
    (tmp_path / "notes").mkdir()
    args = [a.format(tmp=tmp_path, run=run_dir) for a in args]
    result = go19_here("report", *args, "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "report.json").exists()


def test_default_out_folder_is_reports_run_name(tmp_path: Path) -> None:
    run_dir = three_games(tmp_path)
    result = go19_here("report", run_dir, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "reports" / run_dir.name / "report.html").is_file()
    assert "alpha vs beta" in result.stdout


def test_deep_json_in_labels_and_run_files_is_one_warning_each(tmp_path: Path) -> None:
    """200 KB of ``[`` in a label folder's labels.json and in run.json: the standard
    library's reader raised RecursionError (a 37-line traceback); now one line each and
    the report of the games."""
    run_dir = three_games(tmp_path)
    labels = tmp_path / "labels"
    labels.mkdir()
    (labels / "labels.json").write_bytes(b"[" * 200_000)
    (run_dir / "run.json").write_bytes(b"[" * 200_000)
    result = go19_here("report", run_dir, "--labels", labels, "--out", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    deep = [line for line in result.stderr.splitlines() if "nested deeper than 200" in line]
    assert [line.split(": ")[1] for line in deep] == ["warning"] * 2, result.stderr
    assert json.loads((tmp_path / "out" / "report.json").read_text())["totals"]["games"] == 3
