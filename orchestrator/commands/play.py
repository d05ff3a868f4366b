"""`go19 play`: see and play games in the browser (needs the `web` extra)."""

from __future__ import annotations

import argparse
import signal
import sys
import webbrowser
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from orchestrator.collect.matchup import Adjudicate
from orchestrator.commands import SUMMARIES, add_katago_files, positive_int, positive_seconds
from orchestrator.players.address import AddressError, check_host, is_loopback

if TYPE_CHECKING:
    from orchestrator.web.server import PlayKataGo

DEAD_VISITS = Adjudicate.model_fields["dead_visits"].default  # collect's [adjudicate]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "play",
        help=SUMMARIES["play"],
        description="Serve one page for playing Go in the browser: human vs human, human vs "
        "AI, AI vs VLM, human vs VLM and VLM vs VLM (GO19 servers), with the live estimate, "
        "connection checks and training mode (finished games saved as SGF under "
        "--recordings). A game with a human that ends by two passes is scored by the "
        "players: the dead stones are proposed (KataGo's ownership when there is a "
        "KataGo, else the estimate's), marked on the board, and confirmed. Prints the "
        "page's URL; Ctrl-C stops.",
        epilog="examples:\n  go19 play --open\n"
        "  go19 play --host 0.0.0.0 --port 8019 --allow-host mybox.lan",
    )
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default 127.0.0.1; the page has no "
                        "authentication)")
    parser.add_argument("--port", type=int, default=8019, help="port (default 8019; 0: any)")
    parser.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                        help="another Host name the page may be reached by (repeatable; "
                        "default: the loopback names and --host): any other is refused, "
                        "so that no web site can drive the page by rebinding its name")
    parser.add_argument("--open", action="store_true", help="open the page in a browser")
    parser.add_argument("--recordings", type=Path, default=Path("recordings"),
                        help="where training mode saves games (default recordings/)")
    dead = parser.add_argument_group(
        "dead stones", "KataGo proposes the dead stones at the end of a game with a human "
        "(started at the first one, its log in RECORDINGS/logs/play-katago.log); without "
        "one, the estimate does")
    add_katago_files(dead, "the one `make katago` prepared, if any")
    dead.add_argument("--dead-visits", type=positive_int, default=DEAD_VISITS, metavar="N",
                      help=f"KataGo's visits on the final position (default {DEAD_VISITS}, "
                      "as collect's [adjudicate])")
    dead.add_argument("--no-katago", action="store_true",
                      help="the estimate's proposal only, even with a KataGo prepared")
    dead.add_argument("--katago-timeout", type=positive_seconds,
                      default=Adjudicate.model_fields["timeout"].default, metavar="S",
                      help="seconds per visit KataGo may stay silent before it is taken "
                      "for hung: the estimate's proposal stands then (default "
                      f"{Adjudicate.model_fields['timeout'].default:g})")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if not 0 <= args.port < 65536:
        print("play: --port must be in 0..65535", file=sys.stderr)
        return 2
    try:
        args.host = check_host(args.host)
    except AddressError as exc:
        print(f"play: --host: {exc}", file=sys.stderr)
        return 2
    try:
        from orchestrator.web.server import (
            NAMES_NOTE,
            NO_AUTH_WARNING,
            WILDCARDS,
            allowed_names_problem,
            serve_play,
            trusted_hosts,
        )
    except ImportError as exc:
        print(f"play: the web extra is not installed ({exc.name} missing): "
              ".venv/bin/pip install -e '.[web]'", file=sys.stderr)
        return 2
    problem = allowed_names_problem(args.allow_host)
    if problem:
        print(f"play: --allow-host: {problem}", file=sys.stderr)
        return 2
    katago = _katago(args)
    if isinstance(katago, str):
        print(f"play: {katago}", file=sys.stderr)
        return 2
    if not is_loopback(args.host):
        print(NO_AUTH_WARNING.format(host=args.host), file=sys.stderr)
        if args.host.strip("[]") in WILDCARDS:
            names = ", ".join(trusted_hosts(args.host, args.allow_host))
            print(NAMES_NOTE.format(names=names, option="allow-host"), file=sys.stderr)

    failed: list[OSError] = []

    async def main() -> None:
        # Hypercorn takes a KeyboardInterrupt as its own shutdown and returns, which would
        # leave the games running: the signal ends everything here instead. The receiver
        # is in place before the URL is printed, so any Ctrl-C after that is clean.
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                try:
                    url, _ = await nursery.start(partial(
                        serve_play, args.host, args.port, args.recordings, args.allow_host,
                        katago))
                except OSError as exc:
                    failed.append(exc)
                    return
                print(f"go19 play: {url}  (Ctrl-C to stop)", flush=True)
                print("  dead stones at the end: " + (
                    "the estimate's" if katago is None else
                    f"KataGo's ({katago.binary}, {katago.visits} visits), the estimate's "
                    "until it answers"), flush=True)
                if args.open:
                    webbrowser.open(url)
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    return

    trio.run(main)
    if failed:
        print(f"play: cannot listen on {args.host}:{args.port}: "
              f"{failed[0].strerror or failed[0]}", file=sys.stderr)
        return 2
    return 0


def _katago(args: argparse.Namespace) -> PlayKataGo | None | str:
    """The KataGo of the scoring phase: the one named, else the one ``make katago``
    prepared; None without one (or with --no-katago); why not, for named files that are
    missing."""
    from orchestrator.label.config import prepared_katago
    from orchestrator.label.job import KataGoChoice
    from orchestrator.label.store import LabelError
    from orchestrator.web.server import PlayKataGo

    named = any((args.katago, args.model, args.config))
    if args.no_katago:
        if named:
            return "--no-katago with --katago/--model/--config: choose one"
        return None
    if not named and prepared_katago() is None:
        return None
    try:
        files = KataGoChoice(args.katago, args.model, args.config).files(
            args.recordings / "logs" / "play-katago.log")
    except LabelError as exc:
        return str(exc)
    return PlayKataGo(files.binary, files.model, files.config,
                      files.log, args.dead_visits,
                      args.katago_timeout)
