"""Network addresses checked where they enter go19 (matchup replicas, ``go19 ping``,
``serve``/``play --host``, the play page's server rows, base URLs of HTTP players), so
a bad one is one line naming it, never a resolver's traceback.

A host is an IPv4 address, an IPv6 address (brackets optional: ``[::1]``), or a DNS
name: labels of 1 to 63 characters (after IDNA encoding, for names that are not ASCII)
of letters, digits, ``-`` and ``_``, not starting or ending with ``-``, 253 characters
in all, one trailing dot allowed. A name made only of digits and dots must be a valid
IPv4 address (``10.0.0..5``, ``10.0.0.256`` are typos, not names; inet_aton's
shorthands such as ``127.1`` are read as the resolver reads them, and spelt out).
Nothing here resolves a name: whether it exists is the connection's to find out.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

MAX_NAME = 253
MAX_LABEL = 63
_LABEL_RE = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?")
_NUMERIC_RE = re.compile(r"[0-9.]+")
DEFAULT_PORTS = {"http": 80, "https": 443}


class AddressError(ValueError):
    """An address that cannot be used; ``str()`` is one line naming it."""


def _why_bad_name(host: str) -> str | None:
    """What is wrong with ``host`` as a DNS name (None: nothing)."""
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            return "not a valid internationalised name"
    name = host[:-1] if host.endswith(".") else host
    if len(name) > MAX_NAME:
        return f"{len(name)} characters, at most {MAX_NAME}"
    for label in name.split("."):
        if not label:
            return "empty label (two dots in a row, or a dot at the start)"
        if len(label) > MAX_LABEL:
            return f"label of {len(label)} characters, at most {MAX_LABEL}"
        if not _LABEL_RE.fullmatch(label):
            return f"label {label!r}: only letters, digits, '-' and '_', no '-' at its ends"
    return None


def check_host(host: str) -> str:
    """``host`` as connections and listeners take it (IPv6 without brackets), or
    AddressError: ``bad host name 'a..b': empty label (...)``."""
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not bare:
        raise AddressError("empty host name (0.0.0.0 listens on every interface)")
    if ":" in bare:
        try:
            ipaddress.IPv6Address(bare)
        except ValueError:
            raise AddressError(f"bad host name {host!r}: not an IPv6 address") from None
        return bare
    if _NUMERIC_RE.fullmatch(bare):
        try:
            # The resolver reads inet_aton's shorthands (127.1 is 127.0.0.1): spelt out.
            return str(ipaddress.IPv4Address(socket.inet_aton(bare)))
        except OSError:
            raise AddressError(f"bad host name {host!r}: not an IPv4 address") from None
    why = _why_bad_name(bare)
    if why is not None:
        raise AddressError(f"bad host name {host!r}: {why}")
    return bare


def check_port(port: int | str, allow_zero: bool = False) -> int:
    low = 0 if allow_zero else 1
    text = str(port)
    if not text.isdigit() or not low <= int(text) <= 65535:
        raise AddressError(f"bad port {text!r}: expected {low}..65535")
    return int(text)


def parse_hostport(text: str) -> tuple[str, int]:
    """``host:port`` or ``[v6]:port`` (the host checked as :func:`check_host` does). The
    error does not repeat ``text``: callers name it with where it came from."""
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise AddressError("expected HOST:PORT with a port in 1..65535 ([V6]:PORT for IPv6)")
    if ":" in host and not (host.startswith("[") and host.endswith("]")):
        raise AddressError(f"put an IPv6 address in brackets: [{host}]:{port}")
    return check_host(host), int(port)


def format_address(address: tuple[str, int]) -> str:
    """``host:port``, ``[v6]:port``: the spelling :func:`parse_hostport` reads back."""
    host, port = address
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True, slots=True)
class BaseUrl:
    """An ``http(s)://host[:port]/path`` base URL, e.g. of an OpenAI-compatible server."""

    scheme: str
    host: str
    port: int
    path: str

    def __str__(self) -> str:
        return f"{self.scheme}://{format_address((self.host, self.port))}{self.path}"


def parse_base_url(text: str) -> BaseUrl:
    """``http://host:port/v1`` checked: scheme http or https, a good host (see
    :func:`check_host`), a port in 1..65535 (default 80 or 443), no query or fragment,
    no user name or password; the path keeps no trailing slash."""
    try:
        parts = urlsplit(text.strip())
        port = parts.port
    except ValueError as exc:
        raise AddressError(f"bad URL {text!r}: {exc}") from None
    if parts.scheme not in DEFAULT_PORTS:
        raise AddressError(f"bad URL {text!r}: expected http://HOST:PORT/PATH or https://...")
    if parts.username is not None or parts.password is not None:
        raise AddressError(f"bad URL {text!r}: no user name or password in a base URL")
    if parts.query or parts.fragment:
        raise AddressError(f"bad URL {text!r}: a base URL has no ?query or #fragment")
    host = parts.hostname or ""
    try:
        host = check_host(host)
    except AddressError as exc:
        raise AddressError(f"bad URL {text!r}: {exc}") from None
    if port == 0:
        raise AddressError(f"bad URL {text!r}: port 0")
    return BaseUrl(parts.scheme, host, port or DEFAULT_PORTS[parts.scheme],
                   parts.path.rstrip("/"))


def is_loopback(host: str) -> bool:
    """``host`` (as :func:`check_host` spells it: ``127.1`` written out as ``127.0.0.1``;
    an IPv6 address with or without its brackets) reaches this machine only. A name other
    than ``localhost`` may resolve to anything, so it is not."""
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
