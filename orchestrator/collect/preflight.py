"""Before a run folder exists: is every player reachable?

Each replica of each remote GO19 player gets one connect + PING within
``connect_timeout_s``; each replica of an OpenAI-compatible player one ``GET /v1/models``
(the player's ``model`` must be listed: the usual vLLM mistake is an adapter missing from
``--lora-modules``, and the line names what the server does list), then one real request on
the empty board within ``move_timeout_s``, whose answer and latency go on that line (a
trial that fails is a warning there, not a stop); each GTP engine is started once and
must answer ``name`` and ``version`` within ``move_timeout_s`` (what its first move would
be allowed, model loading included). One line per endpoint, in the style of ``go19 ping``.
A player with no reachable replica (or an engine that does not answer) stops the
run before anything is written, unless the caller waits for it (``wait_s``: a GPU
server loading a large model takes minutes), with a countdown in the log.

Embedded servers and in-process players need no check.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass

import trio

from orchestrator.collect.matchup import (
    Go19PlayerSpec,
    GtpPlayerSpec,
    Matchup,
    OpenAIPlayerSpec,
    parse_hostport,
)
from orchestrator.collect.players import ask_settings
from orchestrator.coords import move_to_text
from orchestrator.players.base import PlayerError
from orchestrator.players.go19 import format_address
from orchestrator.players.openai import (
    AskSettings,
    OpenAIEndpoint,
    OpenAIPlayer,
    api_key_from_env,
)
from orchestrator.players.openai_http import list_models, model_missing
from orchestrator.players.ping import ping_once, ping_text
from orchestrator.rules.game import Game

# How often a waiting preflight tries again, and how often it says how long is left.
RETRY_S = 1.0
COUNTDOWN_EVERY_S = 10.0
# How much of a failed GTP engine's stderr is shown, and kept while reading it.
STDERR_LINES = 5
STDERR_KEEP_BYTES = 64 * 1024


class EndpointsUnreachable(RuntimeError):
    """At least one player has no usable endpoint; the message is one line."""


class PreflightInputError(ValueError):
    """The matchup asks for something this machine does not have (an API key's
    environment variable not set); the message is one line."""


@dataclass(frozen=True)
class Probe:
    """One endpoint of one player, checked once."""

    player: str
    where: str  # host:port, or the GTP command
    ok: bool
    detail: str  # the failure reason, or the engine's name and version
    ms: float
    stderr_tail: tuple[str, ...] = ()

    def line(self) -> str:
        return "● " + ping_text(self.ok, f"{self.player} {self.where}", self.detail, self.ms)


async def ping_replica(player: str, address: tuple[str, int], timeout: float) -> Probe:
    ok, detail, ms = await ping_once(address, timeout)
    return Probe(player, format_address(address), ok, detail, ms)


class _Tail:
    """The last bytes of a stream, read until it ends."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.ended = trio.Event()

    async def drain(self, stream: trio.abc.ReceiveStream) -> None:
        try:
            while chunk := await stream.receive_some(65536):
                self.data += chunk
                del self.data[:-STDERR_KEEP_BYTES]
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass
        finally:
            self.ended.set()

    def lines(self) -> tuple[str, ...]:
        text = self.data.decode("utf-8", "replace").replace("\r", "")
        return tuple(line for line in text.splitlines() if line.strip())[-STDERR_LINES:]


class _GtpReplies:
    """GTP replies from an engine's stdout: ``= text`` / ``? text`` ended by a blank line."""

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self.stream = stream
        self.buffer = bytearray()

    async def next(self) -> str | None:
        while True:
            while self.buffer[:1] == b"\n":
                del self.buffer[:1]
            end = self.buffer.find(b"\n\n")
            if end >= 0:
                reply = bytes(self.buffer[:end]).decode("utf-8", "replace")
                del self.buffer[: end + 2]
                return reply
            if len(self.buffer) > 1 << 20:
                return None
            chunk = await self.stream.receive_some(65536)
            if not chunk:
                return None
            self.buffer += chunk.replace(b"\r", b"")


async def start_gtp(player: str, command: str, timeout: float) -> Probe:
    """Start the engine, ask ``name`` and ``version``, then ``quit`` (killed if it lingers)."""
    start = trio.current_time()
    argv = shlex.split(command)

    def failed(detail: str, tail: tuple[str, ...] = ()) -> Probe:
        return Probe(player, command, False, detail, (trio.current_time() - start) * 1000, tail)

    if not argv:
        return failed("empty command")
    try:
        process = await trio.lowlevel.open_process(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
    except OSError as exc:
        return failed(f"cannot start: {exc.strerror or exc}")
    assert process.stdin is not None and process.stdout is not None \
        and process.stderr is not None, "started with every pipe"
    stdin, stdout, stderr_pipe = process.stdin, process.stdout, process.stderr
    stderr = _Tail()
    answers: list[str] = []
    problem = ""
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(stderr.drain, stderr_pipe)
            replies = _GtpReplies(stdout)
            with trio.move_on_after(timeout) as deadline:
                for word in ("name", "version"):
                    try:
                        await stdin.send_all(f"{word}\n".encode())
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        reply = None
                    else:
                        reply = await replies.next()
                    if reply is None:
                        with trio.move_on_after(1.0):
                            await process.wait()
                        status = (f"exited with status {process.returncode}"
                                  if process.returncode is not None else "closed its output")
                        problem = f"{status} before answering {word!r}"
                        break
                    if not reply.startswith("="):
                        problem = f"answered {reply[:80]!r} to {word!r}"
                        break
                    answers.append(reply[1:].lstrip("0123456789").strip())
                else:
                    try:
                        await stdin.send_all(b"quit\n")
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        pass
                    with trio.move_on_after(2.0):
                        await process.wait()
            if deadline.cancelled_caught and len(answers) < 2:  # (not while it quits)
                word = ("name", "version")[len(answers)]
                problem = f"no answer to {word!r} within {timeout:g} s"
            if process.returncode is None:
                process.kill()
            await process.wait()
            # Its stderr ends with the process (unless a child of it holds the pipe open).
            with trio.move_on_after(1.0):
                await stderr.ended.wait()
            nursery.cancel_scope.cancel()
    finally:
        with trio.CancelScope(shield=True):
            if process.returncode is None:
                process.kill()
                await process.wait()
            for pipe in (process.stdin, process.stdout, process.stderr):
                if pipe is not None:
                    await pipe.aclose()
    if problem:
        return failed(problem, stderr.lines())
    return Probe(player, command, True, " ".join(answers),
                 (trio.current_time() - start) * 1000)


async def check_openai(player: str, base_url: str, settings: AskSettings,
                       api_key: str | None, matchup: Matchup) -> Probe:
    """``GET /v1/models`` lists the model, then one trial request on the empty board."""
    game = matchup.game
    start = trio.current_time()

    def elapsed() -> float:
        return (trio.current_time() - start) * 1000

    try:
        names = await list_models(base_url, api_key=api_key, timeout=game.connect_timeout_s)
    except PlayerError as exc:
        return Probe(player, base_url, False, str(exc).removeprefix(f"{base_url}: "),
                     elapsed())
    missing = model_missing(settings.model, base_url, names)
    if missing is not None:
        return Probe(player, base_url, False, missing.removeprefix(f"{base_url}: "), elapsed())
    listed_ms = elapsed()
    trial = await _trial(player, base_url, settings, api_key, matchup)
    return Probe(player, base_url, True, f"lists {settings.model}; {trial}", listed_ms)


async def _trial(player: str, base_url: str, settings: AskSettings, api_key: str | None,
                 matchup: Matchup) -> str:
    """One real request on the empty board, in words: the answer and its round trip, or
    the warning of what went wrong (the run's fallbacks deal with a failing server)."""
    game = matchup.game
    board = Game(game.size, game.komi)
    async with OpenAIEndpoint([base_url], settings.model, api_key=api_key,
                              connect_timeout=game.connect_timeout_s) as endpoint:
        model = OpenAIPlayer(endpoint, settings, player, run=matchup.run.seed)
        with trio.move_on_after(game.move_timeout_s):
            answer = await model.answer(board)
            if answer.fault is not None:
                return f"warning: the trial move failed: {answer.fault}"
            assert answer.point is not None and answer.details is not None
            spelt = move_to_text(answer.point, game.size, settings.answer)
            return f"trial move {spelt} in {answer.details.latency_ms:.0f} ms"
    return f"warning: no trial move within move_timeout_s = {game.move_timeout_s:g} s"


def _checks(matchup: Matchup) -> list[tuple[str, str, Callable]]:
    """(player, endpoint, async check) for every endpoint that needs one."""
    game = matchup.game
    out: list[tuple[str, str, Callable]] = []
    for name, spec in sorted(matchup.players.items()):
        if isinstance(spec, Go19PlayerSpec):
            for replica in spec.replicas:
                address = parse_hostport(replica)
                out.append((name, replica, lambda n=name, a=address:
                            ping_replica(n, a, game.connect_timeout_s)))
        elif isinstance(spec, OpenAIPlayerSpec):
            try:
                key = api_key_from_env(spec.api_key_env)
            except ValueError as exc:
                raise PreflightInputError(f"players.{name}.{exc}") from None
            settings = ask_settings(spec)
            for url in spec.base_urls:
                out.append((name, url, lambda n=name, u=url, s=settings, k=key:
                            check_openai(n, u, s, k, matchup)))
        elif isinstance(spec, GtpPlayerSpec):
            out.append((name, spec.command, lambda n=name, c=spec.command:
                        start_gtp(n, c, game.move_timeout_s)))
    return out


async def _run_all(checks: list[tuple[str, str, Callable]]) -> list[Probe]:
    results: list[Probe | None] = [None] * len(checks)

    async def one(i: int) -> None:
        results[i] = await checks[i][2]()

    async with trio.open_nursery() as nursery:
        for i in range(len(checks)):
            nursery.start_soon(one, i)
    return [r for r in results if r is not None]


def _unreachable(probes: list[Probe]) -> dict[str, list[Probe]]:
    """Players none of whose endpoints answered, with their failed probes."""
    by_player: dict[str, list[Probe]] = {}
    for probe in probes:
        by_player.setdefault(probe.player, []).append(probe)
    return {name: ps for name, ps in by_player.items() if not any(p.ok for p in ps)}


def _why(failed: dict[str, list[Probe]]) -> str:
    def one(probe: Probe) -> str:
        tail = f"; its stderr ends: {probe.stderr_tail[-1]}" if probe.stderr_tail else ""
        return f"{probe.where}: {probe.detail}{tail}"

    return "; ".join(
        f"{name} ({', '.join(one(p) for p in probes)})" for name, probes in sorted(failed.items())
    )


def _fmt_left(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


async def check_endpoints(
    matchup: Matchup, wait_s: float, say: Callable[[str], None]
) -> None:
    """Raise EndpointsUnreachable unless every player has a usable endpoint (after up to
    ``wait_s`` seconds of retrying). Says one line per endpoint checked."""
    checks = _checks(matchup)
    if not checks:
        return
    deadline = trio.current_time() + wait_s
    pending = checks
    next_countdown = trio.current_time()
    shown: dict[tuple[str, str], bool] = {}
    ok_players: set[str] = set()
    while True:
        probes = await _run_all(pending)
        for probe in probes:
            key = (probe.player, probe.where)
            if shown.get(key) != probe.ok:  # each endpoint's line once, and again on a change
                shown[key] = probe.ok
                say(probe.line())
                for line in probe.stderr_tail if not probe.ok else ():
                    say(f"    {probe.player} stderr: {line}")
            if probe.ok:
                ok_players.add(probe.player)
        failed = {n: ps for n, ps in _unreachable(probes).items() if n not in ok_players}
        if not failed:
            return
        left = deadline - trio.current_time()
        if left <= 0:
            hint = ("still unreachable after waiting " + _fmt_left(wait_s) if wait_s
                    else "unreachable; start it, or give --wait-endpoints SECONDS")
            raise EndpointsUnreachable(
                f"no usable endpoint for {_why(failed)}: {hint}; nothing recorded"
            )
        if trio.current_time() >= next_countdown:
            say(f"waiting for endpoints: {', '.join(sorted(failed))} "
                f"({_fmt_left(left)} left)")
            next_countdown = trio.current_time() + COUNTDOWN_EVERY_S
        await trio.sleep(min(RETRY_S, left))
        pending = [c for c in checks if c[0] in failed]
