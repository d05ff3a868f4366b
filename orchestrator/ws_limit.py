"""A WebSocket message bound that holds in Hypercorn (0.18).

Hypercorn's ``websocket_max_message_size`` closes a connection whose message grows past
it (code 1009) but goes on buffering what the client sends after that: its buffer
writes each piece before it checks the size, and the connection stays open, so a client
that keeps sending one unfinished frame grows the server by every byte it sends (30
clients × 15 MiB: +454 MiB, most of it kept after they left).

Past the bound, the buffer here drops what it held and keeps nothing more of that
message: the first piece over it is refused as Hypercorn's own buffer refuses it (the
1009 close), the later ones are dropped without a word (Hypercorn would stop reading the
client's frames, its close among them, at every refusal), and once the client ends the
message the app is handed one marked ``TOO_BIG`` instead of the text, so that it can end
the connection."""

from __future__ import annotations

from hypercorn.protocol import ws_stream
from wsproto.events import Message

TOO_BIG = "go19.too_big"  # the key of a received message that was past the bound


class BoundedBuffer(ws_stream.WebsocketBuffer):
    """Hypercorn's per-connection message buffer, never above its ``max_length``."""

    def __init__(self, max_length: int) -> None:
        super().__init__(max_length)
        self.over = False  # this message passed the bound: nothing more of it is kept

    def extend(self, event: Message) -> None:
        if self.over:
            return
        if self.length + len(event.data) > self.max_length:
            self.over = True
            self.value = None
            raise ws_stream.FrameTooLargeError()
        super().extend(event)

    def to_message(self) -> dict:
        if self.over:
            return {"type": "websocket.receive", "bytes": None, "text": None, TOO_BIG: True}
        return super().to_message()

    def clear(self) -> None:
        super().clear()
        self.over = False


def bound_websocket_messages() -> None:
    """Every WebSocket Hypercorn opens from now on uses :class:`BoundedBuffer` (its
    streams look the class up by name when they start)."""
    ws_stream.WebsocketBuffer = BoundedBuffer  # type: ignore[misc]
