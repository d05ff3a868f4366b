"""The ``go19 play`` page's settings (:class:`PlaySettings`), checked here once at the
edge: what a new game takes from them, and a refused edit as one line."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from orchestrator.players.address import check_host, parse_base_url
from orchestrator.render import DEFAULT_IMAGE_PX, RenderError, point_center
from orchestrator.web.connection import is_base_url, row_address
from orchestrator.web.seats import SIZE

Mode = Literal["hh", "ha", "av", "hv", "vv"]
MODE_NAMES = {
    "hh": "human vs human",
    "ha": "human vs AI",
    "av": "AI vs VLM",
    "hv": "human vs VLM",
    "vv": "VLM vs VLM",
}
ADAPTER_NAME = r"^[A-Za-z0-9_.:+-]*$"
MODEL_NAME = r"^[A-Za-z0-9_.:/@+-]*$"  # vLLM's LoRA names, SGLang's BASE:ADAPTER


class PlaySettings(BaseModel):
    """What the page's controls say; checked here, once, at the edge."""

    model_config = ConfigDict(extra="forbid")

    mode: Mode = "ha"
    color: Literal["black", "white"] = "black"  # the human's (ha, hv); the AI's in av
    host1: str = Field("127.0.0.1", min_length=1, max_length=253)
    port1: int = Field(5019, ge=1, le=65535)
    host2: str = Field("", max_length=253)
    port2: int | None = Field(None, ge=1, le=65535)
    adapter1: str = Field("", max_length=64, pattern=ADAPTER_NAME)
    adapter2: str = Field("", max_length=64, pattern=ADAPTER_NAME)
    # A row whose host is an OpenAI-compatible base URL (its port is the URL's) asks this.
    model1: str = Field("", max_length=200, pattern=MODEL_NAME)
    model2: str = Field("", max_length=200, pattern=MODEL_NAME)
    timeout: float = Field(30.0, gt=0, le=3600)
    komi: float = Field(2.5, ge=0.0, le=30.5, multiple_of=0.5)
    training: bool = False
    auto_restart: bool = False
    stop_after: int | None = Field(None, ge=1, le=100_000)  # auto-restart's game count
    auto_reconnect1: bool = False
    auto_reconnect2: bool = False
    image_px: int = DEFAULT_IMAGE_PX  # the side of the picture a VLM seat sends

    @field_validator("image_px")
    @classmethod
    def _drawable(cls, value: int) -> int:
        try:
            point_center(0, SIZE, value)  # the renderer's own size check
        except RenderError as exc:
            raise ValueError(str(exc)) from None
        return value

    @field_validator("host1", "host2", "adapter1", "adapter2", "model1", "model2",
                     mode="before")
    @classmethod
    def _stripped(cls, value: object) -> object:
        return value.strip() if isinstance(value, str) else value

    @field_validator("port2", "stop_after", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("host1", "host2")
    @classmethod
    def _host(cls, value: str, info: ValidationInfo) -> str:
        if is_base_url(value):
            return str(parse_base_url(value))  # an AddressError is a ValueError: one line
        if value or info.field_name == "host1":  # host2 may be blank: self-play
            return check_host(value)
        return value

    @model_validator(mode="after")
    def _two_names(self) -> PlaySettings:
        if (self.mode == "vv" and self.adapter1 and self.adapter1 == self.adapter2
                and self.row(1) != self.row(2)):
            raise ValueError("servers 1 and 2 have the same adapter name: one name, one "
                             "player (leave server 2 blank for self-play)")
        return self

    def server(self, index: int) -> tuple[str, int]:
        """Server 2 left blank means self-play on server 1."""
        if index == 2 and self.host2:
            return self.host2, self.port2 or self.port1
        return self.host1, self.port1

    def adapter(self, index: int) -> str:
        """The player's name on server ``index`` (server 2 blank: server 1's)."""
        if index == 2 and self.host2:
            return self.adapter2
        return self.adapter1

    def model(self, index: int) -> str:
        """The model an OpenAI row asks for (server 2 blank: server 1's)."""
        return self.model2 if index == 2 and self.host2 else self.model1

    def is_openai(self, index: int) -> bool:
        return is_base_url(self.server(index)[0])

    def where(self, index: int) -> str:
        """Server ``index`` in words: its base URL or ``host:port``."""
        return row_address(*self.server(index))

    def row(self, index: int) -> tuple[str, int, str]:
        """What makes a row's player: its server and, for a base URL, its model."""
        return (*self.server(index), self.model(index) if self.is_openai(index) else "")

    def missing_model(self) -> str | None:
        """Why a game cannot start yet: a base URL row the game uses names no model (a
        check, in the form, while typing: the row's check lists the models served)."""
        used = (1, 2) if self.mode == "vv" else (1,) if self.mode in ("av", "hv") else ()
        for index in used:
            if self.is_openai(index) and not self.model(index):
                return (f"server {index} is an OpenAI base URL: give the model it serves "
                        "(vLLM: the --lora-modules name; check connection lists them)")
        return None

    def applies(self) -> list[tuple[str, object]]:
        """What a new game takes from these settings, as (label, value) pairs: a change in
        one of them waits for the next game."""
        mode = self.mode
        items: list[tuple[str, object]] = [("mode", MODE_NAMES[mode]), ("komi", f"{self.komi:g}")]
        if mode in ("ha", "hv", "av"):
            items.append(("AI colour" if mode == "av" else "your colour", self.color))
        for index in (1, 2) if mode == "vv" else (1,) if mode in ("av", "hv") else ():
            items.append((f"server {index}", self.where(index)))
            if self.is_openai(index):
                items.append((f"model {index}", self.model(index) or "(none)"))
            items.append((f"adapter {index}", self.adapter(index) or "(none)"))
        return items


def settings_error(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"]) or "settings"
    return f"bad setting {where}: {first['msg'].removeprefix('Value error, ')}"
