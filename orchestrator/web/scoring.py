"""The scoring phase of ``go19 play``: a game with a human seat that ends counted (two
passes, or the move cap) is not scored as its stones stand. As on OGS and in KaTrain, the
page proposes the dead stones, the players mark groups dead or alive, and the confirmed
count is the result.

The proposal is the rule collect scores dead stones by (``[adjudicate]``): KataGo's
dead-chain rule (:func:`~orchestrator.rules.dead_stones.dead_chains`) on a Black-view
ownership map. The map is the estimate's end-of-play one
(:func:`~orchestrator.rules.estimate.final_ownership`) at once, and KataGo's
(:mod:`.katago`) once it answers, when ``go19 play`` has a KataGo and nobody has marked a
group yet. A click marks a whole string (the stones of one colour connected along the
lines). The confirmed game's record is collect's: ``result``, ``winner`` and ``score``
are the count with the dead stones lifted, its ``adjudication`` has the plain area count
beside it (``area_result``, ``adjudicated_result``, ``dead_stones``, ``flipped``), as a
collect game whose dead stones KataGo scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from orchestrator.color import EMPTY
from orchestrator.recordings import Adjudication
from orchestrator.rules.dead_stones import AdjudicatedScore, dead_chains, without
from orchestrator.rules.estimate import final_ownership
from orchestrator.rules.game import Game
from orchestrator.rules.scoring import tromp_taylor

if TYPE_CHECKING:  # what play_game returns, only named in annotations
    from orchestrator.collect.referee import RefereedGame

ESTIMATE = "the estimate"


class Scoring:
    """One game's scoring phase: the final board, the stones marked dead, who proposed
    them, and whether a player has changed the proposal."""

    def __init__(self, game: Game) -> None:
        self.board = game.board
        self.komi = game.komi
        self.dead: set[int] = set()
        self.source = ESTIMATE
        self.touched = False  # a player marked a group: a later proposal does not replace it
        self.waiting: str | None = None  # the proposer still looking (KataGo), by name
        self.propose(final_ownership(self.board), ESTIMATE)

    def propose(self, ownership: Sequence[float], source: str) -> bool:
        """The dead chains of ``ownership`` (Black's view) marked, unless a player has
        marked groups already (then False and nothing changes)."""
        if self.touched:
            return False
        self.dead = {p for chain in dead_chains(self.board, ownership) for p in chain}
        self.source = source
        return True

    def proposed(self, ownership: Sequence[float]) -> int:
        """How many stones ``ownership`` calls dead (the marks left as they are)."""
        return sum(len(chain) for chain in dead_chains(self.board, ownership))

    def toggle(self, point: int) -> tuple[frozenset[int], bool]:
        """Mark the string at ``point`` dead, or alive again: its stones, and whether they
        are dead now. ValueError on an empty point."""
        if self.board[point] == EMPTY:
            raise ValueError("no stone")
        stones = frozenset(self.board.group_at(point).stones)
        now_dead = not stones <= self.dead
        if now_dead:
            self.dead |= stones
        else:
            self.dead -= stones
        self.touched = True
        return stones, now_dead

    def chains(self) -> tuple[frozenset[int], ...]:
        """The dead stones by string, ordered by their lowest point."""
        seen: dict[int, frozenset[int]] = {}
        for point in self.dead:
            group = self.board.group_at(point)
            seen.setdefault(id(group), frozenset(group.stones))
        return tuple(sorted(seen.values(), key=min))

    @property
    def proposer(self) -> str:
        """Who proposed the marks, as the record says it: "estimate" or "katago"."""
        return "estimate" if self.source == ESTIMATE else "katago"

    def score(self) -> AdjudicatedScore:
        """The plain area count and the count with the marked stones lifted."""
        lifted = without(self.board, self.dead) if self.dead else self.board
        return AdjudicatedScore(tromp_taylor(self.board, self.komi),
                                tromp_taylor(lifted, self.komi), self.chains())


def scored(outcome: RefereedGame, score: AdjudicatedScore, proposed_by: str,
           players_changed: bool) -> RefereedGame:
    """The referee's game with the confirmed count as its result, recorded as collect
    records a game whose dead stones were scored, with who proposed them and whether a
    player changed the proposal."""
    counted = score.adjudicated
    record = Adjudication(area_result=score.plain.result, adjudicated_result=counted.result,
                          dead_stones=sum(len(chain) for chain in score.dead),
                          flipped=score.flipped,
                          proposed_by=proposed_by, players_changed=players_changed)
    return replace(outcome, result=counted.result, winner=counted.winner,
                   score=counted.margin, adjudication=record)
