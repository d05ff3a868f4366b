"""Addresses checked where they enter (issue 21, item 2), and the resolver's own errors
mapped to one line where a name gets past the checks: real lookups and sockets."""

from __future__ import annotations

import pytest
import trio

from orchestrator.players.address import (
    AddressError,
    check_host,
    is_loopback,
    parse_base_url,
    parse_hostport,
)
from orchestrator.players.base import ConnectionFailed
from orchestrator.players.connection import Go19Connection
from orchestrator.players.ping import ping_once, ping_text
from orchestrator.players.random_player import RandomPlayer
from orchestrator.serve import serve_go19

BAD = {
    "a..b": "empty label",
    ".a": "empty label",
    "x" * 64 + ".example": "label of 64 characters, at most 63",
    "10.0.0..5": "not an IPv4 address",
    "10.0.0.256": "not an IPv4 address",
    "a b": "only letters, digits",
    "-a.example": "no '-' at its ends",
    "::1::2": "not an IPv6 address",
    ("a." * 127) + "ab": "at most 253",
    "": "empty host name",
}
GOOD = ["localhost", "127.0.0.1", "::1", "[::1]", "gpu-1.lab.example", "gpu_1", "r5.",
        "fe80::1%eth0", "bücher.example", "x" * 63 + ".example"]


def test_ipv4_shorthands_are_spelt_out_as_the_resolver_reads_them() -> None:
    assert check_host("127.1") == "127.0.0.1"
    assert check_host("10.0.256") == "10.0.1.0"


@pytest.mark.parametrize("host", list(BAD))
def test_bad_hosts_are_one_line_naming_them(host: str) -> None:
    with pytest.raises(AddressError, match=BAD[host]) as caught:
        check_host(host)
    assert "\n" not in str(caught.value)
    if host:
        assert repr(host) in str(caught.value)


@pytest.mark.parametrize("host", GOOD)
def test_good_hosts_pass_unchanged_but_for_brackets(host: str) -> None:
    assert check_host(host) == host.strip("[]")


def test_host_and_port() -> None:
    assert parse_hostport("gpu1:5019") == ("gpu1", 5019)
    assert parse_hostport("[::1]:5019") == ("::1", 5019)
    for text, why in [("gpu1", "expected HOST:PORT"), ("gpu1:0", "expected HOST:PORT"),
                      ("gpu1:65536", "expected HOST:PORT"), ("::1:5019", "in brackets"),
                      ("a..b:5019", "bad host name 'a..b'")]:
        with pytest.raises(AddressError, match=why):
            parse_hostport(text)


def test_base_urls_of_http_players() -> None:
    url = parse_base_url("http://gpu1:8000/v1/")
    assert (url.scheme, url.host, url.port, url.path) == ("http", "gpu1", 8000, "/v1")
    assert str(url) == "http://gpu1:8000/v1"
    assert parse_base_url("https://[::1]/v1").port == 443
    assert str(parse_base_url("http://[::1]:8000/v1")) == "http://[::1]:8000/v1"
    for text, why in [("ftp://gpu1/v1", "expected http"), ("http://a..b:8000/v1", "empty label"),
                      ("http://gpu1:99999/v1", "bad URL"), ("http://u:p@gpu1/v1", "user name"),
                      ("http://gpu1/v1?x=1", "query"), ("http:///v1", "empty host name"),
                      ("http://gpu1:0/v1", "port 0")]:
        with pytest.raises(AddressError, match=why):
            parse_base_url(text)


@pytest.mark.parametrize("host", ["a..b", "x" * 64 + ".example", "10.0.0..5"])
async def test_the_resolver_error_of_a_name_past_the_checks_is_a_connection_failure(
    host: str,
) -> None:
    """trio's connect runs Python's IDNA codec, which raises UnicodeError (no OSError):
    it went through every handler and crashed go19 ping, collect and go19 play."""
    with pytest.raises(ConnectionFailed, match=r": bad host name$"):
        await Go19Connection.connect(host, 5019)


async def test_an_unknown_name_is_a_bad_host_name_too() -> None:
    with trio.move_on_after(30) as scope:  # a resolver with no network may take its time
        with pytest.raises(ConnectionFailed, match=r"nowhere\.invalid:5019: bad host name: "):
            await Go19Connection.connect("nowhere.invalid", 5019)  # RFC 6761: never resolves
    if scope.cancelled_caught:
        pytest.skip("the system resolver did not answer within 30 s")


async def test_ping_once_says_bad_host_name_and_still_pings_good_ones() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_go19, RandomPlayer("engine", seed=1), "127.0.0.1", 0)
        ok, reason, ms = await ping_once(("a..b", port), 5)
        assert (ok, reason) == (False, "bad host name")
        line = ping_text(ok, f"a..b:{port}", reason, ms)
        assert line == f"FAILED a..b:{port}: bad host name (0.0 ms)"
        assert (await ping_once(("127.0.0.1", port), 5))[0]
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.0.0.2", True), ("::1", True), ("[::1]", True),
    ("localhost", True), ("0.0.0.0", False), ("192.168.1.5", False), ("example.org", False),
])
def test_loopback_hosts(host, loopback):
    assert is_loopback(host) is loopback
