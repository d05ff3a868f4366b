"""One prompt on every path, proven on a real run: a real `go19 serve --engine hf` process
with `--log-requests FILE`, a real `collect` between adapter a over a GO19 port and adapter
b over the OpenAI port (`kind = "openai"`), then `dataset build` and `dataset export` of
its recordings. For every exported position the log must hold a request whose picture is
the export's PNG (sha256 of the bytes received) and whose prompt is, byte for byte, the
text the processor makes of the export's own sample (its chat template applied to the
export's user turn): what the model was given when it played is what it trains on.

The games start from the first 120 moves of real professional games, with captures in
them, so the board's stone count is not the move number (what the GO19 port used to
write), and the run's komi is not the server's."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from orchestrator.collect.run import CollectOptions, collect
from orchestrator.dataset import BuildOptions, build
from orchestrator.export.pipeline import ExportOptions, export
from orchestrator.recordings import JOURNAL, read_journal
from tests.conftest import REAL_SGF
from tests.vlm.serve_process import serve_process
from tests.vlm.tiny import Tiny

SERVING = re.compile(r"serving GO19 on \S+ \(a\); OpenAI API on (\S+)$")
MATCHUP = """
[run]
name = "prompts"
seed = 11
[players.a]
kind = "go19"
replicas = ["{go19}"]
slots = 2
[players.b]
kind = "openai"
base_urls = ["{url}"]
model = "b"
slots = 2
constrain = "choice"
[pairing]
black = "a"
white = "b"
alternate_colors = true
[game]
size = 19
komi = {komi}
move_cap = {move_cap}
move_timeout_s = 120
concurrency = 2
[openings]
sgf_dir = "{openings}"
plies = {plies}
"""


def differences(log: Path, export_dir: Path, run_dir: Path, processor
                ) -> tuple[int, int, Counter]:
    """(positions whose picture and prompt no request of their player matches, positions,
    what differed: "prompt of a" for a picture adapter a was asked with another text,
    "picture of a" for a picture adapter a never received). Players are named as their
    adapters."""
    asked: dict[tuple[str, str], set[str]] = {}
    for line in log.read_text().splitlines():
        request = json.loads(line)
        asked.setdefault((request["adapter"], request["image_sha256"]), set()).add(
            request["prompt"])
    # the export names a game's SGF by its run folder and file: "RUN/baduk-….sgf"
    players = {f"{run_dir.name}/{record.sgf}": {1: record.black, 2: record.white}
               for record in read_journal(run_dir / JOURNAL).records}
    wrong: Counter = Counter()
    positions = 0
    for data in sorted((export_dir / "data").glob("*.jsonl")):
        for line in data.read_text().splitlines():
            sample = json.loads(line)
            positions += 1
            player = players[sample["sgf"]][sample["to_play"]]
            png = (export_dir / sample["images"][0]).read_bytes()
            text = sample["messages"][0]["content"].removeprefix("<image>")
            expected = processor.apply_chat_template(
                [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}],
                add_generation_prompt=True, tokenize=False)
            prompts = asked.get((player, hashlib.sha256(png).hexdigest()))
            if prompts is None:
                wrong[f"picture of {player}"] += 1
            elif expected not in prompts:
                wrong[f"prompt of {player}"] += 1
    return sum(wrong.values()), positions, wrong


async def run_and_export(tiny: Tiny, tmp_path: Path, *, games: int, plies: int,
                         move_cap: int, komi: float = 2.5, server_args: tuple[str, ...] = ()
                         ) -> tuple[Path, Path, Path]:
    """The request log, the export and the run folder of a real run."""
    log = tmp_path / "requests.jsonl"
    args = ["--engine", "hf", "--model", str(tiny.model), "--adapter", f"a={tiny.adapter('a')}",
            "--adapter", f"b={tiny.adapter('b')}", "--listen", "a=:0", "--openai", ":0",
            "--constrain", "legal", "--log-requests", str(log), "--device", "cpu",
            "--threads", "1", "--quiet", "--summary-s", "0", *server_args]
    with serve_process(args, tmp_path / "stderr.txt") as (_, lines):
        match = SERVING.match(lines[-1])
        assert match, lines
        go19 = lines[-1].split()[3]
        matchup = tmp_path / "prompts.toml"
        matchup.write_text(MATCHUP.format(go19=go19, url=match.group(1), komi=komi,
                                          move_cap=move_cap, plies=plies,
                                          openings=REAL_SGF / "pro19"))
        summary = await collect(CollectOptions(matchup, games=games, recordings=tmp_path / "rec",
                                               dashboard=False), lambda event: None,
                                preflight_log=lambda line: None)
        assert summary.exit_code == 0 and summary.state.done == games
    build([summary.run_dir], tmp_path / "dataset", BuildOptions(dedup=False))
    export(tmp_path / "dataset", tmp_path / "export", ExportOptions(format="jsonl"))
    return log, tmp_path / "export", summary.run_dir


@pytest.fixture(scope="module")
def processor(tiny: Tiny):
    from transformers import AutoProcessor

    return AutoProcessor.from_pretrained(tiny.model, local_files_only=True)


async def test_every_position_was_asked_what_the_export_wrote(tiny: Tiny, processor,
                                                              tmp_path) -> None:
    log, export_dir, run_dir = await run_and_export(tiny, tmp_path, games=4, plies=120,
                                                    move_cap=144)
    different, positions, what = differences(log, export_dir, run_dir, processor)
    assert positions >= 80
    assert different == 0, f"{different} of {positions} positions differ: {dict(what)}"
    # The run is one the old guesses get wrong: captures (stones + 1 is not the move
    # number) and a komi that is not the server's.
    moved = [json.loads(line) for data in (export_dir / "data").glob("*.jsonl")
             for line in data.read_text().splitlines()]
    from orchestrator.dataset import load

    boards = load(tmp_path / "dataset")["board"]
    assert any(np.count_nonzero(board) + 1 != sample["move_number"]
               for board, sample in zip(boards, moved, strict=True))
    for line in log.read_text().splitlines():  # every line says what the issue asks
        request = json.loads(line)
        assert request["adapter"] in ("a", "b") and request["ms"] > 0
        assert request["answer"] and len(request["image_sha256"]) == 64


async def test_the_play_pages_vlm_seat_asks_what_the_export_of_its_game_writes(
        tiny: Tiny, processor, tmp_path) -> None:
    """The third path: `go19 play`'s VLM seat (a human against adapter a over GO19, the
    training save on), then the saved game exported. Every position the seat was asked
    about was asked with the export's picture and prompt."""
    import trio

    from orchestrator.coords import from_gtp
    from orchestrator.web.session import PlaySession

    log = tmp_path / "requests.jsonl"
    args = ["--engine", "hf", "--model", str(tiny.model), "--adapter", f"a={tiny.adapter('a')}",
            "--listen", "a=127.0.0.1:0", "--constrain", "legal", "--log-requests", str(log),
            "--device", "cpu",
            "--threads", "1", "--quiet", "--summary-s", "0"]
    with serve_process(args, tmp_path / "stderr.txt") as (_, lines):
        port = int(lines[-1].split()[3].rsplit(":", 1)[1])
        async with trio.open_nursery() as nursery:
            session = PlaySession(nursery, tmp_path / "play")
            session.handle({"type": "new", "settings": {
                "mode": "hv", "color": "black", "host1": "127.0.0.1", "port1": port,
                "host2": "", "port2": None, "timeout": 120, "komi": 2.5, "training": True,
                "auto_restart": False, "auto_reconnect1": False, "auto_reconnect2": False}})

            async def until(ready) -> None:
                with trio.fail_after(300):
                    while not ready():
                        await session.pulse.wait(session.pulse.version)

            for number in (1, 2, 3):
                await until(lambda: session.waiting_human)
                game = session.live.game  # a free point: the seat's fallbacks take some
                point = next(from_gtp(v, 19) for v in ("Q16", "C3", "R4", "K10", "F17")
                             if game.board.is_legal(game.to_play, from_gtp(v, 19)))
                session.handle({"type": "click", "point": point})
                await until(lambda n=number: session.live.game.move_number >= 2 * n
                            and session.waiting_human)
            session.handle({"type": "resign"})
            await until(lambda: bool(session.saved))
            nursery.cancel_scope.cancel()
    (saved,) = session.saved
    build([saved.parent], tmp_path / "dataset", BuildOptions(dedup=False))
    export(tmp_path / "dataset", tmp_path / "export", ExportOptions(format="jsonl"))
    asked = {}
    for line in log.read_text().splitlines():
        request = json.loads(line)
        asked.setdefault(request["image_sha256"], set()).add(request["prompt"])
    seat_positions = 0
    for data in sorted((tmp_path / "export" / "data").glob("*.jsonl")):
        for line in data.read_text().splitlines():
            sample = json.loads(line)
            if sample["to_play"] != 2:  # the human's positions: nobody was asked
                continue
            seat_positions += 1
            png = (tmp_path / "export" / sample["images"][0]).read_bytes()
            text = sample["messages"][0]["content"].removeprefix("<image>")
            expected = processor.apply_chat_template(
                [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": text}]}],
                add_generation_prompt=True, tokenize=False)
            assert expected in asked.get(hashlib.sha256(png).hexdigest(), set()), sample["sgf"]
    assert seat_positions == 3 and len(asked) == 3
