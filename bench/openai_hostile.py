"""Replies recorded for a move they did not answer, against OpenAI-compatible servers that
misbehave on purpose (not a test): ``.venv/bin/python bench/openai_hostile.py [--code DIR]
[--replies N] [MODE ...]``.

The model (``kind = "openai"``, ``constrain = "choice"``) plays Black in two 9x9 games at
once against the heuristic AI, through the referee (``play_game``), until ``N`` of its
requests were asked, against ``tests/players/openai_server.py`` on loopback. Every answer
says which request it answers (``reasoning_content: answers seed S``, the request's own
seed; a stray completion says ``unrequested``), and the record keeps it for every move
(``ReplyDetails.reasoning``), so each recorded reply is checked against the request of
its move: right, unrequested, another request of the same game, or of the other game;
and how many of the wrong ones were played as the model's own moves.

Modes (docs/reliability.md): ``honest``; ``same-write`` (an unrequested completion in the
same write as every answer); ``every-5th`` (after every 5th answer); ``delayed`` (50 ms
after every answer); ``short-length`` (every answer's Content-Length one byte short);
``throttle`` (of two replicas, one answers its first 20 requests with 429 and
``Retry-After: 1``); ``close-reused`` (a request that is not the first on its connection
is closed without a byte); ``deep-json`` (every 4th reply is 200 KB of ``[``).

``--code DIR`` measures the ``orchestrator`` package under DIR (for example main's, from
``git archive main orchestrator | tar -x -C DIR``) with this checkout's hostile server.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _paths(code: str | None) -> None:
    sys.path.insert(0, str(REPO))
    if code:
        sys.path.insert(0, str(Path(code).resolve()))  # its orchestrator; tests from here


MODES = ("honest", "same-write", "every-5th", "delayed", "short-length", "throttle",
         "close-reused", "deep-json")


@dataclass
class Tally:
    asked: int = 0
    recorded: int = 0  # moves with a reply recorded
    right: int = 0
    unrequested: int = 0
    same_game: int = 0  # the answer to another request of the same game
    other_game: int = 0
    wrong_played: int = 0  # wrong replies played as the model's own moves
    fallbacks: Counter = field(default_factory=Counter)
    requests: list[int] = field(default_factory=list)  # per server
    games: int = 0

    @property
    def wrong(self) -> int:
        return self.unrequested + self.same_game + self.other_game


def servers_for(mode: str, OpenAIServer, choose_by_seed) -> list:  # noqa: N803
    def server(**changes):
        return OpenAIServer(reply=choose_by_seed, tag_replies=True, **changes)

    if mode == "same-write":
        return [server(stray_every=1)]
    if mode == "every-5th":
        return [server(stray_every=5)]
    if mode == "delayed":
        return [server(stray_every=1, stray_delay_s=0.05)]
    if mode == "close-reused":
        return [server(close_reused=True)]
    if mode == "throttle":
        busy = server()
        busy.queue(*["throttle"] * 20)
        return [busy, server()]
    return [server()]


async def measure(mode: str, replies: int) -> Tally:
    import trio

    from orchestrator.collect.referee import GameSpec, RefereeSettings, play_game
    from orchestrator.players.heuristic import HeuristicPlayer
    from orchestrator.players.openai import AskSettings, OpenAIEndpoint, OpenAIPlayer
    from orchestrator.players.openai_wire import request_seed
    from orchestrator.prompt import read_template
    from tests.players.openai_server import (
        LOCALHOST,
        UNREQUESTED,
        OpenAIServer,
        answers_seed,
        choose_by_seed,
    )

    servers = servers_for(mode, OpenAIServer, choose_by_seed)
    script = {"short-length": ["short-length"] * 10**4,
              "deep-json": ["answer", "answer", "answer", "deep-json"] * 10**4}.get(mode)
    if script:
        servers[0].queue(*script)
    tally = Tally()
    rules = RefereeSettings(size=9, komi=7.0, move_cap=40, move_timeout_s=10.0,
                            void_after=10**6)
    settings = AskSettings("r5", read_template(None), constrain="choice")
    seeds: dict[str, tuple[int, int]] = {}  # reasoning -> (game, move) of its request
    async with trio.open_nursery() as nursery:
        urls = [f"http://{LOCALHOST}:{await nursery.start(s.serve)}/v1" for s in servers]
        async with OpenAIEndpoint(urls, "r5", slots_per_replica=2) as endpoint:
            model = OpenAIPlayer(endpoint, settings, "vlm")
            players = {"vlm": model, "ai": HeuristicPlayer("ai", seed=1)}
            number = 0

            async def one(game_number: int) -> None:
                game = await play_game(GameSpec(game_number, "vlm", "ai"), game_number,
                                       players, rules, seed=game_number)
                tally.games += 1
                tally.fallbacks.update(game.fallbacks["vlm"])
                for index, move in enumerate(game.moves):
                    details = move.reply
                    if move.color != 1:
                        continue
                    tally.asked += 1
                    if details is None:
                        continue
                    tally.recorded += 1
                    said = details.reasoning
                    if said == answers_seed(request_seed(0, 0, game_number, index + 1)):
                        tally.right += 1
                        continue
                    if said == UNREQUESTED:
                        tally.unrequested += 1
                    elif seeds.get(said or "", (None,))[0] == game_number:
                        tally.same_game += 1
                    else:
                        tally.other_game += 1
                    tally.wrong_played += move.source is None

            while tally.asked < replies:
                pair = (number, number + 1)
                for n in pair:  # every request either game may send, for the tally
                    for move in range(1, rules.move_cap + 1):
                        seeds[answers_seed(request_seed(0, 0, n, move))] = (n, move)
                async with trio.open_nursery() as games:
                    for n in pair:
                        games.start_soon(one, n)
                number += 2
        nursery.cancel_scope.cancel()
    tally.requests = [len(s.seen) for s in servers]
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modes", nargs="*", metavar="MODE",
                        help=f"of {', '.join(MODES)} (default: all)")
    parser.add_argument("--code", metavar="DIR", help="the orchestrator package's parent "
                        "folder to measure (default: this checkout)")
    parser.add_argument("--replies", type=int, default=120, metavar="N",
                        help="requests of the model per mode (default 120)")
    args = parser.parse_args()
    unknown = sorted(set(args.modes) - set(MODES))
    if unknown:
        parser.error(f"unknown mode {', '.join(unknown)}")
    _paths(args.code)
    import trio

    import orchestrator

    print(f"orchestrator from {Path(orchestrator.__file__).parent}")
    for mode in args.modes or MODES:
        t = trio.run(measure, mode, args.replies)
        fallbacks = ", ".join(f"{n} {r}" for r, n in sorted(t.fallbacks.items())) or "none"
        print(f"{mode:13s} asked {t.asked}, recorded {t.recorded}: right {t.right}, wrong "
              f"{t.wrong} ({t.unrequested} unrequested, {t.same_game} same game, "
              f"{t.other_game} other game; {t.wrong_played} played as own moves); "
              f"fallbacks: {fallbacks}; requests per server {t.requests}")


if __name__ == "__main__":
    main()
