"""A real GO19 server on loopback that misbehaves on purpose: the one stand-in the
fault tests use.

Per request it draws a *fault* from a seeded schedule (``Plan.weights``) and does it:

============== =============================================== ==================
fault          what the server does                            client's reason
============== =============================================== ==================
honest         a legal move (random, never a repeat)           (none)
hang           never answers; waits for the client to leave    timeout
late           answers ``late_s`` seconds later                timeout
truncated      sends 6 of the 7 reply bytes, then nothing      timeout
close-mid-...  sends 6 of the 7 reply bytes and closes (FIN)   connection
reset-mid-...  sends 6 of the 7 reply bytes and resets (RST)   connection
close-before.. closes without a byte                           connection [#]_
wrong-magic    ``RPLZ`` instead of ``RPLY``                    protocol
wrong-length   an error reply declaring 65535 bytes            protocol
off-board      row = board size                                protocol
error          a well-formed error reply                       error
occupied       a point that holds a stone                      illegal:occupied
suicide        an empty point where its stone would die        illegal:suicide
superko        a point whose stone repeats an earlier position illegal:superko
double-reply   a legal move, then a stray pass 10 ms later     (none) [#]_
============== =============================================== ==================

.. [#] On a connection that already answered, the client retries once on a fresh
   one (requests are idempotent), so no fallback: counted in ``retried``.
.. [#] GO19 has no request id: a stray reply that arrives while the next request
   waits is read as its answer. The client drops a pooled connection with unread
   bytes, which narrows the window but cannot close the race, so this fault is kept out
   of the random mixes (``REQUEST_FAULTS``) and tested alone.

Per connection: ``refuse`` bursts (a seeded chance per new connection to start
refusing the next few) take the request of each new connection and hang up without a
word (the client connected to send that request, so one ``connection`` fallback
each). ``flap`` windows of (virtual) time take the listener down (connects are
refused: the client backs off and fails over to another replica, so no fallback) and
drop the idle connections that already answered (the client retries elsewhere).
Connections the kernel accepted before the listener closed are still served, so no
request is lost unseen.

The illegal moves are computed from the board received: ``occupied`` and ``suicide``
need nothing else. ``superko`` needs the game's history, which the request does not
carry: the servers of a farm share a :class:`GameMemory` that links every position it
is asked about to the one before it, and knows a history only when that link is
unique all the way back to the empty board. Honest moves avoid every position the
farm has seen, so they never repeat one by accident.

Counting is exact by construction, per client reason in ``injected``: a fault is
counted when the server commits to it, and only where its effect on the client is
certain. That holds when every request reaches a farm server (give a flapping
replica a sibling that never refuses connects) and games are not cancelled mid-way.
"""

from __future__ import annotations

import random
import socket
import struct
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
import trio

from orchestrator.color import BLACK
from orchestrator.coords import PASS, to_go19
from orchestrator.players.random_player import RandomChooser
from orchestrator.protocol import go19 as wire
from orchestrator.rules.board import Board, IllegalMove, SuicideError, SuperkoError

LOCALHOST = "127.0.0.1"

REASON: dict[str, str | None] = {
    "honest": None,
    "hang": "timeout",
    "late": "timeout",
    "truncated": "timeout",
    "close-mid-frame": "connection",
    "reset-mid-frame": "connection",
    "close-before-reply": "connection",
    "wrong-magic": "protocol",
    "wrong-length": "protocol",
    "off-board": "protocol",
    "error": "error",
    "occupied": "illegal:occupied",
    "suicide": "illegal:suicide",
    "superko": "illegal:superko",
    "double-reply": None,
}
REQUEST_FAULTS = tuple(kind for kind in REASON if kind not in ("honest", "double-reply"))
ILLEGAL = ("occupied", "suicide", "superko")
# What makes a connection that never answered count as a failed connect for the client.
BREAKS_NEW = ("close-mid-frame", "reset-mid-frame", "close-before-reply", "wrong-magic",
              "wrong-length", "off-board")


@dataclass(frozen=True)
class Window:
    """Active for ``duration`` seconds of every ``period``, from ``phase`` after the start."""

    period: float
    duration: float
    phase: float = 0.0

    def active(self, elapsed: float) -> bool:
        return elapsed >= self.phase and (elapsed - self.phase) % self.period < self.duration


@dataclass(frozen=True)
class Burst:
    """Each new connection has ``chance`` to start refusing the next ``length`` ones."""

    chance: float
    length: int


@dataclass(frozen=True)
class Plan:
    weights: Mapping[str, float] = field(default_factory=lambda: {"honest": 1.0})
    refuse: Burst | None = None
    flap: Window | None = None
    late_s: float = 60.0
    # For illegal faults: the chance to answer one whenever the board has such a point
    # (kos are rare, so drawing superko blindly would almost never find one).
    eager: Mapping[str, float] = field(default_factory=dict)
    # Never break a new connection (hang up, cut a reply short, send garbage) before its
    # first reply; such a draw is answered honestly there. The client counts those
    # failures like refused connects and backs off, so a player's steady replica needs this.
    keeps_new_connections: bool = False

    def __post_init__(self) -> None:
        unknown = (set(self.weights) - set(REASON)) | (set(self.eager) - set(ILLEGAL))
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}")


History = frozenset[int]


class GameMemory:
    """Every position a farm was asked about, and each one's game history when certain.

    A position is (board, side to move). Its predecessor is a position the farm saw
    with the other side to move and either the same board (a pass) or this board less
    one stone of the mover and plus the stones that stone captured. Exactly one
    candidate with a known history gives this position's history; none, several, or
    different answers on different visits give ``None`` for good.
    """

    def __init__(self) -> None:
        self.seen: set[int] = {0}  # Zobrist hashes of every position asked about
        self._history: dict[tuple[bytes, int], History | None] = {}
        self._by_mask: dict[tuple[int, bytes], list[bytes]] = {}
        self.known = Counter()  # sightings with a known history (True) and without (False)

    def see(self, board: np.ndarray, to_play: int, position_hash: int) -> History | None:
        key = (board.tobytes(), to_play)
        history = self._derive(board, to_play, position_hash)
        if key not in self._history:
            self._history[key] = history
            self._by_mask.setdefault((to_play, (board == to_play).tobytes()), []).append(key[0])
        elif self._history[key] != history:
            self._history[key] = None
        self.seen.add(position_hash)
        self.known[self._history[key] is not None] += 1
        return self._history[key]

    def _derive(self, board: np.ndarray, to_play: int, position_hash: int) -> History | None:
        if to_play == BLACK and not board.any():
            return frozenset({position_hash})
        mover = 3 - to_play
        candidates: list[tuple[bytes, int]] = []
        if (board.tobytes(), mover) in self._history:
            candidates.append((board.tobytes(), mover))
        mine = board == mover
        theirs = board == to_play
        for p in np.flatnonzero(mine):
            mine[p] = False
            for before in self._by_mask.get((mover, mine.tobytes()), ()):
                prev = np.frombuffer(before, dtype=np.uint8)
                if prev[p] == 0 and bool(np.all(prev[theirs] == to_play)):
                    candidates.append((before, mover))
            mine[p] = True
        if len(candidates) != 1:
            return None
        earlier = self._history[candidates[0]]
        return None if earlier is None else earlier | {position_hash}


class _Conn:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.replies = 0  # complete, valid replies sent: the client's ``exchanges``
        self.killed = False


def _move_bytes(point: int, size: int) -> bytes:
    return b"RPLY\x01" + bytes(to_go19(point, size))


def _error_bytes(message: str) -> bytes:
    data = message.encode()
    return b"RPLY\x00" + len(data).to_bytes(2, "big") + data


class FaultServer:
    """One misbehaving replica. ``await nursery.start(server.serve)`` returns its port."""

    def __init__(
        self, name: str, plan: Plan, *, seed: int, size: int = 9,
        memory: GameMemory | None = None,
    ) -> None:
        self.name = name
        self.plan = plan
        self.size = size
        self.memory = memory if memory is not None else GameMemory()
        self._rng = random.Random(seed)
        self._honest = RandomChooser(seed)
        self._kinds = list(plan.weights)
        self._weights = [plan.weights[k] for k in self._kinds]
        self._limits = wire.Limits(allowed_sizes=frozenset({size}))
        self.injected: Counter[str] = Counter()  # client fallback reason -> count
        self.faults: Counter[str] = Counter()  # what was done, by fault kind
        self.skipped: Counter[str] = Counter()  # illegal faults this board had no point for
        self.retried = 0
        self.strays = 0  # stray replies sent (double-reply)
        self.answered: list[tuple[bytes, int]] = []  # (board, point) of every move sent
        self.requests = 0
        self.connections = 0
        self.downs = 0
        self.up = False
        self.port = 0
        self._waiting: set[_Conn] = set()
        self._refusing = 0  # connections left to refuse in the current burst
        self._accepting: tuple[trio.SocketListener, trio.CancelScope] | None = None
        self._nursery: trio.Nursery | None = None
        self._t0 = 0.0

    # -- listening, refusing, flapping --------------------------------------

    async def serve(self, *, task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            await self._listen()
            self._t0 = trio.current_time()
            if self.plan.flap is not None:
                nursery.start_soon(self._flap, self.plan.flap)
            task_status.started(self.port)

    async def _listen(self) -> None:
        (listener,) = await trio.open_tcp_listeners(self.port, host=LOCALHOST)
        self.port = listener.socket.getsockname()[1]
        self.up = True
        scope = trio.CancelScope()
        self._accepting = (listener, scope)
        self._nursery.start_soon(self._accept_loop, listener, scope)

    async def _accept_loop(self, listener: trio.SocketListener, scope: trio.CancelScope) -> None:
        with scope:
            try:
                while True:
                    stream = await listener.accept()
                    self._nursery.start_soon(self._handle, stream)
            except trio.ClosedResourceError:
                return  # taken down by _go_down

    async def _flap(self, window: Window) -> None:
        k = 0
        while True:
            start = self._t0 + window.phase + k * window.period
            await trio.sleep_until(start)
            self._go_down()
            await trio.sleep_until(start + window.duration)
            await self._listen()
            k += 1

    def _go_down(self) -> None:
        """Refuse connects from now on; synchronous, so no client runs in between."""
        self.downs += 1
        self.up = False
        listener, scope = self._accepting
        scope.cancel()
        sock = listener.socket
        # Connections the kernel completed but we never accepted would die with the
        # listener, their requests unseen: take them and serve them as usual.
        dup = socket.fromfd(sock.fileno(), sock.family, sock.type)
        try:
            while True:
                try:
                    pending, _ = dup.accept()
                except BlockingIOError:
                    break
                pending.setblocking(False)
                stream = trio.SocketStream(trio.socket.from_stdlib_socket(pending))
                self._nursery.start_soon(self._handle, stream)
        finally:
            dup.close()
        sock.close()
        for conn in [c for c in self._waiting if c.replies]:
            conn.killed = True
            conn.stream.socket.close()
            self._waiting.discard(conn)

    # -- one connection ------------------------------------------------------

    def _inject(self, kind: str, reason: str | None) -> None:
        self.faults[kind] += 1
        if reason is not None:
            self.injected[reason] += 1

    async def _handle(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        refuse = self.plan.refuse
        if refuse is not None and not self._refusing and self._rng.random() < refuse.chance:
            self._refusing = refuse.length
        refusing = self._refusing > 0
        self._refusing -= refusing
        conn = _Conn(stream)
        codec = wire.Connection(wire.SERVER, self._limits)
        try:
            while True:
                self._waiting.add(conn)
                try:
                    request = await self._next_request(stream, codec)
                finally:
                    self._waiting.discard(conn)
                if request is None or conn.killed:
                    return
                if refusing:
                    self._see(request)
                    self._inject("refuse", "connection")
                    return
                if not await self._answer(conn, codec, request):
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            await trio.aclose_forcefully(stream)

    async def _next_request(
        self, stream: trio.SocketStream, codec: wire.Connection
    ) -> wire.Request | None:
        while True:
            event = codec.next_event()
            if event is wire.NEED_DATA:
                codec.receive_data(await stream.receive_some(65536))
            elif isinstance(event, wire.ConnectionClosed):
                return None
            elif isinstance(event, wire.Ping):
                await stream.send_all(codec.send(wire.Pong()))
            else:
                return event

    async def _answer(self, conn: _Conn, codec: wire.Connection, request: wire.Request) -> bool:
        """Do this request's fault; False once the connection is finished."""
        size = self.size
        side = request.ai_side
        position, history = self._see(request)
        kind, point = self._eager(position, side, history)
        if kind is None:
            kind = self._rng.choices(self._kinds, self._weights)[0]
            if kind in BREAKS_NEW and self.plan.keeps_new_connections and not conn.replies:
                kind = "honest"
        if kind in ILLEGAL and point is None:
            point = self._illegal(kind, position, side, history)
            if point is None:
                self.skipped[kind] += 1
                kind = "honest"
        if kind in ("honest", "double-reply"):
            # Every position of every game reaches the farm, so its sightings cover the history.
            position.history = history if history is not None else self.memory.seen
            point = self._honest.choose(position, side)
        stream = conn.stream
        if kind == "close-before-reply":
            if conn.replies:
                self.faults[kind] += 1
                self.retried += 1
            else:
                self._inject(kind, "connection")
            return False
        self._inject(kind, REASON[kind])
        move = _move_bytes(point if point is not None else PASS, size)
        if point is not None:
            await stream.send_all(move)
            codec.send(wire.MoveReply.pass_())  # raw bytes went out: mark the request answered
            conn.replies += 1
            self.answered.append((request.board, point))
            if kind == "double-reply":
                await trio.sleep(0.01)
                await stream.send_all(_move_bytes(PASS, size))
                self.strays += 1
            return True
        if kind in ("close-mid-frame", "reset-mid-frame"):
            await stream.send_all(move[:6])
            if kind == "reset-mid-frame":
                # A zero linger turns the close into a reset, as when a process dies.
                stream.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return False
        if kind == "late":
            await trio.sleep(self.plan.late_s)
            data = move
        else:
            data = {
                "hang": b"",
                "truncated": move[:6],
                "wrong-magic": b"RPLZ" + move[4:],
                "wrong-length": b"RPLY\x00\xff\xff" + b"x" * 16,
                "off-board": b"RPLY\x01" + bytes((size, 0)),
                "error": _error_bytes("injected fault: model not loaded"),
            }[kind]
        if data:
            await stream.send_all(data)
        await _until_client_leaves(stream)
        return False

    def _eager(
        self, position: Board, side: int, history: History | None
    ) -> tuple[str | None, int | None]:
        for kind, chance in self.plan.eager.items():
            if self._rng.random() < chance:
                point = self._illegal(kind, position, side, history)
                if point is not None:
                    return kind, point
        return None, None

    def _see(self, request: wire.Request) -> tuple[Board, History | None]:
        """Count and remember a request: its position, and its game's history if certain."""
        self.requests += 1
        flat = np.frombuffer(request.board, dtype=np.uint8)
        position = Board(self.size)
        position.setup(black=np.flatnonzero(flat == 1).tolist(),
                       white=np.flatnonzero(flat == 2).tolist())
        return position, self.memory.see(flat, request.ai_side, position.hash)

    def _illegal(
        self, kind: str, position: Board, side: int, history: History | None
    ) -> int | None:
        stones = position.stones
        if kind == "occupied":
            occupied = [p for p in range(position.area) if stones[p]]
            return self._rng.choice(occupied) if occupied else None
        if kind == "superko":
            if history is None:
                return None
            position.history = history
        wanted = SuicideError if kind == "suicide" else SuperkoError
        empties = [p for p in range(position.area) if not stones[p]]
        self._rng.shuffle(empties)
        for p in empties:
            try:
                position.check(side, p)
            except wanted:
                return p
            except IllegalMove:
                continue
        return None


async def _until_client_leaves(stream: trio.SocketStream) -> None:
    try:
        while await stream.receive_some(65536):
            pass
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass


@dataclass
class Farm:
    """Fault servers of one run, grouped by the player whose replicas they are."""

    memory: GameMemory = field(default_factory=GameMemory)
    servers: dict[str, list[FaultServer]] = field(default_factory=dict)

    async def start(
        self, nursery: trio.Nursery, player: str, plan: Plan, *, seed: int, size: int = 9
    ) -> FaultServer:
        server = FaultServer(
            f"{player}#{len(self.servers.get(player, []))}", plan, seed=seed, size=size,
            memory=self.memory,
        )
        await nursery.start(server.serve)
        self.servers.setdefault(player, []).append(server)
        return server

    def replicas(self, player: str) -> list[str]:
        return [f"{LOCALHOST}:{s.port}" for s in self.servers[player]]

    def injected(self, player: str) -> Counter[str]:
        total: Counter[str] = Counter()
        for server in self.servers[player]:
            total.update(server.injected)
        return total

    def accepting(self) -> int:
        """Servers whose listener is up (each runs one accept loop)."""
        return sum(s.up for servers in self.servers.values() for s in servers)

    def faults(self) -> Counter[str]:
        total: Counter[str] = Counter()
        for servers in self.servers.values():
            for server in servers:
                total.update(server.faults)
        return total
