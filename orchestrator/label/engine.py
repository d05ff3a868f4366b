"""A trio client for KataGo's analysis engine (JSON lines over the process's stdin/stdout).

One process per :func:`open_katago`; the context manager owns its nursery, and in it one
task reads stdout and routes each answer by ``id`` (and ``turnNumber``) to the query that
waits for it, since KataGo answers out of order; another keeps the last lines of stderr for
error messages. A cancelled query asks KataGo to drop its remaining turns and ignores their
late answers.

Deadline: KataGo answers one position at a time (a few at once, by priority), so a query
may wait behind others for long; what must not happen is KataGo answering nothing at all.
A third task watches that: while any query waits, some answer must come within ``timeout``
seconds per visit of the most visits asked (``timeout`` for an action, ``START_FACTOR`` x
``timeout`` for ``query_version``, which waits for the net to load) since the last answer.
An engine that stays silent longer is killed, and its queries raise :class:`KataGoDied`.

Queries and answers (what they hold, coordinates, perspective) are
:mod:`orchestrator.label.analysis`, which this module re-exports.

Errors: a query KataGo rejects raises :class:`KataGoQueryError` in that query only, and
the engine goes on, as it does after an answer that cannot be a label
(:class:`KataGoBadAnswer`: NaN, infinite, missing); a warning KataGo attaches to a query
lands in each of its responses' ``warnings``. If the process exits, says something that is
not JSON, answers a query id never sent, or stays silent past the deadline, every
outstanding and later query raises :class:`KataGoDied`.
"""
from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from contextlib import aclosing, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from orchestrator.label.analysis import (
    GO19_RULES,
    AnalysisResponse,
    KataGoBadAnswer,
    KataGoDied,
    KataGoError,
    KataGoQueryError,
    MoveInfo,
    game_query,
    parse_response,
)
from orchestrator.rules.game import Move
from orchestrator.words import plural

__all__ = [
    "DEFAULT_TIMEOUT", "GO19_RULES", "AnalysisResponse", "KataGoBadAnswer", "KataGoDied",
    "KataGoEngine", "KataGoError", "KataGoQueryError", "MoveInfo", "START_FACTOR",
    "game_query", "open_katago", "parse_response",
]

MAX_LINE_BYTES = 16 * 1024 * 1024  # one answer with policy and ownership is ~20 kB
_STDERR_LINES = 20
# Seconds KataGo may go without answering a query, per visit of a position: the CPU
# KataGo of `make katago` answers about a position a second at one visit.
DEFAULT_TIMEOUT = 60.0
START_FACTOR = 10  # the start (the net loaded, query_version answered) may take 10 times
_ID_PREFIX = "go19-"


@dataclass
class _Pending:
    send: trio.MemorySendChannel[dict[str, Any]]
    timeout: float  # the longest KataGo may be silent while this query waits
    expected: int  # final answers KataGo owes it
    answered: int = 0  # final answers (or an error) come so far
    warnings: list[str] = field(default_factory=list)

    @property
    def waiting(self) -> bool:
        """Still owed an answer by KataGo (not only unread by its caller)."""
        return self.answered < self.expected


class _LineReader:
    """Lines from a byte stream, each capped so a runaway line cannot eat the memory."""

    def __init__(self, stream: trio.abc.ReceiveStream, max_line: int) -> None:
        self._stream = stream
        self._max = max_line
        self._buf = bytearray()
        self._scanned = 0

    async def next_line(self) -> bytes | None:
        """The next line without its newline; None at EOF (a last unterminated line too)."""
        while True:
            end = self._buf.find(b"\n", self._scanned)
            if end > self._max or (end < 0 and len(self._buf) > self._max):
                raise KataGoDied(f"KataGo sent a line longer than {self._max} bytes")
            if end >= 0:
                line = bytes(self._buf[:end])
                del self._buf[: end + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buf)
            chunk = await self._stream.receive_some(65536)
            if not chunk:
                return None
            self._buf += chunk


class KataGoEngine:
    """A running analysis engine; get one from :func:`open_katago`."""

    def __init__(self, process: trio.Process, nursery: trio.Nursery,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self._process = process
        self._nursery = nursery
        self.timeout = timeout
        self._heard_at = 0.0  # trio time of the last answer (or of a query to an idle engine)
        self._woken = trio.Event()  # the watchdog recomputes its deadline
        self._pending: dict[str, _Pending] = {}
        self._next_id = 0
        self._send_lock = trio.Lock()
        self._death: KataGoDied | None = None
        self._dead = trio.Event()
        self._stderr_tail: deque[str] = deque(maxlen=_STDERR_LINES)
        self._stderr_done = trio.Event()
        self.version: str = ""

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def death(self) -> KataGoDied | None:
        """Why the engine is gone (every query raises it), or None while it runs."""
        return self._death

    async def wait_dead(self) -> None:
        await self._dead.wait()

    # -- public queries ------------------------------------------------------------

    async def query_version(self) -> str:
        reply = await self._action("query_version", self.timeout * START_FACTOR)
        return str(reply["version"])

    async def query_models(self) -> list[dict[str, Any]]:
        reply = await self._action("query_models", self.timeout)
        return list(reply["models"])

    async def query(self, query: Mapping[str, Any]) -> AnalysisResponse:
        """One position: a raw analysis query (any ``id`` in it is replaced) whose
        ``analyzeTurns`` is absent or names one turn."""
        turns = query.get("analyzeTurns")
        if turns is not None and len(turns) != 1:
            raise ValueError("query() analyses one turn; use analyze_game() for several")
        size = query.get("boardXSize")
        if not isinstance(size, int):
            raise ValueError("an analysis query needs an integer boardXSize")
        timeout = self._position_timeout(query)
        async with aclosing(self._submit(dict(query), 1, timeout)) as answers:
            async for msg, warnings in answers:
                return parse_response(msg, size, warnings)
        raise AssertionError("unreachable: _submit yields once or raises")

    async def analyze_game_stream(
        self, moves: Sequence[Move], **options: Any
    ) -> AsyncGenerator[AnalysisResponse, None]:
        """Each analysed turn as soon as KataGo answers it (in any order); options as in
        :func:`game_query`. Consume it whole or under ``contextlib.aclosing``."""
        query = game_query(moves, **options)
        size = query["boardXSize"]
        submitted = self._submit(query, len(query["analyzeTurns"]), self._position_timeout(query))
        async with aclosing(submitted) as answers:
            async for msg, warnings in answers:
                yield parse_response(msg, size, warnings)

    async def analyze_game(
        self, moves: Sequence[Move], **options: Any
    ) -> dict[int, AnalysisResponse]:
        """Every analysed turn, keyed by turn number; options as in :func:`game_query`."""
        results: dict[int, AnalysisResponse] = {}
        async with aclosing(self.analyze_game_stream(moves, **options)) as stream:
            async for response in stream:
                results[response.turn] = response
        return results

    # -- plumbing ---------------------------------------------------------------------

    def _position_timeout(self, query: Mapping[str, Any]) -> float:
        visits = query.get("maxVisits")
        return self.timeout * max(visits if isinstance(visits, int) else 1, 1)

    async def _action(self, action: str, timeout: float) -> dict[str, Any]:
        async with aclosing(self._submit({"action": action}, 1, timeout)) as answers:
            async for msg, _ in answers:
                return msg
        raise AssertionError("unreachable: _submit yields once or raises")

    def _new_id(self) -> str:
        self._next_id += 1
        return f"{_ID_PREFIX}{self._next_id}"

    def _was_sent(self, query_id: object) -> bool:
        if not isinstance(query_id, str) or not query_id.startswith(_ID_PREFIX):
            return False
        number = query_id.removeprefix(_ID_PREFIX)
        return number.isdigit() and 0 < int(number) <= self._next_id

    def _heard(self) -> None:
        self._heard_at = trio.current_time()
        self._woken.set()

    async def _submit(
        self, query: dict[str, Any], expected: int, timeout: float
    ) -> AsyncGenerator[tuple[dict[str, Any], tuple[str, ...]], None]:
        """Send one query and yield its ``expected`` final answers with their warnings;
        ``timeout``: how long KataGo may stay silent while it waits (the watchdog's)."""
        if self._death is not None:
            raise self._death
        query_id = self._new_id()
        query["id"] = query_id
        # Unbounded, yet bounded by the query itself: KataGo sends one final answer per turn.
        send, receive = trio.open_memory_channel[dict[str, Any]](math.inf)
        pending = _Pending(send, timeout, expected)
        if not any(p.waiting for p in self._pending.values()):
            self._heard()  # an idle engine's silence starts counting now
        self._pending[query_id] = pending
        self._woken.set()
        received = 0
        try:
            await self._send(query)
            async with receive:
                while received < expected:
                    try:
                        msg = await receive.receive()
                    except trio.EndOfChannel:
                        assert self._death is not None
                        raise self._death from None
                    if "error" in msg:
                        raise KataGoQueryError(str(msg["error"]), msg.get("field"), query_id)
                    received += 1
                    yield msg, tuple(pending.warnings)
        finally:
            self._pending.pop(query_id, None)  # _die may have cleared it
            if received < expected and self._death is None:
                # The caller stopped early (cancelled, or broke out): stop KataGo's work
                # from a task of our own, as the caller's scope may be cancelled.
                self._start_soon(self._terminate, query_id)

    def _start_soon(self, fn: Any, *args: Any) -> None:
        try:
            self._nursery.start_soon(fn, *args)
        except RuntimeError:
            pass  # the engine is shutting down; nothing left to stop

    async def _terminate(self, query_id: str) -> None:
        try:
            await self._send({"id": self._new_id(), "action": "terminate",
                              "terminateId": query_id})
        except KataGoDied:
            pass

    async def _send(self, obj: Mapping[str, Any]) -> None:
        line = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        assert self._process.stdin is not None
        async with self._send_lock:
            try:
                # Shielded: a write cut short would leave half a line and garble the next.
                with trio.CancelScope(shield=True):
                    await self._process.stdin.send_all(line)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                # The process is gone; the stdout reader is about to say how.
                await self._dead.wait()
                assert self._death is not None
                raise self._death from None

    def _dispatch(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except ValueError:
            raise KataGoDied(f"KataGo sent a line that is not JSON: {line[:200]!r}") from None
        if not isinstance(msg, dict):
            raise KataGoDied(f"KataGo sent JSON that is not an object: {line[:200]!r}")
        query_id = msg.get("id")
        if "error" in msg and query_id is None:
            # We only send well-formed queries, so a general error means our bug.
            raise KataGoDied(f"KataGo reported a general error: {msg['error']}")
        pending = self._pending.get(query_id) if isinstance(query_id, str) else None
        if pending is None:
            if not self._was_sent(query_id):
                # Not ours to drop: KataGo and we no longer agree on what was asked.
                raise KataGoDied(f"KataGo answered query id {query_id!r}, which was never "
                                 "sent")
            return  # the answer to a query its caller gave up on, or to a terminate
        self._heard()
        if "warning" in msg:
            field_name = msg.get("field")
            where = f"{field_name}: " if field_name else ""
            pending.warnings.append(f"{where}{msg['warning']}")
        elif not msg.get("isDuringSearch", False):
            pending.answered = pending.expected if "error" in msg else pending.answered + 1
            try:
                pending.send.send_nowait(msg)
            except trio.BrokenResourceError:
                pass  # its caller stopped reading a moment ago (a bad answer, a cancel)

    async def _read_stdout(self) -> None:
        assert self._process.stdout is not None
        reader = _LineReader(self._process.stdout, MAX_LINE_BYTES)
        try:
            while (line := await reader.next_line()) is not None:
                if line.strip():
                    self._dispatch(line)
            status = await self._process.wait()
            with trio.move_on_after(2):  # stderr ends with the process; don't hang if not
                await self._stderr_done.wait()
            self._die(KataGoDied(f"KataGo exited with status {status}{self._stderr_text()}"))
        except KataGoDied as exc:
            self._process.kill()
            self._die(KataGoDied(f"{exc}{self._stderr_text()}"))

    async def _watch(self) -> None:
        """Kill an engine that answers nothing for longer than the longest ``timeout`` of
        the queries it owes answers (counted from the last answer): every query raises."""
        while self._death is None:
            self._woken = woken = trio.Event()
            owed = [p for p in self._pending.values() if p.waiting]
            if not owed:
                await woken.wait()
                continue
            limit = max(p.timeout for p in owed)
            deadline = self._heard_at + limit
            if trio.current_time() >= deadline:
                waiting = plural(len(owed), "query", "queries")
                self._process.kill()
                self._die(KataGoDied(f"KataGo answered nothing for {limit:g} s with {waiting} "
                                     "waiting (--katago-timeout); stopped it"))
                return
            with trio.move_on_at(deadline):
                await woken.wait()

    async def _read_stderr(self) -> None:
        assert self._process.stderr is not None
        reader = _LineReader(self._process.stderr, MAX_LINE_BYTES)
        try:
            while (line := await reader.next_line()) is not None:
                self._stderr_tail.append(line.decode("utf-8", "replace").rstrip())
        except (KataGoDied, trio.ClosedResourceError):
            pass
        finally:
            self._stderr_done.set()

    def _stderr_text(self) -> str:
        lines = [line for line in self._stderr_tail if line]
        return "; stderr: " + " | ".join(lines[-5:]) if lines else ""

    def _die(self, death: KataGoDied) -> None:
        if self._death is None:
            self._death = death
        for pending in self._pending.values():
            pending.send.close()
        self._pending.clear()  # answers still in the pipe now go nowhere
        self._dead.set()

    async def _shutdown(self, grace: float) -> None:
        """Close stdin (with -quit-without-waiting KataGo then exits promptly), wait
        ``grace`` seconds, then kill."""
        assert self._process.stdin is not None
        self._die(KataGoDied("KataGo was shut down"))
        try:
            await self._process.stdin.aclose()
        except trio.BrokenResourceError:
            pass
        with trio.move_on_after(grace):
            await self._process.wait()
        if self._process.returncode is None:
            self._process.kill()
            await self._process.wait()


@asynccontextmanager
async def open_katago(
    binary: Path,
    model: Path,
    config: Path,
    log_path: Path,
    *,
    shutdown_grace: float = 5.0,
    background: bool = False,
    own_session: bool = False,
    timeout: float = DEFAULT_TIMEOUT,
) -> AsyncIterator[KataGoEngine]:
    """Start ``katago analysis`` and wait until it answers ``query_version`` (the net is
    loaded then); the log goes to ``log_path``. A KataGo that cannot start raises
    :class:`KataGoDied` here, with the end of its stderr, as does one that does not answer
    within ``START_FACTOR`` x ``timeout`` (the deadline, module doc). On exit the process
    is stopped.
    ``background`` runs it (every thread) at the lowest priority, nice 19 (``collect
    --review``: KataGo must not take the games' CPU). Not SCHED_IDLE: behind any other busy
    process, even a niced one, it got no CPU at all and the review never moved;
    ``own_session`` keeps a terminal's
    Ctrl-C from reaching it (the caller decides when it stops)."""
    for path, what in ((binary, "KataGo binary"), (model, "KataGo model"),
                       (config, "KataGo config")):
        if not Path(path).is_file():
            raise KataGoDied(f"{what} not found at {path} (run `make katago`)")
    log_path = Path(log_path).resolve()
    if "," in str(log_path):
        raise ValueError(f"KataGo cannot take a log path with a comma: {log_path}")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    command = [
        str(binary), "analysis", "-config", str(config), "-model", str(model),
        "-override-config", f"logFile={log_path}", "-quit-without-waiting",
    ]
    if background and (nice := shutil.which("nice")) is not None:
        command = [nice, "-n", "19", *command]  # nice execs: the pid stays KataGo's
    process = await trio.lowlevel.open_process(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=own_session,
    )
    try:
        async with trio.open_nursery() as nursery:
            engine = KataGoEngine(process, nursery, timeout)
            nursery.start_soon(engine._read_stderr)
            nursery.start_soon(engine._read_stdout)
            nursery.start_soon(engine._watch)
            try:
                engine.version = await engine.query_version()
                yield engine
            finally:
                with trio.CancelScope(shield=True):
                    await engine._shutdown(shutdown_grace)
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        # Our reader tasks never raise, so a lone exception is the caller's own (or
        # KataGoDied from the start): let it out as itself, not wrapped by our nursery.
        if len(group.exceptions) != 1:
            raise
        inner = group.exceptions[0]
        raise inner from inner.__cause__
