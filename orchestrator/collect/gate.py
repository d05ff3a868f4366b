"""``go19 gate``: is the candidate promoted over its baseline? collect's ``[stop] gate``
decision, made again from finished runs: each run's games counted pair by pair in
schedule order (:mod:`.stopping`), the runs one after another in the order given, the
SPRT deciding at the first pair that takes it past a bound with ``min_games`` counted and
counting nothing after (docs/gate.md). Its answer is one line and ``gate.json``.

The settings are the first run's ``[stop] gate`` (from ``run.json``), each overridden by
what the command line gives; a run with no gate needs at least a candidate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from orchestrator.collect.matchup import Gate
from orchestrator.collect.standings import gate_line
from orchestrator.collect.stopping import RuleTally, ScheduleOrder, gate_tally
from orchestrator.events import SprtStatus
from orchestrator.files import atomic_write
from orchestrator.quality.report import QualityReport
from orchestrator.ratings import Pentanomial, RatingsError, Wdl, estimate
from orchestrator.recordings import RUN_FILE
from orchestrator.report import quality
from orchestrator.report.load import RunData, load_run
from orchestrator.report.model import to_json
from orchestrator.words import plural

GATE_FILE = "gate.json"
Decision = Literal["accept", "reject", "undecided"]
DECISIONS: dict[str | None, Decision] = {"H1": "accept", "H0": "reject", None: "undecided"}
Warn = Callable[[str], None]


class GateError(ValueError):
    """Input the gate cannot use; the message is one line."""


@dataclass(frozen=True)
class GateSettings:
    """What the command line sets; None takes the run's ``[stop] gate`` (or its default)."""

    candidate: str | None = None
    elo0: float | None = None
    elo1: float | None = None
    alpha: float | None = None
    beta: float | None = None
    min_games: int | None = None


@dataclass
class GateResult:
    config: Gate
    tally: RuleTally
    runs: list[RunData]
    waiting: dict[str, int]  # per run: finished games after a slot that has none
    without_slot: int  # finished games an older go19 recorded without their slot
    quality: dict | None  # the move-quality verdict over the counted games, with labels

    @property
    def status(self) -> SprtStatus:
        return self.tally.status()

    @property
    def decision(self) -> Decision:
        return DECISIONS[self.status.decision]

    @property
    def line(self) -> str:
        return gate_line(self.status)


def _config(runs: Sequence[RunData], settings: GateSettings) -> Gate:
    stop = runs[0].matchup.get("stop")
    given = stop.get("gate") if isinstance(stop, dict) else None
    merged = dict(given) if isinstance(given, dict) else {}
    merged.update({f.name: getattr(settings, f.name) for f in fields(settings)
                   if getattr(settings, f.name) is not None})
    if "candidate" not in merged:
        raise GateError(f"{runs[0].path}: its matchup has no [stop] gate; name the candidate "
                        "with --candidate NAME")
    try:
        return Gate.model_validate(merged)
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"]) or "settings"
        raise GateError(f"gate {where}: {error['msg'].removeprefix('Value error, ')}") from None


def _pairing(run: RunData) -> tuple[str, str, bool]:
    pairing = run.matchup.get("pairing")
    if not isinstance(pairing, dict) or not pairing.get("black") or not pairing.get("white"):
        raise GateError(f"{run.path}: {RUN_FILE} names no pairing; not a run collect wrote")
    return str(pairing["black"]), str(pairing["white"]), bool(
        pairing.get("alternate_colors", True))


def _check_players(runs: Sequence[RunData], candidate: str) -> tuple[str, str]:
    """The pairing every run plays, the candidate one of its two players."""
    pair: tuple[str, str] | None = None
    for run in runs:
        black, white, alternate = _pairing(run)
        if candidate not in (black, white):
            raise GateError(f"{run.path}: candidate {candidate!r} is not a player of this run "
                            f"({black}, {white})")
        if black == white:
            raise GateError(f"{run.path}: a self-play run ({black}); a gate needs two players")
        if not alternate:
            raise GateError(f"{run.path}: pairing.alternate_colors is false: no colour-swapped "
                            "pairs to count")
        if pair is None:
            pair = (black, white)
        elif {black, white} != set(pair):
            raise GateError(f"{run.path}: plays {black} vs {white}, not {pair[0]} vs "
                            f"{pair[1]} as {runs[0].path}")
    assert pair is not None
    return pair


def _quality(runs: Sequence[RunData], tally: RuleTally, labels: Sequence[Path] | None,
             warn: Warn) -> dict | None:
    """The report's paired move-quality verdict over the games the gate counted."""
    counted = {id(record) for record in tally.counted}
    mine = [RunData(run.path, run.run_id, run.info,
                    [g for g in run.games if id(g.line) in counted]) for run in runs]
    section = quality.pairs_section(mine, [(tally.player, tally.opponent)], labels, warn)
    if not isinstance(section, QualityReport) or not section.head_to_head:
        return None
    pair = section.head_to_head[0]
    return {"games": pair.games, "difference": to_json(pair.difference),
            "better": pair.better, "sentence": pair.sentence,
            "labels": section.labels.folders}


def decide(run_dirs: Sequence[Path], settings: GateSettings,
           labels: Sequence[Path] | None = None, warn: Warn = lambda _: None) -> GateResult:
    """The gate over ``run_dirs``; :class:`GateError` for input it cannot use."""
    if not run_dirs:
        raise GateError("no run folder given")
    for run_dir in run_dirs:
        if not (run_dir / RUN_FILE).is_file():
            what = "no such folder" if not run_dir.exists() else f"no {RUN_FILE}"
            raise GateError(f"{run_dir}: not a go19 run folder ({what})")
    runs = [load_run(run_dir, warn) for run_dir in run_dirs]
    for run in runs:
        if not run.info:
            raise GateError(f"{run.path}: {RUN_FILE} cannot be read")
    config = _config(runs, settings)
    tally = gate_tally(config, _check_players(runs, config.candidate))
    waiting: dict[str, int] = {}
    without_slot = 0
    for run in runs:
        order = ScheduleOrder(2)
        for game in run.games:
            if game.line.slot is None and not game.line.void:
                without_slot += 1
            try:
                for unit in order.add(game.line):
                    tally.count(unit)
            except RatingsError as exc:
                raise GateError(f"{run.path}: {exc}") from None
        waiting[run.run_id] = order.waiting
        if order.waiting:
            warn(f"{run.path}: {plural(order.waiting, 'finished game')} after slot "
                 f"{order.next_slot}, which has none, not counted (`collect --resume` "
                 "plays it)")
    if without_slot:
        warn(f"{plural(without_slot, 'game')} recorded without a slot (an older go19) "
             "not counted")
    return GateResult(config, tally, runs, waiting, without_slot,
                      _quality(runs, tally, labels, warn))


def _num(value: float | None, digits: int = 1) -> float | None:
    """Rounded; infinities kept (``to_json`` writes them ``"+inf"``/``"-inf"``)."""
    return round(value, digits) if value is not None and math.isfinite(value) else value


def _wdl(counts: Wdl) -> dict:
    return {"wins": counts.wins, "losses": counts.losses, "draws": counts.draws}


def gate_json(result: GateResult) -> dict:
    """``gate.json`` (docs/gate.md), as JSON values (infinities as the report writes them)."""
    status, tally, config = result.status, result.tally, result.config
    counts = status.counts
    est = estimate(counts) if counts is not None else None
    return to_json({
        "decision": result.decision,
        "line": result.line,
        "candidate": tally.player,
        "baseline": tally.opponent,
        "runs": [str(run.path) for run in result.runs],
        "sprt": {"elo0": config.elo0, "elo1": config.elo1, "alpha": config.alpha,
                 "beta": config.beta, "model": config.model, "min_games": config.min_games},
        "llr": round(status.llr, 4), "lower": round(status.lower, 4),
        "upper": round(status.upper, 4),
        "games": status.games,
        "pairs": counts.pairs if isinstance(counts, Pentanomial) else 0,
        "results": _wdl(tally.results),
        "as_black": _wdl(tally.as_black),
        "as_white": _wdl(tally.as_white),
        "pentanomial": list(counts.counts) if isinstance(counts, Pentanomial) else [0] * 5,
        "elo": None if est is None or est.elo is None else {
            "value": _num(est.elo), "low": _num(est.elo_low), "high": _num(est.elo_high),
            "error": _num(est.error), "los": _num(est.los, 4)},
        "players": {name: {"illegal": side.illegal, "fallbacks": dict(side.fallbacks),
                           "fallback_moves": sum(side.fallbacks.values())}
                    for name, side in tally.sides.items()},
        "not_counted": {"after_decision": tally.after_decision,
                        "waiting": sum(result.waiting.values()),
                        "without_slot": result.without_slot},
        "quality": result.quality,
    })


def write_gate_json(result: GateResult, path: Path) -> None:
    text = json.dumps(gate_json(result), indent=2, ensure_ascii=False) + "\n"
    atomic_write(path, text.encode())
