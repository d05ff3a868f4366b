"""`go19 ping HOST:PORT...`: one GO19 PING per endpoint, like the seed client's check."""

from __future__ import annotations

import argparse
import sys

import trio
from rich.console import Console
from rich.text import Text

from orchestrator.commands import examples
from orchestrator.players.address import AddressError, format_address, parse_hostport
from orchestrator.players.ping import Result, ping_once, ping_text


def parse_address(text: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port``; ValueError names the culprit."""
    try:
        return parse_hostport(text)
    except AddressError as exc:
        raise ValueError(f"bad endpoint {text!r}: {exc}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ping",
        help="check GO19 endpoints with one PING each",
        description="Connect to each GO19 endpoint, send PING and wait for PONG. Prints "
        "'● OK host:port (NN ms)' or '● FAILED host:port: reason (NN ms)'; exits 1 if any failed.",
        epilog=examples("go19 ping 127.0.0.1:5019", "go19 ping gpu1:5019 gpu2:5019 --timeout 30"),
    )
    parser.add_argument("endpoints", nargs="+", metavar="HOST:PORT",
                        help="GO19 endpoint ([v6 address]:port for IPv6)")
    parser.add_argument(
        "--timeout", type=float, default=5.0, metavar="S",
        help="seconds allowed per endpoint for connect + PING (default 5)",
    )
    parser.set_defaults(func=run)


async def check_all(addresses: list[tuple[str, int]], timeout: float) -> list[Result]:
    results: list[Result] = [(False, "not checked", 0.0)] * len(addresses)

    async def one(i: int) -> None:
        results[i] = await ping_once(addresses[i], timeout)

    async with trio.open_nursery() as nursery:
        for i in range(len(addresses)):
            nursery.start_soon(one, i)
    return results


def run(args: argparse.Namespace) -> int:
    if not args.timeout > 0:
        print("ping: --timeout must be positive", file=sys.stderr)
        return 2
    try:
        addresses = [parse_address(text) for text in args.endpoints]
    except ValueError as exc:
        print(f"ping: {exc}", file=sys.stderr)
        return 2
    results = trio.run(check_all, addresses, args.timeout)
    console = Console(highlight=False, soft_wrap=True)
    for address, (ok, reason, ms) in zip(addresses, results, strict=True):
        line = Text("● ", style="green" if ok else "red")
        line.append(ping_text(ok, format_address(address), reason, ms))
        console.print(line)
    return 0 if all(ok for ok, _, _ in results) else 1
