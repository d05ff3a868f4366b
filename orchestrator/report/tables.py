"""The report's tables and key lines as plain strings, shared by the Markdown and
HTML writers so both say exactly the same thing. Input is the typed report
(:class:`~orchestrator.report.model.Report`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from orchestrator.ratings import EloEstimate
from orchestrator.report.model import GameRow, HeadToHead, Ratings, Report, Results
from orchestrator.words import plural


@dataclass(frozen=True)
class Table:
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


def name(report: Report, player: object) -> str:
    """The player's key with its adapter/model (or engine), as people know it."""
    return report.labels.get(str(player), str(player))


def show_ratings(report: Report) -> bool:
    """The ratings table is for several players or several runs; two players in one
    run get the head-to-head section instead."""
    return bool(report.ratings) and (len(report.players) > 2 or len(report.runs) > 1)


def elo(value: float | None, digits: int = 1) -> str:
    if value is None:
        return "n/a"
    if math.isinf(value):
        return "+∞" if value > 0 else "-∞"
    return f"{value:+.{digits}f}"


NO_INTERVAL = "too few games for an interval"


def plus_minus(value: float | None, error: float | None) -> str:
    if error is None or math.isinf(error):
        return f"{elo(value)} ({NO_INTERVAL})" if value is not None else "n/a"
    return f"{elo(value)} ± {error:.1f}"


def elo_interval(est: EloEstimate) -> str:
    """``+147.2 ± 387.4``; with an open end (a few lopsided games) the bounds instead."""
    if est.error is not None and math.isinf(est.error) and est.elo_low is not None:
        return f"{elo(est.elo)} (95 %: {elo(est.elo_low)} to {elo(est.elo_high)})"
    return plus_minus(est.elo, est.error)


def pct(value: float | None, digits: int = 1) -> str:
    return "n/a" if value is None else f"{100 * value:.{digits}f} %"


def ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def wld(results: Results) -> str:
    text = f"{results.wins}–{results.losses}"
    return text + (f"–{results.draws}" if results.draws else "")


def title(report: Report) -> str:
    runs = report.runs
    if len(runs) == 1:
        return f"go19 report: {runs[0].run_id}"
    return f"go19 report: {len(runs)} runs combined"


def runs_table(report: Report) -> Table:
    rows = []
    for run in report.runs:
        pairing = run.pairing
        black, white = (pairing.black, pairing.white) if pairing else ("?", "?")
        rows.append((
            run.run_id,
            f"{name(report, black)} vs {name(report, white)}",
            str(run.size or "?"), str(run.komi if run.komi is not None else "?"),
            str(run.finished), str(run.void),
            str(run.games_target if run.games_target is not None else "?"),
            str(run.started or "?"),
        ))
    return Table(("run", "pairing", "size", "komi", "finished", "void", "target", "started"),
                 tuple(rows))


def totals_table(report: Report) -> Table:
    t = report.totals
    rows = [
        ("games recorded", str(t.games)),
        ("finished (not void)", str(t.finished)),
        ("void (too many fallbacks)", str(t.void)),
        ("rated (a result, two players)", str(t.rated)),
        ("draws (jigo)", str(t.draws)),
        ("finished without a result", str(t.no_result)),
        ("self-play", str(t.self_play)),
        ("moves played", str(t.moves)),
    ]
    return Table(("", "count"), tuple(rows))


def termination_table(report: Report) -> Table:
    total = sum(report.termination.values()) or 1
    rows = tuple((reason, str(n), pct(n / total)) for reason, n in report.termination.items())
    return Table(("ended by", "games", "share"), rows)


def head_to_head_lines(section: HeadToHead) -> list[tuple[str, str]]:
    est, per_game = section.estimate, section.estimate_games
    kind = section.counts
    lines = [
        ("games", f"{section.games} ({wld(section.results)} W–L"
                  f"{'–D' if section.results.draws else ''} for {section.player})"),
        ("score", pct(est.score)),
        ("Elo (95 %)", elo_interval(est)),
        ("LOS", pct(est.los)),
        ("nElo", plus_minus(est.nelo, est.nelo_error)),
        ("counted as", f"{est.samples} {kind[:-1] if est.samples == 1 else kind}"),
    ]
    if section.pentanomial is not None:
        lines.append(("pentanomial (0, ½, 1, 1½, 2 points)",
                      " ".join(str(c) for c in section.pentanomial)))
        lines.append(("Elo per game, unpaired",
                      f"{elo_interval(per_game)}, LOS {pct(per_game.los)}"))
    for s in section.sprt:
        lines.append((
            f"SPRT [{s.elo0:g}, {s.elo1:g}] ({s.run})",
            f"{s.status}: LLR {s.llr:+.2f} in ({s.lower:+.2f}, {s.upper:+.2f}), "
            f"α={s.alpha:g} β={s.beta:g}, {s.model}, {s.samples} {s.counts}",
        ))
    return lines


def ratings_table(report: Report) -> Table:
    """Ranked within each group of connected players (a "group" column when several)."""
    ratings = report.ratings
    assert isinstance(ratings, Ratings)
    rows = []
    grouped = len(ratings.groups) > 1
    ranks: dict[int, int] = {}
    for row in ratings.rows:
        group = row.group or 0
        rank = ranks[group] = ranks.get(group, 0) + 1
        rows.append((
            *((str(group + 1),) if grouped else ()),
            str(rank), name(report, row.fit.player), elo(row.fit.elo), f"{row.fit.stderr:.1f}",
            str(row.fit.games), f"{row.fit.wins}–{row.fit.losses}–{row.fit.draws}",
            pct(row.los_next) if row.los_next is not None else "",
        ))
    return Table((*(("group",) if grouped else ()), "#", "player", "Elo", "± (1σ)", "games",
                  "W–L–D", "LOS over next"), tuple(rows))


def ratings_note(report: Report) -> str:
    r = report.ratings
    assert isinstance(r, Ratings)
    anchor = ", ".join(f"{k} = {v:g}" for k, v in r.anchor.items())
    groups = len(r.groups)
    if groups > 1:
        anchor += (f"; the players form {groups} groups that never met (directly or through "
                   "common opponents), each rated on its own scale: compare ratings only "
                   "within a group")
    text = f"Anchor: {anchor}" + (" (default: the first player by name; choose with "
                                  "--anchor PLAYER=ELO)" if r.anchor_default else "") + "."
    if r.black_advantage is not None:
        text += (f" Black's advantage: {elo(r.black_advantage)} ± "
                 f"{r.black_advantage_stderr:.1f} Elo (1σ).")
    return f"{r.method}. {text}"


def color_table(report: Report) -> Table:
    rows = []
    for player, p in report.players.items():
        rows.append((name(report, player), wld(p.results), wld(p.as_black), wld(p.as_white),
                     pct(_score(p.as_black)), pct(_score(p.as_white))))
    return Table(("player", "W–L overall", "as Black", "as White", "score as Black",
                  "score as White"), tuple(rows))


def _score(results: Results) -> float | None:
    games = results.games
    return (results.wins + 0.5 * results.draws) / games if games else None


def lengths_line(report: Report) -> str:
    lengths = report.lengths
    if not lengths.games:
        return "No finished games."
    assert lengths.mean is not None and lengths.median is not None
    return (f"{lengths.games} finished games: {lengths.min} to {lengths.max} moves, "
            f"mean {lengths.mean:.1f}, median {lengths.median:g}.")


def fallback_table(report: Report) -> Table:
    rows = []
    for player, p in report.players.items():
        asked = str(p.moves_asked)
        if p.moves_asked_estimated_games:
            asked += f" (≈, {p.moves_asked_estimated_games} games without SGF)"
        reasons = ", ".join(f"{r} {c} ({pct(p.fallback_rate_by_reason[r], 2)})"
                            for r, c in p.fallbacks.items() if c)
        rows.append((name(report, player), asked,
                     f"{p.fallback_total} ({pct(p.fallback_rate, 2)})",
                     f"{p.illegal} ({pct(p.illegal_rate, 2)})", reasons or "none"))
    return Table(("player", "moves asked", "fallbacks", "illegal replies", "by reason"),
                 tuple(rows))


def latency_table(report: Report) -> Table:
    rows = []
    for player, p in report.players.items():
        lat = p.latency_ms
        endpoint = ", ".join(p.endpoints) or p.meta.get("command") or p.kind or "?"
        rows.append((name(report, player), endpoint, str(lat.n), ms(lat.p50), ms(lat.p95),
                     ms(lat.p99), ms(lat.max)))
    return Table(("player", "endpoint", "replies", "p50 ms", "p95 ms", "p99 ms", "max ms"),
                 tuple(rows))


def tokens_table(report: Report) -> Table | None:
    """Tokens per move and per game of the players whose records have them (None when no
    player's do: the table is left out); "–" where their replies gave no usage."""
    rows = []
    for player, p in report.players.items():
        tok = p.tokens
        if tok is None:
            continue
        rows.append((name(report, player), str(tok.moves), str(tok.games),
                     _per(tok.prompt_per_move), _per(tok.completion_per_move),
                     _per(tok.prompt_per_game), _per(tok.completion_per_game)))
    if not rows:
        return None
    return Table(("player", "replies with usage", "games with usage", "prompt tokens/move",
                  "completion tokens/move", "prompt tokens/game", "completion tokens/game"),
                 tuple(rows))


def _per(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


SAID_SHOWN = 3  # notes per player in a game's row
SAID_CHARS = 60


def said_text(said: dict[str, list[dict]]) -> str:
    """What the models said on their fallback moves, e.g. ``b said 'D4' (move 4,
    illegal:occupied)``, a few per player, each cut short."""
    parts = []
    for player, notes in sorted(said.items()):
        for note in notes[:SAID_SHOWN]:
            text = " ".join((note.get("reply") or "").split())
            if len(text) > SAID_CHARS:
                text = text[:SAID_CHARS] + "…"
            parts.append(f"{player} said {text!r} (move {note['move']}, {note['reason']})")
        if len(notes) > SAID_SHOWN:
            parts.append(f"{len(notes) - SAID_SHOWN} more")
    return "; ".join(parts)


def verdict_lines(report: Report) -> list[tuple[str, str]]:
    """The verdict box's key lines (its sentence is ``report.verdict.sentence``)."""
    v = report.verdict
    assert v is not None
    r = v.results
    counted = f"{v.kind}, {plural(v.samples, v.counts[:-1], v.counts)}"
    if v.elo_low is None or v.elo_high is None:
        estimate = f"{elo(v.elo)} ({counted}; {NO_INTERVAL})"
    else:
        estimate = f"{elo(v.elo)} [{elo(v.elo_low)}, {elo(v.elo_high)}] ({counted})"
    lines = [
        ("stronger", name(report, v.stronger) if v.stronger else "not decided yet"),
        (f"Elo of {v.player} (95 %)", estimate),
        ("LOS", pct(v.los)),
        ("games", f"{v.games}: {wld(r)} W–L{'–D' if r.draws else ''} for {v.player}"),
    ]
    s = v.sprt
    if s is not None:
        at = f" at game {s.decided_at}" if s.decided_at else ""
        lines.append((f"SPRT [{s.elo0:g}, {s.elo1:g}]",
                      f"{s.status}{at}: LLR {s.llr:+.2f} in ({s.lower:+.2f}, {s.upper:+.2f})"))
    return lines


def duration(seconds: float) -> str:
    h, rem = divmod(int(round(seconds)), 3600)
    return f"{h} h {rem // 60:02d} min" if h else f"{rem // 60} min {rem % 60:02d} s"


def pace_line(report: Report) -> str:
    pace = report.pace
    if not pace.duration_s:
        return "Run duration unknown (no game timestamps)."
    assert pace.games_per_hour is not None and pace.moves_per_s is not None
    return (f"Run duration {duration(pace.duration_s)} (first game started to last "
            f"finished): {_rate(pace.games_per_hour)} games/hour, "
            f"{_rate(pace.moves_per_s)} moves/s.")


def _rate(value: float) -> str:
    return f"{value:.0f}" if value >= 100 else f"{value:.3g}"


def games_table(report: Report, sgf_cell: Callable[[GameRow], str]) -> Table:
    """Every recorded game; ``sgf_cell(row)`` writes the SGF column (a link, a path)."""
    several = len(report.runs) > 1
    rows = []
    for g in report.games:
        fb = ", ".join(f"{n} {c}" for n, c in sorted(g.fallbacks.items())) or "0"
        if g.said:
            fb += f": {said_text(g.said)}"
        rows.append((
            *((g.run,) if several else ()), str(g.game),
            "" if g.pair is None else str(g.pair), g.black, g.white,
            g.result, g.reason, str(g.moves), fb, sgf_cell(g),
        ))
    return Table((*(("run",) if several else ()), "game", "opening pair", "black", "white",
                  "result", "ended by", "moves", "fallbacks", "SGF"), tuple(rows))


PAIR_POINTS = {0.0: "0 (lost both)", 0.5: "½", 1.0: "1 (one each)", 1.5: "1½",
               2.0: "2 (won both)"}


def pairs_table(section: HeadToHead) -> Table:
    rows = []
    for p in section.pairs:
        rows.append((str(p.pair), p.opening, ", ".join(map(str, p.games)), ", ".join(p.results),
                     "incomplete" if p.points is None else PAIR_POINTS[p.points]))
    return Table(("pair", "opening", "games", "results", f"points for {section.player}"),
                 tuple(rows))
