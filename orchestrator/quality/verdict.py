"""The quality verdict in words: who loses fewer points a move, by how much, how sure.

    strong loses 0.9 points a move less than weak [0.5, 1.3] over 40 games — strong plays better.

The interval is :func:`orchestrator.quality.summary.loss_difference`'s (a bootstrap over
games); "plays better" is said only when it excludes 0. The report's verdict box and the
live quality line both word it here.
"""

from __future__ import annotations

import math

from orchestrator.quality.running import PlayerLoss, QualityStatus
from orchestrator.quality.summary import Interval
from orchestrator.words import plural


def _points(value: float) -> str:
    return f"{value:.1f}".replace("-", "−")


def _bounds(d: Interval, sign: float) -> str:
    low, high = sorted((sign * d.low, sign * d.high))
    return f"[{_points(low)}, {_points(high)}]"


def better(player: str, opponent: str, d: Interval) -> str | None:
    """The player whose moves lose fewer points, if the interval says so (``d`` is the
    opponent's mean loss minus the player's)."""
    if not d.excludes_zero:
        return None
    return player if d.low > 0 else opponent


def sentence(player: str, opponent: str, d: Interval, games: int) -> str:
    """One sentence for ``d`` = ``opponent``'s mean point loss minus ``player``'s over
    ``games`` games."""
    if not math.isfinite(d.value):
        return f"No labelled moves of both {player} and {opponent} yet."
    over = f"over {plural(games, 'game')}"
    if not math.isfinite(d.low):
        return (f"{player} loses {_points(abs(d.value))} points a move "
                f"{'less' if d.value >= 0 else 'more'} than {opponent} {over}; too few "
                "games for an interval.")
    less = d.value >= 0
    text = (f"{player} loses {_points(abs(d.value))} points a move "
            f"{'less' if less else 'more'} than {opponent} {_bounds(d, 1 if less else -1)} "
            f"{over}")
    winner = better(player, opponent, d)
    if winner is None:
        return f"Undecided: {text}; more games needed."
    return f"{text} — {winner} plays better."


def _loss(p: PlayerLoss) -> str:
    i = p.mean_loss
    if not math.isfinite(i.value):
        return f"{p.player} n/a"
    bounds = f" [{_points(i.low)}, {_points(i.high)}]" if math.isfinite(i.low) else ""
    return f"{p.player} {_points(i.value)}{bounds}"


def quality_line(status: QualityStatus) -> str:
    """The live quality line (``collect --review``: the dashboard, the plain log, the watch
    page): each player's mean point loss a move with its interval, then the paired verdict
    as :func:`sentence` words it."""
    losses = ", ".join(_loss(p) for p in status.players)
    line = (f"move quality over {plural(status.games, 'reviewed game')}: {losses} points "
            "lost a move")
    if status.pair is not None:
        pair = status.pair
        line += f"; {sentence(pair.player, pair.opponent, pair.difference, pair.games)}"
    return line
