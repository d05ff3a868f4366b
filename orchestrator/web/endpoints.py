"""The endpoints of a ``go19 play`` game: a row's GO19 server or OpenAI-compatible base
URL, opened for the game and closed after it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio

from orchestrator.players.go19 import Go19Endpoint
from orchestrator.players.openai import OpenAIEndpoint
from orchestrator.web.settings import PlaySettings

Endpoint = Go19Endpoint | OpenAIEndpoint


@asynccontextmanager
async def open_endpoints(settings: PlaySettings, max_failures: int
                         ) -> AsyncIterator[dict[int, Endpoint]]:
    """The game's endpoints, GO19 or OpenAI-compatible (server 1, and server 2 when it
    differs), closed after."""
    endpoints: dict[int, Endpoint] = {}
    if settings.mode in ("av", "hv", "vv"):
        # No backoff in the game: a move the server cannot answer falls back at once, and
        # the next move tries again; the server row's auto-reconnect does the waiting.
        def open_one(index: int) -> Endpoint:
            connect = min(settings.timeout, 5.0)
            if settings.is_openai(index):
                return OpenAIEndpoint([settings.where(index)], settings.model(index),
                                      connect_timeout=connect, backoff_step=0.0,
                                      backoff_cap=0.0, max_failures=max_failures)
            return Go19Endpoint([settings.server(index)], connect_timeout=connect,
                                backoff_step=0.0, backoff_cap=0.0, max_failures=max_failures)

        endpoints[1] = open_one(1)
        if settings.mode == "vv":
            same = settings.row(2) == settings.row(1)
            endpoints[2] = endpoints[1] if same else open_one(2)
    try:
        yield endpoints
    finally:
        with trio.CancelScope(shield=True):
            for endpoint in set(endpoints.values()):
                await endpoint.aclose()
