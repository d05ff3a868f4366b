"""`go19 ping HOST:PORT... | URL...`: one GO19 PING per endpoint, like the seed client's
check, or one ``GET /v1/models`` per OpenAI-compatible base URL (``--model``: is it
served? without it: which models are)."""

from __future__ import annotations

import argparse
import sys

import trio
from rich.console import Console
from rich.text import Text

from orchestrator.commands import SUMMARIES, examples
from orchestrator.players.address import (
    AddressError,
    BaseUrl,
    format_address,
    parse_base_url,
    parse_hostport,
)
from orchestrator.players.openai import api_key_from_env
from orchestrator.players.openai_http import check_model
from orchestrator.players.ping import Result, ping_once, ping_text

Endpoint = tuple[str, int] | BaseUrl


def parse_address(text: str) -> Endpoint:
    """``host:port``, ``[v6]:port`` or an ``http(s)://`` base URL; ValueError names the
    culprit."""
    try:
        if "://" in text:
            return parse_base_url(text)
        return parse_hostport(text)
    except AddressError as exc:
        raise ValueError(f"bad endpoint {text!r}: {exc}") from None


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "ping",
        help=SUMMARIES["ping"],
        description="Connect to each GO19 endpoint, send PING and wait for PONG; ask each "
        "OpenAI-compatible base URL (http://host:port/v1) for its models. Prints "
        "'● OK host:port (NN ms)' or '● FAILED host:port: reason (NN ms)'; a base URL without "
        "--model is followed by the models it serves, one a line; exits 1 if any failed.",
        epilog=examples("go19 ping 127.0.0.1:5019 gpu2:5019 --timeout 30",
                        "go19 ping http://10.0.0.5:8000/v1 --model lora_mix_qwen_r5"),
    )
    parser.add_argument("endpoints", nargs="+", metavar="HOST:PORT|URL",
                        help="GO19 endpoint ([v6 address]:port for IPv6) or an "
                        "OpenAI-compatible base URL")
    parser.add_argument("--model", metavar="NAME",
                        help="the model a base URL must serve (vLLM: the LoRA module's name) "
                        "(default: none: the models served are listed)")
    parser.add_argument("--api-key-env", metavar="VAR",
                        help="environment variable holding the base URLs' API key "
                        "(default: none, no key sent)")
    parser.add_argument(
        "--timeout", type=float, default=5.0, metavar="S",
        help="seconds allowed per endpoint for connect + PING (default 5)",
    )
    parser.set_defaults(func=run)


async def check_all(addresses: list[Endpoint], timeout: float, model: str | None = None,
                    api_key: str | None = None) -> list[tuple[Result, list[str]]]:
    results: list[tuple[Result, list[str]]] = [((False, "not checked", 0.0), [])] * len(
        addresses)

    async def one(i: int) -> None:
        address = addresses[i]
        if isinstance(address, BaseUrl):
            ok, reason, ms, names = await check_model(str(address), model, api_key=api_key,
                                                      timeout=timeout)
            results[i] = (ok, reason, ms), names
        else:
            results[i] = await ping_once(address, timeout), []

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
        api_key = api_key_from_env(args.api_key_env)
    except ValueError as exc:
        print(f"ping: {exc}", file=sys.stderr)
        return 2
    results = trio.run(check_all, addresses, args.timeout, args.model, api_key)
    console = Console(highlight=False, soft_wrap=True)
    for address, ((ok, reason, ms), names) in zip(addresses, results, strict=True):
        line = Text("● ", style="green" if ok else "red")
        where = str(address) if isinstance(address, BaseUrl) else format_address(address)
        line.append(ping_text(ok, where, reason, ms))
        console.print(line)
        for name in names:
            console.print(f"  {name}")
    return 0 if all(ok for (ok, _, _), _ in results) else 1
