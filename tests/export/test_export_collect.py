"""The model trains on what it plays on: a real `collect` run over loopback, against a
real `go19 serve` (the heuristic engine) behind a recording relay, then `dataset build`
and `dataset export` of its recordings. Every exported picture must be, byte for byte,
a PNG the server received for that position, at the size that player's matchup entry
gave (no --image-px): the export reads it from the game's own record (the players'
``render`` settings), so the SGFs moved out of their run folder keep it, and recordings
made before the record carried it still get it from the run's run.json.

The relay reads the GO19 request frames with its own few lines of parsing (the layout in
docs/DESIGN.md), not with go19's codec, and passes every byte on unchanged both ways.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
from pathlib import Path

import pytest
import trio

from orchestrator.collect.run import CollectOptions, collect
from orchestrator.dataset import build, load, load_games
from orchestrator.export.pipeline import ExportOptions, export
from orchestrator.players.heuristic import HeuristicPlayer
from orchestrator.serve import serve_go19
from tests.export.export_checks import decode, orientation_faults, parquet_rows

pytest.importorskip("pyarrow", reason="pyarrow (the `export` extra) not installed")

MATCHUP = """
[run]
name = "export"
seed = 3
[players.big]
kind = "go19"
replicas = ["127.0.0.1:{port}"]
slots = 2
image_px = 160
[players.small]
kind = "go19"
replicas = ["127.0.0.1:{port}"]
slots = 2
image_px = 128
[pairing]
black = "big"
white = "small"
alternate_colors = true
[game]
size = 19
komi = 6.5
move_cap = 40
move_timeout_s = 30
concurrency = 2
"""

# (board bytes, side to move) -> the PNGs the server was sent for that position.
Seen = dict[tuple[bytes, int], set[bytes]]


def _requests(buffer: bytearray, seen: Seen) -> None:
    """Take every whole frame off the front of ``buffer``; record the requests."""
    while len(buffer) >= 4:
        if buffer[:4] == b"PING":
            del buffer[:4]
            continue
        if len(buffer) < 8:
            return
        (length,) = struct.unpack(">I", buffer[4:8])
        if len(buffer) < 8 + length:
            return
        body = bytes(buffer[8:8 + length])
        del buffer[:8 + length]
        size, side, png_len = body[0], body[1], struct.unpack(">I", body[2:6])[0]
        png, board = body[6:6 + png_len], body[6 + png_len:]
        assert len(board) == size * size
        seen.setdefault((board, side), set()).add(png)


async def relay(server_port: int, seen: Seen, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    async def handle(client: trio.SocketStream) -> None:
        async with client, await trio.open_tcp_stream("127.0.0.1", server_port) as server:
            async def upstream() -> None:
                buffer = bytearray()
                while data := await client.receive_some(65536):
                    buffer += data
                    _requests(buffer, seen)
                    await server.send_all(data)
                await server.send_eof()

            async def downstream() -> None:
                while data := await server.receive_some(65536):
                    await client.send_all(data)
                nursery.cancel_scope.cancel()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(upstream)
                nursery.start_soon(downstream)

    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    task_status.started(listeners[0].socket.getsockname()[1])
    await trio.serve_listeners(handle, listeners)


def _without_render(text: str) -> str:
    """An SGF as go19 wrote it before the players' metadata carried ``render``."""
    return re.sub(r',"render":\{[^{}]*\}', "", text)


async def test_exported_pictures_are_what_serve_received(tmp_path: Path) -> None:
    seen: Seen = {}
    async with trio.open_nursery() as nursery:
        server_port = await nursery.start(serve_go19, HeuristicPlayer("engine", seed=1, level=1),
                                          "127.0.0.1", 0)
        port = await nursery.start(relay, server_port, seen)
        matchup = tmp_path / "export.toml"
        matchup.write_text(MATCHUP.format(port=port))
        summary = await collect(CollectOptions(matchup, games=2, recordings=tmp_path / "rec",
                                               dashboard=False))
        nursery.cancel_scope.cancel()
    assert summary.state.done == 2
    sgfs = sorted(summary.run_dir.glob("*.sgf"))
    assert all('"render":{"image_px":160,"mark_last":true}' in p.read_text() for p in sgfs)

    # Moved out of the run folder (no run.json beside them), and as an older go19 wrote
    # them (no render settings, run.json beside them): the same pictures.
    moved, legacy = tmp_path / "moved", tmp_path / "legacy"
    moved.mkdir()
    for path in sgfs:
        shutil.copy(path, moved / path.name)
    shutil.copytree(summary.run_dir, legacy)
    for path in legacy.glob("*.sgf"):
        path.write_text(_without_render(path.read_text()))
    assert '"image_px": 160' in json.dumps(json.loads((legacy / "run.json").read_text()))

    sizes = {"big": 160, "small": 128}
    pictures = []
    for source, origin in ((moved, "record"), (legacy, "run")):
        ds, ex = tmp_path / f"ds-{source.name}", tmp_path / f"ex-{source.name}"
        await trio.to_thread.run_sync(build, [source], ds)
        manifest = await trio.to_thread.run_sync(export, ds, ex, ExportOptions())
        data = load(ds)
        rows = parquet_rows(ex)
        assert len(rows) == len(data["move"]) > 40
        games = load_games(ds)
        for i, row in enumerate(rows):
            board, side = data["board"][i], int(data["to_play"][i])
            png = row["image"]["bytes"]
            assert png in seen[(board.tobytes(), side)], f"sample {i}: not a PNG the server got"
            game = games[row["game"]]
            player = game.black if side == 1 else game.white
            assert row["image_px"] == sizes[player] == decode(png).shape[0]
            # A few stones, not the last move: at 128 px its red dot covers most of the stone.
            stones = [int(q) for q in board.reshape(-1).nonzero()[0]
                      if q != row["last_move"]][:12]
            assert orientation_faults(decode(png), board, stones) == []
        assert manifest["counts"]["image_px_from"] == {origin: len(rows)}
        assert set(manifest["counts"]["image_px"]) == {"128", "160"}
        pictures.append([row["image"]["bytes"] for row in rows])
    assert pictures[0] == pictures[1]

