"""`go19 review` on a real short demo run with the CPU KataGo (the session's `reviewed`
fixture), and `go19 report` with and without its labels. The point losses are recomputed
here from the label shards and the SGF, not taken from the code under test."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from orchestrator.color import BLACK
from orchestrator.files import read_sgf_file
from orchestrator.label.store import MANIFEST, LabelSet
from orchestrator.render import point_center
from orchestrator.report.quality_pictures import KATAGO, PLAYED, PX
from orchestrator.rules.replay import replay
from tests.conftest import REPO, go19_here
from tests.label.conftest import requires_katago
from tests.polling import wait_for
from tests.review.conftest import GAMES, MOVE_CAP

pytestmark = requires_katago


def _games(run):
    return [read_sgf_file(p)[0] for p in sorted(run.glob("baduk-*.sgf"))]


def test_every_move_is_labelled_and_the_position_after_the_last(reviewed) -> None:
    manifest = json.loads((reviewed.labels / MANIFEST).read_text())
    assert manifest["settings"]["review"] is True
    assert manifest["counts"]["status"] == {"ok": GAMES}
    labels = LabelSet(reviewed.labels)
    for game in _games(reviewed.run):
        assert len(game.moves) == MOVE_CAP
        arrays = labels.game(game.sha1, 0).arrays
        assert arrays["move_number"].tolist() == list(range(1, MOVE_CAP + 2))
        final = replay(game)
        assert int(arrays["key"][-1]) == final.board.position_key(final.to_play)
        assert np.isfinite(arrays["score_lead"]).all()


def _losses_by_hand(reviewed) -> dict[str, list[float]]:
    """Each player's own moves' point loss: the mover's lead before minus after (Black's
    lead, sign flipped for White), from the label rows of move m and m + 1."""
    labels = LabelSet(reviewed.labels)
    losses: dict[str, list[float]] = {}
    for game in _games(reviewed.run):
        lead = labels.game(game.sha1, 0).arrays["score_lead"].astype(float)
        for m, move in enumerate(game.moves, 1):
            if move.source is not None:  # opening-book (or fallback) move: counted apart
                continue
            sign = 1 if move.color == BLACK else -1
            name = game.black_name if move.color == BLACK else game.white_name
            losses.setdefault(name, []).append(sign * (lead[m - 1] - lead[m]))
    return losses


def test_point_losses_and_verdict_follow_the_labels(reviewed) -> None:
    report = json.loads((reviewed.out / "report.json").read_text())
    quality = report["quality"]
    assert quality["available"] and quality["counts"]["labelled"] == GAMES
    by_hand = _losses_by_hand(reviewed)
    assert set(quality["players"]) == set(by_hand) == {"strong", "weak"}
    for name, losses in by_hand.items():
        player = quality["players"][name]
        assert player["moves"] == len(losses)
        assert player["excluded"]["opening"] == GAMES  # one of the two random plies each
        mean = np.maximum(losses, 0).mean()
        assert player["phases"]["all"]["mean_loss"]["value"] == pytest.approx(mean, abs=1e-3)
        # KaTrain's game_report at one visit: each move weighted max(0.05, min(1, loss / 4)).
        clipped = np.maximum(losses, 0)
        weight = np.clip(clipped / 4, 0.05, 1)
        katrain = 100 * 0.75 ** ((weight * clipped).sum() / weight.sum())
        assert player["phases"]["all"]["katrain_accuracy"]["value"] == pytest.approx(
            katrain, abs=1e-3)
        worst = player["worst"][0]
        assert worst["loss"] == pytest.approx(max(losses), abs=0.01)
    (pair,) = quality["head_to_head"]
    assert (pair["player"], pair["opponent"], pair["games"]) == ("strong", "weak", GAMES)
    gap = np.maximum(by_hand["weak"], 0).mean() - np.maximum(by_hand["strong"], 0).mean()
    assert pair["difference"]["value"] == pytest.approx(gap, abs=1e-3)
    # Two games are too few for an interval: said in words, never "plays better".
    assert pair["difference"]["low"] is None and pair["better"] is None
    assert pair["quality_decided"] == {"games": GAMES, "first": None, "steady": None}


def test_the_first_screen_says_who_loses_fewer_points(reviewed) -> None:
    report = json.loads((reviewed.out / "report.json").read_text())
    sentence = report["quality"]["head_to_head"][0]["sentence"]
    assert "points a move" in sentence and "over 2 games" in sentence
    md = (reviewed.out / "report.md").read_text()
    box = md.split("\n## ")[0]
    # The line says which moves it is over: here every game, the first MOVE_CAP moves.
    coverage = f"{GAMES} of {GAMES} games labelled, the first {MOVE_CAP} moves of each"
    assert f"**move quality**: {sentence.removesuffix('.')} ({coverage})." in box
    assert f"**verdicts**: quality not decided after {GAMES} labelled games; Elo" in box
    html = (reviewed.out / "report.html").read_text()
    verdict = html[html.index('<div class="verdict'):html.index("</div>")]
    assert "points a move" in verdict and coverage in verdict


def test_a_phase_holding_every_labelled_move_is_not_a_row_again(reviewed) -> None:
    """Labels of the first MOVE_CAP moves only: moves 1–50 are all the labelled moves, so
    the tables show the row (and column) of every move once, and no empty later phase."""
    md = (reviewed.out / "report.md").read_text()
    section = md.split("## Move quality")[1].split("\n## ")[0]
    assert "moves 1–50" not in section and "51–150" not in section and "151+" not in section
    players = [line for line in section.splitlines() if "| all moves |" in line]
    assert len(players) == 2  # one row each: strong, weak


def _has(image: np.ndarray, color: tuple[int, int, int]) -> bool:
    return bool((np.abs(image.astype(int) - color).sum(axis=2) < 60).any())


def test_worst_moves_are_drawn_and_linked(reviewed) -> None:
    report = json.loads((reviewed.out / "report.json").read_text())
    html = (reviewed.out / "report.html").read_text()
    for player in report["quality"]["players"].values():
        assert len(player["worst"]) == min(10, player["moves"])
        for move in player["worst"]:
            picture = reviewed.out / move["picture"]
            image = np.asarray(Image.open(picture).convert("RGB"))
            assert image.shape == (PX, PX, 3)
            assert _has(image, PLAYED)
            if move["katago_index"] != move["played_index"]:
                assert _has(image, KATAGO)
            # The red ring is around the played point.
            ys, xs = np.nonzero(np.abs(image.astype(int) - PLAYED).sum(axis=2) < 60)
            x, y = point_center(move["played_index"], 19, PX)
            assert abs(xs.mean() - x) < 2 and abs(ys.mean() - y) < 2
            assert f'src="{move["picture"]}"' in html
            sgf = Path(move["sgf"])
            assert sgf.is_file() and sgf.parent == reviewed.run.resolve()
    assert (reviewed.out / "moves" / "loss-by-move.svg").is_file()


def test_report_finds_the_run_labels_and_says_how_to_get_them(reviewed, tmp_path) -> None:
    again = go19_here("report", reviewed.run, "--out", tmp_path / "again")
    assert again.returncode == 0, again.stderr
    assert json.loads((tmp_path / "again" / "report.json").read_text())["quality"]["available"]
    bare = tmp_path / reviewed.run.name
    shutil.copytree(reviewed.run, bare, ignore=shutil.ignore_patterns("labels"))
    plain = go19_here("report", bare, "--out", tmp_path / "plain")
    assert plain.returncode == 0, plain.stderr
    quality = json.loads((tmp_path / "plain" / "report.json").read_text())["quality"]
    assert quality == {"available": False, "hint": quality["hint"]}
    box = (tmp_path / "plain" / "report.md").read_text().split("\n## ")[0]
    assert "`go19 review RUN_DIR`" in box


def test_review_again_refuses_resumes_or_reuses(reviewed, tmp_path) -> None:
    before = (reviewed.labels / MANIFEST).read_bytes()
    refused = go19_here("review", reviewed.run, "--out", tmp_path / "r1")
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1 and "--resume" in refused.stderr
    assert "Traceback" not in refused.stderr and not (tmp_path / "r1").exists()
    assert (reviewed.labels / MANIFEST).read_bytes() == before
    reused = go19_here("review", reviewed.run, "--labels", reviewed.labels, "--out",
                       tmp_path / "r2")
    assert reused.returncode == 0, reused.stderr
    resumed = go19_here("review", reviewed.run, "--resume", "--max-games", GAMES, "--max-moves",
                   MOVE_CAP, "--out", tmp_path / "r3")
    assert resumed.returncode == 0, resumed.stderr
    assert f"already labelled {GAMES}" in resumed.stdout
    nothing = go19_here("review", tmp_path, "--out", tmp_path / "r4")
    assert nothing.returncode == 2 and "not a go19 run folder" in nothing.stderr


def test_ctrl_c_while_labelling_is_one_line_and_keeps_the_folder(demo_run, tmp_path) -> None:
    run = tmp_path / demo_run.run.name
    shutil.copytree(demo_run.run, run, ignore=shutil.ignore_patterns("labels"))
    process = subprocess.Popen(
        [sys.executable, "-m", "orchestrator.cli", "review", str(run), "--out",
         str(tmp_path / "report")], cwd=REPO, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    log = run / "labels" / "katago.log"

    def answering() -> bool:  # KataGo is up and asked: the run is inside its nursery
        return log.exists() and "ready to begin handling requests" in log.read_text()

    wait_for(lambda: answering() or process.poll() is not None, "KataGo answering",
             limit=600)
    assert process.poll() is None, process.communicate()
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    assert "Traceback" not in err and err.strip().splitlines()[-1] == "interrupted"
    assert LabelSet(run / "labels").manifest["runs"][-1]["finished"] is False
    assert not (tmp_path / "report").exists()
