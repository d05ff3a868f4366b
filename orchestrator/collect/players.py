"""Turn the matchup's player specs into live players for one run: GO19
endpoints (remote replicas, or servers embedded in this process on free
loopback ports), OpenAI-compatible servers (vLLM, SGLang), pools of GTP engine
processes, and the heuristic AI."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from orchestrator.collect.matchup import (
    Go19PlayerSpec,
    GtpPlayerSpec,
    HeuristicPlayerSpec,
    Matchup,
    OpenAIPlayerSpec,
    RandomPlayerSpec,
    parse_hostport,
)
from orchestrator.events import OnEvent
from orchestrator.players.base import Player
from orchestrator.players.endpoint import ReplicaPool
from orchestrator.players.go19 import Go19Endpoint, Go19Player
from orchestrator.players.gtp import GtpPlayer
from orchestrator.players.heuristic import HeuristicPlayer
from orchestrator.players.openai import (
    AskSettings,
    OpenAIEndpoint,
    OpenAIPlayer,
    api_key_from_env,
)
from orchestrator.players.player_pool import PlayerPool
from orchestrator.players.random_player import RandomPlayer
from orchestrator.prompt import read_template
from orchestrator.recordings import PlayerMeta
from orchestrator.render import RenderSettings
from orchestrator.serve import serve_go19


@dataclass
class PlayerHandle:
    name: str
    player: Player
    meta: PlayerMeta
    endpoint: ReplicaPool[Any] | None = None  # its replicas go down, come back, show
    is_down: Callable[[], bool] = field(default=lambda: False)

    async def aclose(self) -> None:
        await self.player.aclose()
        if self.endpoint is not None:
            await self.endpoint.aclose()

    def describe(self) -> str:
        return self.meta.endpoint or self.meta.command or self.meta.kind


async def _embedded_replica(
    spec: Go19PlayerSpec, size: int, nursery: trio.Nursery
) -> tuple[str, int]:
    """Start the embedded server of ``spec`` on a free loopback port."""
    emb = spec.embedded
    assert emb is not None
    engine: Player = (
        HeuristicPlayer(emb.engine, seed=emb.seed, level=emb.level)
        if emb.engine == "heuristic"
        else RandomPlayer(emb.engine, seed=emb.seed)
    )
    port = await nursery.start(
        lambda task_status: serve_go19(
            engine, "127.0.0.1", 0, slots=spec.slots, delay_ms=emb.delay_ms,
            allowed_sizes=(size,), task_status=task_status,
            # Our own client opens up to `slots` connections at once (more while closed
            # ones wind down): never refuse one of them.
            max_connections=max(256, 2 * spec.slots),
        )
    )
    return ("127.0.0.1", port)


async def _go19_handle(
    name: str,
    spec: Go19PlayerSpec,
    matchup: Matchup,
    nursery: trio.Nursery,
    on_event: OnEvent | None,
) -> PlayerHandle:
    size = matchup.game.size
    if spec.embedded is not None:
        replicas = [await _embedded_replica(spec, size, nursery)]
    else:
        replicas = [parse_hostport(r) for r in spec.replicas]
    endpoint = Go19Endpoint(
        replicas,
        slots_per_replica=spec.slots,
        connect_timeout=matchup.game.connect_timeout_s,
        allowed_sizes=(size,),
        on_event=on_event,
        nursery=nursery,  # down replicas are probed for as long as the run lasts
        name=name,
    )
    render = RenderSettings(image_px=spec.image_px)
    meta = go19_meta(spec.adapter, spec.model, ",".join(f"{h}:{p}" for h, p in replicas),
                     render, spec.embedded.model_dump() if spec.embedded else None)
    return PlayerHandle(
        name,
        Go19Player(endpoint, name=name, render=render),
        meta,
        endpoint=endpoint,
        is_down=endpoint.is_down,
    )


def ask_settings(spec: OpenAIPlayerSpec) -> AskSettings:
    """How an OpenAI player asks, from its (validated) spec; the prompt file is read here."""
    return AskSettings(
        model=spec.model, template=read_template(spec.prompt), answer=spec.answer,
        render=RenderSettings(image_px=spec.image_px), temperature=spec.temperature,
        seed=spec.seed, max_tokens=spec.max_tokens, constrain=spec.constrain,
    )


def go19_meta(adapter: str | None, model: str | None, endpoint: str, render: RenderSettings,
              embedded: dict | None = None) -> PlayerMeta:
    """What the record says of a GO19 player: its adapter and model as given, its replicas
    (``host:port,host:port``), the embedded server's settings and how its pictures are
    drawn."""
    return PlayerMeta(kind="go19", adapter=adapter, model=model, endpoint=endpoint,
                      embedded=embedded, render=render)


def openai_meta(settings: AskSettings, base_urls: Sequence[str], adapter: str | None,
                keep_reply: str | None) -> PlayerMeta:
    """What the record says of an OpenAI player: enough for a reader to know exactly what
    the model was asked (never the API key, only the base URLs)."""
    return PlayerMeta(
        kind="openai", adapter=adapter, model=settings.model,
        endpoint=",".join(base_urls), replicas=list(base_urls), seed=settings.seed,
        render=settings.render, prompt_sha256=settings.template_sha256,
        answer=settings.answer, temperature=settings.temperature,
        max_tokens=settings.max_tokens, constrain=settings.constrain, keep_reply=keep_reply,
    )


def heuristic_meta(level: int, seed: int | None) -> PlayerMeta:
    return PlayerMeta(kind="heuristic", level=level, seed=seed)


def _openai_handle(name: str, spec: OpenAIPlayerSpec, matchup: Matchup, nursery: trio.Nursery,
                   on_event: OnEvent | None) -> PlayerHandle:
    settings = ask_settings(spec)
    endpoint = OpenAIEndpoint(
        spec.base_urls, spec.model, api_key=api_key_from_env(spec.api_key_env),
        slots_per_replica=spec.slots, connect_timeout=matchup.game.connect_timeout_s,
        on_event=on_event, nursery=nursery, name=name,
    )
    return PlayerHandle(
        name, OpenAIPlayer(endpoint, settings, name, run=matchup.run.seed),
        openai_meta(settings, spec.base_urls, spec.adapter, spec.keep_reply),
        endpoint=endpoint, is_down=endpoint.is_down,
    )


async def open_players(
    matchup: Matchup,
    nursery: trio.Nursery,
    log_dir: Path,
    on_event: OnEvent | None = None,
) -> dict[str, PlayerHandle]:
    """Start what the players need (embedded servers in ``nursery``) and return them.

    ``on_event`` hears the GO19 endpoints' connection news (failed connects with their
    backoff, replicas down and back up, reconnects), each naming the player. Down
    replicas are probed in ``nursery`` until the endpoint closes.
    """
    handles: dict[str, PlayerHandle] = {}
    for name, spec in matchup.players.items():
        if isinstance(spec, Go19PlayerSpec):
            handles[name] = await _go19_handle(name, spec, matchup, nursery, on_event)
        elif isinstance(spec, OpenAIPlayerSpec):
            handles[name] = _openai_handle(name, spec, matchup, nursery, on_event)
        elif isinstance(spec, GtpPlayerSpec):
            log_dir.mkdir(parents=True, exist_ok=True)
            engines = [
                GtpPlayer(f"{name}#{i}", spec.command,
                          stderr_log=log_dir / f"{name}-{i}.stderr.log")
                for i in range(spec.instances)
            ]
            handles[name] = PlayerHandle(
                name, PlayerPool(name, engines), PlayerMeta(kind="gtp", command=spec.command)
            )
        elif isinstance(spec, HeuristicPlayerSpec):
            handles[name] = PlayerHandle(
                name,
                HeuristicPlayer(name, seed=spec.seed, level=spec.level),
                heuristic_meta(spec.level, spec.seed),
            )
        elif isinstance(spec, RandomPlayerSpec):
            handles[name] = PlayerHandle(
                name, RandomPlayer(name, seed=spec.seed), PlayerMeta(kind="random", seed=spec.seed)
            )
    return handles
