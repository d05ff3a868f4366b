"""`go19 serve`: a move engine (heuristic, random or a GTP command) behind a GO19 port, or
(``--engine hf``, :mod:`.serve_hf`) a VLM with LoRA adapters behind several."""

from __future__ import annotations

import argparse
import shlex
import shutil
import signal
import sys

import trio

from orchestrator.commands import SUMMARIES, examples, serve_hf
from orchestrator.players.address import AddressError, check_host
from orchestrator.players.base import Player
from orchestrator.players.gtp import GtpPlayer
from orchestrator.players.heuristic import HeuristicPlayer
from orchestrator.players.player_pool import PlayerPool
from orchestrator.players.random_player import RandomPlayer
from orchestrator.serve import serve_go19
from orchestrator.words import plural

GTP_KOMI = 7.5  # told to a GTP engine when --komi is not given
ENGINE_HELP = ('heuristic, random, gtp:"COMMAND ARGS" (one engine process per slot), or hf '
               '(a transformers VLM with LoRA adapters: see --model)')
DEFAULT_PORT = 5019


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve",
        help=SUMMARIES["serve"],
        description="Answer GO19 requests with the built-in heuristic AI, the random player, "
        "a GTP engine, or a vision-language model and its LoRA adapters (--engine hf, "
        "docs/vlm.md). The first line on stdout is 'serving GO19 on HOST:PORT' (with --engine "
        "hf: the last start-up line, 'serving GO19 on HOST:PORT (ADAPTER), ...').",
        epilog=examples(
            'go19 serve --engine gtp:"/usr/games/gnugo --mode gtp --level 0" --port 5020 '
            "--slots 4",
            "go19 serve --engine hf --model models/Qwen3-VL-8B-Instruct --adapter "
            "r5=loras/r5 --adapter r4=loras/r4 --listen r5=:5019 --listen r4=:5020 "
            "--openai :8000",
        ),
    )
    parser.add_argument("--engine", default="heuristic", help=ENGINE_HELP)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on "
                        "(default 127.0.0.1; 0.0.0.0 for every interface)")
    parser.add_argument("--port", type=int, default=None,
                        help=f"TCP port; 0 picks a free one (default {DEFAULT_PORT}; "
                        "--engine hf takes --listen instead)")
    parser.add_argument("--slots", type=int, default=1, help="engine computations at once")
    parser.add_argument("--delay-ms", type=float, default=0.0, help="hold each answer back")
    parser.add_argument("--seed", type=int, default=None, help="seed of heuristic/random, and of "
                        "--engine hf's sampling (default: a fresh one at each start)")
    parser.add_argument("--level", type=int, default=2, help="heuristic level (0..2)")
    parser.add_argument("--komi", type=float, default=None,
                        help="komi told to GTP engines (default 7.5); --engine hf: written "
                        "where the prompt template shows {komi}, which a GO19 request does "
                        "not carry (no default: such a template needs it)")
    parser.add_argument("--size", type=int, action="append", dest="sizes", metavar="N",
                        help="board size to accept (repeatable; default 19)")
    parser.add_argument("--idle-timeout", type=float, default=60.0, metavar="S",
                        help="drop a connection silent this long between requests")
    parser.add_argument("--frame-timeout", type=float, default=10.0, metavar="S",
                        help="drop a connection that takes this long to finish a frame")
    parser.add_argument("--max-connections", type=int, default=256, metavar="N",
                        help="close new connections at once beyond N open ones (default 256)")
    parser.add_argument("--partial-budget-mib", type=float, default=256.0, metavar="MIB",
                        help="memory for unfinished frames of all connections together; over "
                        "it, the connection whose frame started first is dropped (default 256)")
    parser.add_argument("--quiet", action="store_true", help="no per-connection log on stderr")
    serve_hf.add_arguments(parser)
    parser.set_defaults(func=run)


def make_engine(spec: str, slots: int, seed: int | None, level: int) -> Player:
    """The engine named on the command line; ValueError says what is wrong with it."""
    if spec == "heuristic":
        return HeuristicPlayer(spec, seed=seed, level=level)
    if spec == "random":
        return RandomPlayer(spec, seed=seed)
    if spec.startswith("gtp:"):
        argv = shlex.split(spec[4:])
        if not argv:
            raise ValueError('gtp: needs a command, e.g. gtp:"/usr/games/gnugo --mode gtp"')
        if shutil.which(argv[0]) is None:
            raise ValueError(f"GTP engine {argv[0]!r} not found or not executable")
        players = [GtpPlayer(f"gtp#{i}", argv) for i in range(slots)]
        return PlayerPool("gtp", players)
    raise ValueError(f"unknown engine {spec!r}; expected {ENGINE_HELP}")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


class _Announce(trio.TaskStatus[int]):
    """The ``task_status`` of serve_go19: print the bound address once listening.

    Used instead of ``nursery.start`` so a failure to listen surfaces as a plain OSError.
    """

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args

    def started(self, port: int | None = None) -> None:
        args = self.args
        host = f"[{args.host}]" if ":" in args.host else args.host
        print(f"serving GO19 on {host}:{port} (engine {args.engine}, {plural(args.slots, 'slot')})",
              flush=True)


async def _serve(args: argparse.Namespace, engine: Player) -> None:
    try:
        await serve_go19(
            engine, args.host, args.port,
            komi=GTP_KOMI if args.komi is None else args.komi,
            slots=args.slots, delay_ms=args.delay_ms,
            idle_timeout=args.idle_timeout, frame_timeout=args.frame_timeout,
            max_connections=args.max_connections,
            partial_budget=int(args.partial_budget_mib * (1 << 20)),
            allowed_sizes=args.sizes or (19,),
            log=(lambda _: None) if args.quiet else _stderr,
            task_status=_Announce(args),
        )
    finally:
        with trio.CancelScope(shield=True):
            await engine.aclose()


def run(args: argparse.Namespace) -> int:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # A background job of a non-interactive shell (`go19 serve &` in a script) starts
        # with SIGINT ignored: a server stops on it all the same, as in the foreground.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.engine == "hf":
        return serve_hf.run(args)
    misplaced = serve_hf.given_options(args)
    if misplaced:
        print(f"serve: {misplaced[0]} is an option of --engine hf", file=sys.stderr)
        return 2
    if args.port is None:
        args.port = DEFAULT_PORT
    problems = [
        f"--{name} must be {rule}"
        for name, bad, rule in (
            ("slots", args.slots < 1, "at least 1"),
            ("port", not 0 <= args.port < 65536, "in 0..65535"),
            ("delay-ms", args.delay_ms < 0, "zero or more"),
            ("level", args.level not in (0, 1, 2), "0, 1 or 2"),
            ("idle-timeout", not args.idle_timeout > 0, "positive"),
            ("frame-timeout", not args.frame_timeout > 0, "positive"),
            ("max-connections", args.max_connections < 1, "at least 1"),
            ("partial-budget-mib", not args.partial_budget_mib > 0, "positive"),
            ("size", any(not 2 <= s <= 25 for s in args.sizes or ()), "in 2..25"),
        )
        if bad
    ]
    if problems:
        print(f"serve: {problems[0]}", file=sys.stderr)
        return 2
    try:
        args.host = check_host(args.host)
    except AddressError as exc:
        print(f"serve: --host: {exc}", file=sys.stderr)
        return 2
    try:
        engine = make_engine(args.engine, args.slots, args.seed, args.level)
    except ValueError as exc:
        print(f"serve: {exc}", file=sys.stderr)
        return 2
    try:
        trio.run(_serve, args, engine)
    except OSError as exc:
        print(f"serve: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}",
              file=sys.stderr)
        return 2  # as go19 play and collect --web: the address given cannot be used
    return 0
