"""The serving audit, the last step of the preflight: does a model's answer depend on the
company its request is batched with?

A server that batches requests of several models (LoRA adapters and the base model of one
vLLM) must give each request its own model's answer. vLLM 0.32 on the CPU does not: a
base-model request answers as an adapter whenever it shares a batch with a LoRA request,
so a matchup of ``base`` against an adapter would compare two adapters without a word.
For every OpenAI-compatible base URL that serves two or more models of the matchup, each
model is asked a few fixed probe positions alone, one request at a time, then all of them
again in one concurrent batch mixing every model: greedy and seeded, so an answer that
changes is the batch's doing. Whether concurrent requests share a batch is the server's
timing (on a loaded machine the first may be answered before the last arrives), so the
mixed batch holds ``MIXED_COPIES`` copies of each request, and is sent up to
``BATCHED_ROUNDS`` times; the first round with a change is the finding. Each change is a
warning naming the models ("base answers as b when batched with a, b"); with
``--strict-audit`` the run stops (exit 3) before anything is recorded.

An answer is the move read from the reply (as the run would play it; a reply with no move
is "no move"), so a base model's noise that stays noise is not a finding. Requests that
fail (connection, HTTP error) are left out of the comparison, and said.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, replace

import trio

from orchestrator.collect.matchup import Matchup, OpenAIPlayerSpec
from orchestrator.collect.players import ask_settings
from orchestrator.collect.schedule import random_opening
from orchestrator.coords import move_to_text
from orchestrator.players.base import Answer, Unparsed
from orchestrator.players.openai import (
    AskSettings,
    OpenAIEndpoint,
    OpenAIPlayer,
    api_key_from_env,
)
from orchestrator.rules.game import Game
from orchestrator.words import plural

# The probe positions: random openings of these lengths (fixed seeds), the empty board first.
PROBE_PLIES = (0, 3, 8)
PROBE_SEED = 19
AUDIT_SEED = 1  # every probe request's sampling seed (decoding is greedy anyway)
# One mixed round of one copy per request missed vLLM's mixing in suite runs on a busy
# machine (the server answered its requests one after another); a clean server costs this
# many rounds of copies x models x probes requests.
BATCHED_ROUNDS = 3
MIXED_COPIES = 4


class ServingAuditFailed(RuntimeError):
    """``--strict-audit`` and a finding; the message is one line."""


@dataclass(frozen=True)
class Finding:
    url: str
    model: str
    companions: tuple[str, ...]  # the other models of the mixed batch
    changed: int  # probe positions whose answer changed
    probes: int
    alone: str  # the first changed position's answers, in words
    batched: str
    like: str | None  # the model whose own answer the batched one is, if any

    def line(self) -> str:
        how = f"answers as {self.like}" if self.like else "answers differently"
        return (f"warning: serving audit: {self.url}: {self.model} {how} when batched with "
                f"{', '.join(self.companions)} ({self.changed} of "
                f"{plural(self.probes, 'probe position')}; alone {self.alone}, batched "
                f"{self.batched})")


def probe_games(matchup: Matchup) -> list[Game]:
    size, komi = matchup.game.size, matchup.game.komi
    games = []
    for k, plies in enumerate(PROBE_PLIES):
        game = Game(size, komi)
        for point in random_opening(size, plies, PROBE_SEED + k):
            game.play(point)
        games.append(game)
    return games


def _servers(matchup: Matchup) -> dict[str, list[tuple[str, OpenAIPlayerSpec]]]:
    """Base URL -> (model, the first player's spec that asks it), for URLs serving two or
    more models of the matchup."""
    served: dict[str, dict[str, OpenAIPlayerSpec]] = {}
    for _, spec in sorted(matchup.players.items()):
        if isinstance(spec, OpenAIPlayerSpec):
            for url in spec.base_urls:
                served.setdefault(url, {}).setdefault(spec.model, spec)
    return {url: sorted(models.items()) for url, models in served.items() if len(models) > 1}


def _answer(answer: Answer, size: int, spelling: str) -> str | None:
    """The answer in words (``'Q16'``, ``no move 'xyz'``), None for a failed request."""
    if answer.point is not None:
        return repr(move_to_text(answer.point, size, spelling))
    if isinstance(answer.fault, Unparsed) and answer.details is not None:
        return f"no move {(answer.details.reply or '')[:20]!r}"
    return None


class _Asker:
    """One model of one server, asked as its player asks, greedily and with one seed."""

    def __init__(self, url: str, model: str, settings: AskSettings, api_key: str | None,
                 matchup: Matchup) -> None:
        self.url = url
        self.model = model
        self.settings = replace(settings, temperature=0.0, seed=AUDIT_SEED)
        self.api_key = api_key
        self.matchup = matchup

    async def ask(self, endpoint: OpenAIEndpoint, game: Game) -> str | None:
        player = OpenAIPlayer(endpoint, self.settings, self.model, run=0)
        with trio.move_on_after(self.matchup.game.move_timeout_s):
            answer = await player.answer(game)
            return _answer(answer, game.size, self.settings.answer)
        return None


@dataclass
class _Audit:
    findings: list[Finding]
    failed: int  # requests that got no answer (left out of the comparison)


async def _audit_one(url: str, askers: list[_Asker], games: list[Game]) -> _Audit:
    connect = askers[0].matchup.game.connect_timeout_s
    alone: dict[tuple[str, int], str | None] = {}
    failed = 0
    findings: list[Finding] = []
    async with AsyncExitStack() as stack:
        endpoints = {asker.model: await stack.enter_async_context(OpenAIEndpoint(
            [url], asker.model, api_key=asker.api_key,
            slots_per_replica=len(games) * MIXED_COPIES,
            connect_timeout=connect)) for asker in askers}
        for asker in askers:  # alone: one request on the server at a time
            for k, game in enumerate(games):
                alone[asker.model, k] = await asker.ask(endpoints[asker.model], game)
        failed += sum(answer is None for answer in alone.values())
        for _ in range(BATCHED_ROUNDS):
            copies: dict[tuple[str, int], list[str | None]] = {
                (asker.model, k): [] for asker in askers for k in range(len(games))}
            async with trio.open_nursery() as nursery:  # every model's probes at once
                for _copy in range(MIXED_COPIES):
                    for asker in askers:
                        for k in range(len(games)):
                            nursery.start_soon(_ask_into, copies[asker.model, k], asker,
                                               endpoints[asker.model], games[k])
            failed += sum(answer is None for answers in copies.values() for answer in answers)
            batched = {key: _telling(alone[key], answers) for key, answers in copies.items()}
            findings = _findings(url, askers, len(games), alone, batched)
            if findings:
                break
    return _Audit(findings, failed)


async def _ask_into(answers: list[str | None], asker: _Asker, endpoint: OpenAIEndpoint,
                    game: Game) -> None:
    answers.append(await asker.ask(endpoint, game))


def _telling(alone: str | None, copies: list[str | None]) -> str | None:
    """The batched answer to compare: the first copy that differs from the answer alone,
    else the first that got one."""
    answered = [answer for answer in copies if answer is not None]
    return next((answer for answer in answered if answer != alone),
                answered[0] if answered else None)


def _findings(url: str, askers: list[_Asker], probes: int,
              alone: dict[tuple[str, int], str | None],
              batched: dict[tuple[str, int], str | None]) -> list[Finding]:
    findings = []
    for asker in askers:
        changed = [k for k in range(probes)
                   if None not in (alone[asker.model, k], batched[asker.model, k])
                   and alone[asker.model, k] != batched[asker.model, k]]
        if not changed:
            continue
        k = changed[0]
        others = tuple(a.model for a in askers if a is not asker)
        like = next((other for other in others
                     if alone.get((other, k)) == batched[asker.model, k]), None)
        findings.append(Finding(url, asker.model, others, len(changed), probes,
                                str(alone[asker.model, k]), str(batched[asker.model, k]),
                                like))
    return findings


async def audit_servers(matchup: Matchup, say: Callable[[str], None],
                        strict: bool = False) -> list[Finding]:
    """Audit every OpenAI-compatible server that serves two or more of the matchup's
    models; one line per server (its findings, or that it passed). With ``strict``, a
    finding raises :class:`ServingAuditFailed`."""
    servers = _servers(matchup)
    if not servers:
        return []
    games = probe_games(matchup)
    findings: list[Finding] = []
    failed: list[str] = []

    async def one(url: str, models: list[tuple[str, OpenAIPlayerSpec]]) -> None:
        askers = [_Asker(url, model, ask_settings(spec), api_key_from_env(spec.api_key_env),
                         matchup) for model, spec in models]
        audit = await _audit_one(url, askers, games)
        findings.extend(audit.findings)
        failed.extend(f.line() for f in audit.findings)
        for finding in audit.findings:
            say(finding.line())
        names = ", ".join(model for model, _ in models)
        left_out = (f"; {plural(audit.failed, 'request')} got no answer, left out"
                    if audit.failed else "")
        if not audit.findings:
            say(f"● serving audit: {url}: {names} answer alike alone and batched together "
                f"({plural(len(games), 'probe position')}{left_out})")
        elif left_out:
            say(f"serving audit: {url}{left_out}")

    async with trio.open_nursery() as nursery:
        for url, models in sorted(servers.items()):
            nursery.start_soon(one, url, models)
    if strict and failed:
        first = failed[0].removeprefix("warning: ")
        more = f" (and {len(failed) - 1} more)" if len(failed) > 1 else ""
        raise ServingAuditFailed(f"{first}{more}; --strict-audit: nothing recorded")
    return findings
