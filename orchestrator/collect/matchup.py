"""The matchup file (TOML), validated once at the edge.

Every error names the file and the key: ``matchups/x.toml: players.r5.replicas[0]:
'10.0.0.5': expected HOST:PORT ...``. The rest of collect receives these plain,
already-checked values.
"""

from __future__ import annotations

import difflib
import tomllib
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from orchestrator.coords import MOVE_TEXTS
from orchestrator.players.address import AddressError, parse_base_url, parse_hostport
from orchestrator.players.openai_wire import CONSTRAINTS, KEEP_REPLY
from orchestrator.prompt import PromptError, read_template
from orchestrator.render import DEFAULT_IMAGE_PX, RenderError, point_center


class MatchupError(ValueError):
    """A matchup file that cannot be used; the message is one line naming file and key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _hostport(text: str) -> str:
    try:
        parse_hostport(text)
    except AddressError as exc:
        raise ValueError(f"{text!r}: {exc}") from None
    return text


HostPort = Annotated[str, AfterValidator(_hostport)]


def _base_url(text: str) -> str:
    try:
        return str(parse_base_url(text))
    except AddressError as exc:
        raise ValueError(str(exc)) from None


BaseUrlText = Annotated[str, AfterValidator(_base_url)]


def _one_of(options: tuple[str, ...]) -> Callable[[str], str]:
    def check(text: str) -> str:
        if text not in options:
            raise ValueError(f"{text!r}: expected one of {', '.join(options)}")
        return text
    return check


class EmbeddedServer(_Strict):
    """A GO19 server started inside the collect process on a free loopback port,
    so a demo runs over real TCP with nothing else installed."""

    engine: Literal["heuristic", "random"] = "heuristic"
    level: int = Field(2, ge=0, le=2)
    seed: int = 0
    delay_ms: float = Field(0.0, ge=0)


class Go19PlayerSpec(_Strict):
    kind: Literal["go19"]
    replicas: list[HostPort] = Field(default_factory=list)
    embedded: EmbeddedServer | None = None
    slots: int = Field(1, ge=1, le=1024, description="concurrent requests per replica")
    adapter: str | None = None
    model: str | None = None
    image_px: int = Field(DEFAULT_IMAGE_PX, ge=64, le=4096)

    @model_validator(mode="after")
    def _one_source(self) -> Go19PlayerSpec:
        if bool(self.replicas) == (self.embedded is not None):
            raise ValueError("give either replicas = [\"host:port\", ...] or embedded = {...}")
        return self


class GtpPlayerSpec(_Strict):
    kind: Literal["gtp"]
    command: str = Field(min_length=1)
    instances: int = Field(1, ge=1, le=256, description="engine processes (games at once)")


class HeuristicPlayerSpec(_Strict):
    kind: Literal["heuristic"]
    level: int = Field(2, ge=0, le=2)
    seed: int = 0


class RandomPlayerSpec(_Strict):
    """A uniformly random legal mover: the floor of any strength scale."""

    kind: Literal["random"]
    seed: int = 0


class OpenAIPlayerSpec(_Strict):
    """A model behind OpenAI-compatible servers (vLLM, SGLang, ``go19 serve --openai``)."""

    kind: Literal["openai"]
    base_urls: list[BaseUrlText] = Field(min_length=1, description="replicas, http://HOST:PORT/v1")
    model: str = Field(min_length=1, description="vLLM: the LoRA module; SGLang: BASE:ADAPTER")
    slots: int = Field(1, ge=1, le=1024, description="concurrent requests per replica")
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    image_px: int = Field(DEFAULT_IMAGE_PX, ge=64, le=4096)
    answer: Annotated[str, AfterValidator(_one_of(MOVE_TEXTS))] = "gtp"
    prompt: Path | None = None
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    seed: int = Field(0, ge=0)
    max_tokens: int = Field(16, ge=1, le=32768)
    constrain: Annotated[str, AfterValidator(_one_of(CONSTRAINTS))] = "none"
    keep_reply: Annotated[str, AfterValidator(_one_of(KEEP_REPLY))] = "fallbacks"
    adapter: str | None = None  # a label for reports (the model's name when absent)


PlayerSpec = Annotated[
    Go19PlayerSpec | GtpPlayerSpec | HeuristicPlayerSpec | RandomPlayerSpec | OpenAIPlayerSpec,
    Field(discriminator="kind"),
]


class Pairing(_Strict):
    black: str
    white: str
    alternate_colors: bool = True


class GameSettings(_Strict):
    size: Literal[9, 13, 19] = 19
    komi: float = Field(2.5, ge=0.0, le=30.5)
    move_cap: int = Field(722, ge=1, le=10_000)
    move_timeout_s: float = Field(30.0, gt=0)
    connect_timeout_s: float = Field(5.0, gt=0)
    concurrency: int = Field(16, ge=1, le=10_000)
    down_pause_s: float = Field(
        300.0, ge=0,
        description="how long games wait for a player whose every replica is down before "
        "the run stops (exit 3)",
    )

    @field_validator("komi")
    @classmethod
    def _half_points(cls, value: float) -> float:
        if (value * 2) != int(value * 2):
            raise ValueError(f"komi {value} is not a multiple of 0.5")
        return value


class Fallback(_Strict):
    """What plays when a player times out, errs or answers illegally."""

    level: int = Field(2, ge=0, le=2, description="heuristic AI level of the fallback")
    void_after: int = Field(
        20, ge=1, description="a game where one player needed more fallbacks than this is void"
    )


class Openings(_Strict):
    random_plies: int = Field(0, ge=0, le=60)
    sgf_dir: Path | None = None
    plies: int = Field(8, ge=1, le=200, description="moves taken from each opening SGF")
    paired: bool = True

    @model_validator(mode="after")
    def _one_kind(self) -> Openings:
        if self.random_plies and self.sgf_dir is not None:
            raise ValueError("give either random_plies or sgf_dir, not both")
        return self


class Sprt(_Strict):
    elo0: float = 0.0
    elo1: float = 30.0
    alpha: float = Field(0.05, gt=0, lt=0.5)
    beta: float = Field(0.05, gt=0, lt=0.5)
    model: Literal["logistic", "normalized"] = "logistic"

    @model_validator(mode="after")
    def _ordered(self) -> Sprt:
        if self.elo1 <= self.elo0:
            raise ValueError("elo1 must be greater than elo0")
        return self


class Gate(Sprt):
    """Promote ``candidate`` over the pairing's other player: an SPRT over colour-swapped
    pairs counted in schedule order, never decided before ``min_games`` (docs/gate.md)."""

    candidate: str
    elo1: float = 35.0
    min_games: int = Field(100, ge=0)


class Stop(_Strict):
    sprt: Sprt | None = None
    gate: Gate | None = None


class Adjudicate(_Strict):
    """End decided games by KataGo's win rate and score dead stones by its ownership
    (docs/adjudication.md); KataGo is the one ``--katago/--model/--config`` name."""

    resign_winrate: float = Field(0.05, gt=0, lt=0.5)
    resign_turns: int = Field(3, ge=1, description="consecutive own turns below the threshold")
    resign_min_move: int | None = Field(
        None, ge=0, description="no resignation before this move (default 1 + area/5)")
    holdout: float = Field(0.1, ge=0, le=1, description="share of games that never resign")
    dead_stones: Literal["katago", "none"] = "katago"
    visits: int = Field(1, ge=1, description="KataGo's visits per position of a game")
    dead_visits: int = Field(100, ge=1, description="visits of the final position's ownership")
    timeout: float = Field(60.0, gt=0, description="seconds per visit KataGo may stay silent")

    def min_move(self, size: int) -> int:
        return self.resign_min_move if self.resign_min_move is not None \
            else 1 + size * size // 5


class Run(_Strict):
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]+$")
    games: int | None = Field(None, ge=1)
    seed: int = 0


class Matchup(_Strict):
    run: Run = Run()
    players: dict[str, PlayerSpec]
    pairing: Pairing
    game: GameSettings = GameSettings()
    fallback: Fallback = Fallback()
    openings: Openings = Openings()
    stop: Stop = Stop()
    adjudicate: Adjudicate | None = None

    @field_validator("players")
    @classmethod
    def _names(cls, value: dict[str, PlayerSpec]) -> dict[str, PlayerSpec]:
        if not value:
            raise ValueError("at least one player is needed")
        for name in value:
            if not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
                raise ValueError(f"player name {name!r}: use letters, digits, - _ .")
        return value

    @model_validator(mode="after")
    def _pairing_names_players(self) -> Matchup:
        for side in ("black", "white"):
            name = getattr(self.pairing, side)
            if name not in self.players:
                known = ", ".join(sorted(self.players))
                raise ValueError(f"pairing.{side} = {name!r} is not a player ({known})")
        return self

    @model_validator(mode="after")
    def _gate_names_a_player(self) -> Matchup:
        gate, pairing = self.stop.gate, self.pairing
        if gate is None:
            return self
        players = f"{pairing.black}, {pairing.white}"
        if pairing.black == pairing.white:
            raise ValueError(f"stop.gate: the pairing is self-play ({pairing.black}): "
                             "a gate needs two players")
        if gate.candidate not in (pairing.black, pairing.white):
            raise ValueError(f"stop.gate.candidate = {gate.candidate!r} is not a player of "
                             f"the pairing ({players})")
        if not pairing.alternate_colors:
            raise ValueError("stop.gate counts colour-swapped pairs: set "
                             "pairing.alternate_colors = true")
        return self

    @model_validator(mode="after")
    def _images_drawable(self) -> Matchup:
        # Caught here, an image too small for the board is one line at start; caught by the
        # referee, it is an "error" fallback on every move and a run of void games.
        for name, spec in self.players.items():
            if isinstance(spec, Go19PlayerSpec | OpenAIPlayerSpec):
                try:
                    point_center(0, self.game.size, spec.image_px)  # raises if not drawable
                except RenderError as exc:
                    raise ValueError(f"players.{name}.image_px: {exc}") from None
        return self

    @property
    def self_play(self) -> bool:
        return self.pairing.black == self.pairing.white


_KINDS = ("go19", "gtp", "heuristic", "random", "openai")


def _format_location(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in _KINDS or str(part).startswith("function-"):
            continue  # pydantic's discriminator tags are not keys the user wrote
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


_SPECS: dict[str, type[BaseModel]] = {
    "go19": Go19PlayerSpec, "gtp": GtpPlayerSpec, "heuristic": HeuristicPlayerSpec,
    "random": RandomPlayerSpec, "openai": OpenAIPlayerSpec}


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The model whose keys the table at ``loc`` takes (a pydantic error's location, its
    last part dropped), or None where that cannot be told."""
    model: type[BaseModel] = Matchup
    parts = list(loc)
    while parts:
        part = parts.pop(0)
        if model is Matchup and part == "players":
            if len(parts) < 2 or parts[1] not in _SPECS:
                return None
            model = _SPECS[parts[1]]  # players.NAME, then pydantic's kind tag
            del parts[:2]
            continue
        field = model.model_fields.get(str(part))
        if field is None:
            return None
        found = [t for t in (typing.get_args(field.annotation) or (field.annotation,))
                 if isinstance(t, type) and issubclass(t, BaseModel)]
        if not found:
            return None
        model = found[0]
    return model


def _unknown_key(loc: tuple) -> str:
    """The message for a key no table takes: the nearest valid one, if one is near."""
    model = _model_at(loc[:-1])
    if model is None:
        return "unknown key"
    near = difflib.get_close_matches(str(loc[-1]), list(model.model_fields), n=1)
    if near:
        return f"unknown key; did you mean {near[0]}?"
    return f"unknown key (the keys here: {', '.join(model.model_fields)})"


def load_matchup(path: Path) -> Matchup:
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MatchupError(f"{path}: no such matchup file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MatchupError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise MatchupError(f"{path}: not valid TOML: {exc}") from None
    try:
        matchup = Matchup.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = _format_location(first["loc"])
        message = _unknown_key(first["loc"]) if first["type"] == "extra_forbidden" \
            else first["msg"].removeprefix("Value error, ")
        extra = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise MatchupError(f"{path}: {where}: {message}{extra}") from None
    if matchup.openings.sgf_dir is not None:
        sgf_dir = matchup.openings.sgf_dir
        if not sgf_dir.is_absolute():
            sgf_dir = (path.parent / sgf_dir).resolve()
        if not sgf_dir.is_dir():
            raise MatchupError(f"{path}: openings.sgf_dir: {sgf_dir} is not a folder")
        matchup = matchup.model_copy(
            update={"openings": matchup.openings.model_copy(update={"sgf_dir": sgf_dir})}
        )
    return _read_prompts(matchup, path)


def _read_prompts(matchup: Matchup, path: Path) -> Matchup:
    """Prompt paths made absolute (relative to the matchup file) and read once here, so a
    bad template is one line at start rather than an error on every move."""
    players = dict(matchup.players)
    for name, spec in matchup.players.items():
        if not isinstance(spec, OpenAIPlayerSpec) or spec.prompt is None:
            continue
        prompt = spec.prompt if spec.prompt.is_absolute() else (path.parent / spec.prompt)
        try:
            read_template(prompt)
        except PromptError as exc:
            raise MatchupError(f"{path}: players.{name}.prompt: {exc}") from None
        players[name] = spec.model_copy(update={"prompt": prompt.resolve()})
    return matchup.model_copy(update={"players": players})


def run_name(matchup: Matchup, path: Path) -> str:
    return matchup.run.name or Path(path).stem
