"""Any GTP engine (GNU Go, KataGo's GTP mode, ...) as a player, run as a child
process with ``trio.lowlevel.open_process``.

The engine keeps its own board, so the player remembers what it has told it:
the game, the setup stones, and every move the engine's board holds (including
the engine's own answers). Each ``genmove`` sends only what is new; a different
game, or one that no longer starts with what was sent (fewer moves, or the
referee played a fallback instead of the engine's answer), gets
``boardsize``/``komi``/``clear_board`` and a full replay.

Every command carries an id (``7 genmove black``) and its reply must echo it
(``=7 D4`` or ``?7 message``, ended by an empty line), so a reply is matched to its
command: one that carries another id or none (a stray or repeated reply) is never
taken as the answer. One request at a time: a request that is cancelled (the
referee's deadline) leaves a reply in flight, so the engine is killed and started
afresh on next use, as it is after any other broken exchange: a reply that is not
GTP, carries the wrong id, or answers a genmove with something that is not a move.
The engine's stderr goes to ``stderr_log`` (appended) or nowhere, never to our own
output.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import BinaryIO

import trio

from orchestrator.color import BLACK, WHITE
from orchestrator.coords import CoordinateError, from_gtp, to_gtp
from orchestrator.players.base import (
    RESIGN,
    Answer,
    EngineDied,
    ProtocolViolation,
    RefusedMove,
    answered,
)
from orchestrator.rules.game import Game, Move

COLOR_WORDS = {BLACK: "black", WHITE: "white"}
# A reply longer than this is not a GTP engine talking.
MAX_REPLY_BYTES = 1 << 20
# How long `quit` may take before the engine is killed, in seconds.
QUIT_GRACE = 2.0
# How long to wait for an exit status once the engine's output has ended.
EXIT_GRACE = 1.0
# "=12 text" / "?12 text": the status, the echoed id (absent when the engine sent none)
# and the text (GTP allows a single space or a newline after the id).
_REPLY_RE = re.compile(r"([=?])(\d*)(.*)", re.S)


class GtpPlayer:
    def __init__(
        self, name: str, command: list[str] | str, stderr_log: Path | None = None
    ) -> None:
        self.name = name
        self.argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not self.argv:
            raise ValueError(f"GTP player {name!r}: empty engine command")
        self.stderr_log = stderr_log
        self._process: trio.Process | None = None
        self._buffer = bytearray()
        self._ids = 0  # the id of the last command sent to this process
        # True only while a live engine has no exchange half done.
        self._clean = False
        # What the engine's board holds; _game is None until a replay completes.
        self._game: Game | None = None
        self._sent_setup: list[Move] = []
        self._sent: list[Move] = []
        # One exchange at a time, even if a caller shares the player between tasks.
        self._lock = trio.Lock()

    async def answer(self, game: Game, number: int = 0,
                     picture: bytes | None = None) -> Answer:
        return await answered(self.genmove(game))

    async def genmove(self, game: Game) -> int:
        """GTP's ``genmove`` for the position: the point, or the fault raised."""
        async with self._lock:
            return await self._genmove(game)

    async def _genmove(self, game: Game) -> int:
        await self._ensure_engine()
        await self._sync(game)
        color = game.to_play
        command = f"genmove {COLOR_WORDS[color]}"
        answer = (await self._command(command)).strip()
        if answer.lower() == "resign":
            return RESIGN
        try:
            point = from_gtp(answer, game.size)
        except CoordinateError as exc:
            # Not a move: whatever the engine is doing, it is not answering this genmove,
            # and what it sends next might be read as the next answer. A fresh engine.
            self._clean = False
            raise ProtocolViolation(
                f"GTP engine {self.name!r} answered {answer!r} to {command!r}: {exc}"
            ) from None
        self._sent.append(Move(color, point))
        return point

    async def aclose(self) -> None:
        """Ask the engine to quit, then kill it if it has not exited in time."""
        process, clean = self._process, self._clean
        self._forget()
        if process is None:
            return
        with trio.CancelScope(shield=True):
            if clean:
                with trio.move_on_after(QUIT_GRACE):
                    try:
                        await _pipes(process)[0].send_all(b"quit\n")
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        pass
                    await process.wait()
            await _reap(process)

    # -- keeping the engine's board in step ---------------------------------

    async def _sync(self, game: Game) -> None:
        sent = len(self._sent)
        if (
            game is not self._game
            or game.setup_stones != self._sent_setup
            or game.moves[:sent] != self._sent
        ):
            self._game = None
            self._sent = []
            await self._command(f"boardsize {game.size}")
            await self._command(f"komi {game.komi:g}")
            await self._command("clear_board")
            for stone in game.setup_stones:
                await self._play(stone, game.size)
            self._sent_setup = list(game.setup_stones)
            self._game = game
        for move in game.moves[len(self._sent):]:
            await self._play(move, game.size)
            self._sent.append(move)

    async def _play(self, move: Move, size: int) -> None:
        await self._command(f"play {COLOR_WORDS[move.color]} {to_gtp(move.point, size)}")

    # -- the process and the wire --------------------------------------------

    async def _ensure_engine(self) -> None:
        if self._process is not None and not self._clean:
            process = self._process
            self._forget()
            with trio.CancelScope(shield=True):
                await _reap(process)
        if self._process is None:
            await self._spawn()

    async def _spawn(self) -> None:
        log: BinaryIO | None = None
        try:
            if self.stderr_log is not None:
                # The child gets its own copy of the descriptor; ours closes below.
                log = open(self.stderr_log, "ab")
            self._process = await trio.lowlevel.open_process(
                self.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log if log is not None else subprocess.DEVNULL,
            )
        except OSError as exc:
            raise EngineDied(
                f"GTP engine {self.name!r}: cannot start {shlex.join(self.argv)}: {exc}"
            ) from None
        finally:
            if log is not None:
                log.close()
        self._buffer.clear()
        self._ids = 0
        self._clean = True

    def _forget(self) -> None:
        """Drop the process and everything its board held."""
        self._process = None
        self._clean = False
        self._game = None
        self._sent = []
        self._sent_setup = []

    async def _command(self, command: str) -> str:
        """Send one command and return the text of its ``=`` reply."""
        process = self._process
        assert process is not None and self._clean, "one GTP request at a time"
        self._clean = False
        self._ids += 1
        ident = str(self._ids)
        try:
            await _pipes(process)[0].send_all(f"{ident} {command}\n".encode())
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise await self._died(process, command) from None
        reply = await self._read_reply(process, command)
        parsed = _REPLY_RE.fullmatch(reply)
        if parsed is None or parsed[2] != ident:
            # Not GTP, or not the reply to this command (a stray one, or a late one): out
            # of step, and so until the engine is started afresh (_clean stays False).
            what = "not a GTP reply" if parsed is None else (
                f"the reply to command {parsed[2]}" if parsed[2] else "a reply without an id")
            raise ProtocolViolation(
                f"GTP engine {self.name!r} answered {reply[:80]!r} to {ident} {command!r}: "
                f"{what}"
            )
        self._clean = True
        status, text = parsed[1], parsed[3].strip()
        if status == "?":
            raise RefusedMove(f"GTP engine {self.name!r} refused {command!r}: {text}")
        return text

    async def _read_reply(self, process: trio.Process, command: str) -> str:
        buffer = self._buffer
        while True:
            # Blank lines between replies carry nothing.
            while buffer[:1] == b"\n":
                del buffer[:1]
            end = buffer.find(b"\n\n")
            if end >= 0:
                reply = bytes(buffer[:end])
                del buffer[: end + 2]
                return reply.decode("utf-8", "replace")
            if len(buffer) > MAX_REPLY_BYTES:
                raise ProtocolViolation(
                    f"GTP engine {self.name!r} sent over {MAX_REPLY_BYTES} bytes "
                    f"without ending its reply to {command!r}"
                )
            chunk = await _pipes(process)[1].receive_some(65536)
            if not chunk:
                raise await self._died(process, command)
            buffer += chunk.replace(b"\r", b"")

    async def _died(self, process: trio.Process, command: str) -> EngineDied:
        with trio.move_on_after(EXIT_GRACE):
            await process.wait()
        status = (
            f"exited with status {process.returncode}"
            if process.returncode is not None
            else "closed its output"
        )
        where = f"; its stderr is in {self.stderr_log}" if self.stderr_log is not None else ""
        return EngineDied(
            f"GTP engine {self.name!r} ({shlex.join(self.argv)}) {status} "
            f"while answering {command!r}{where}"
        )


def _pipes(process: trio.Process) -> tuple[trio.abc.SendStream, trio.abc.ReceiveStream]:
    """The engine's stdin and stdout (it is started with both piped)."""
    assert process.stdin is not None and process.stdout is not None
    return process.stdin, process.stdout


async def _reap(process: trio.Process) -> None:
    """Kill (if still running), wait for, and close the pipes of an engine."""
    if process.returncode is None:
        process.kill()
    await process.wait()
    stdin, stdout = _pipes(process)
    await stdin.aclose()
    await stdout.aclose()
