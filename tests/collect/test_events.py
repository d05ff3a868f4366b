"""Every event of orchestrator/events.py has its wording in collect/standings.py (the one
place events become words), and the run state hands each event to its subscribers after
taking it in."""

from __future__ import annotations

import inspect

from orchestrator import events
from orchestrator.collect.standings import has_words, stop_reason, words
from orchestrator.collect.state import RunState
from orchestrator.events import Event, Fallback, MovePlayed, RunStop, SprtAccepted, SprtStatus
from orchestrator.move_record import MoveRecord


def _subclasses(base: type) -> list[type]:
    return [cls for _, cls in inspect.getmembers(events, inspect.isclass)
            if issubclass(cls, base) and cls is not base]


def test_every_event_has_words_and_every_stop_a_reason() -> None:
    missing = [cls.__name__ for cls in _subclasses(Event) if not has_words(cls)]
    assert not missing, f"no wording in collect/standings.py for {missing}"
    default_reason = stop_reason.dispatch(RunStop)
    missing = [cls.__name__ for cls in _subclasses(RunStop)
               if stop_reason.dispatch(cls) is default_reason]
    assert not missing, f"no stop_reason in collect/standings.py for {missing}"


def test_subscribers_hear_events_after_the_state_took_them_in() -> None:
    state = RunState(run_id="r", target=2, players=["a", "b"])
    seen: list[tuple[Event, int, object]] = []
    state.subscribe(lambda e: seen.append((e, len(state.latency.get("a", ())), state.stop)))
    move = MovePlayed(1, 1, "a", MoveRecord(1, 40, ms=12.5))
    sprt = SprtStatus("a", "b", 0.0, 30.0, 3.1, -2.94, 2.94, "H1", games=40)
    state.emit(move)
    state.emit(Fallback(1, 2, "b", "timeout"))
    state.emit(SprtAccepted(sprt))
    assert seen == [(move, 1, None), (Fallback(1, 2, "b", "timeout"), 1, None),
                    (SprtAccepted(sprt), 1, SprtAccepted(sprt))]
    assert list(state.latency["a"]) == [12.5]
    assert words(move) is None  # moves are not logged
    assert words(SprtAccepted(sprt)) == (
        "stopping: SPRT accepted H1: a vs b [0, 30]: LLR +3.10 (-2.94, +2.94) over 40 games")
