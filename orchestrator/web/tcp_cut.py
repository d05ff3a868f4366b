"""Shutting down one TCP connection of this process, named by its two addresses: what
the page's watchdog does to a page that stopped reading (Hypercorn writes under a
shielded cancel scope, so nothing else ends that write).

Linux only (``/proc``): the kernel's table of TCP sockets (``/proc/self/net/tcp``,
``tcp6``) gives the connection's socket inode, and the one descriptor of this process
that links to ``socket:[INODE]`` is shut down. No other descriptor is opened, duplicated
or closed: an earlier version duplicated every descriptor to ask it its addresses, and
leaked the duplicates of those that were no sockets, doubling them at every cut.
Elsewhere nothing is cut (the page is only given up)."""

from __future__ import annotations

import ipaddress
import os
import socket
import struct
from pathlib import Path

PROC = Path("/proc/self")


def _address(field: str) -> tuple[bytes, int]:
    """``0100007F:1F90`` (the kernel's 32-bit words in host order, the port in hex) as
    (packed address, port)."""
    host, port = field.split(":")
    words = [int(host[i:i + 8], 16) for i in range(0, len(host), 8)]
    return struct.pack(f"={len(words)}I", *words), int(port, 16)


def _packed(address: tuple) -> tuple[bytes, int] | None:
    try:
        return ipaddress.ip_address(str(address[0]).strip("[]")).packed, int(address[1])
    except (ValueError, IndexError, TypeError):
        return None


def socket_inode(client: tuple, server: tuple) -> int | None:
    """The inode of the TCP socket whose local address is ``server`` and peer ``client``."""
    local, remote = _packed(server), _packed(client)
    if local is None or remote is None:
        return None
    table = "tcp6" if len(local[0]) == 16 else "tcp"
    try:
        lines = (PROC / "net" / table).read_text().splitlines()[1:]
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 9 and _address(fields[1]) == local and _address(fields[2]) == remote:
            inode = int(fields[9])
            return inode or None  # 0: a socket no process holds (TIME_WAIT)
    return None


def cut(client: object, server: object) -> bool:
    """Shut down (both ways) this process's TCP connection from ``client`` to ``server``
    (``(host, port)`` as an ASGI scope gives them); whether one was found."""
    if not isinstance(client, (list, tuple)) or not isinstance(server, (list, tuple)):
        return False
    inode = socket_inode(tuple(client), tuple(server))
    if inode is None:
        return False
    link = f"socket:[{inode}]"
    try:
        names = os.listdir(PROC / "fd")
    except OSError:
        return False
    for name in names:
        try:
            if os.readlink(PROC / "fd" / name) != link:
                continue
        except OSError:
            continue  # closed meanwhile
        try:
            sock = socket.socket(fileno=int(name))  # borrowed: detached, never closed
        except OSError:
            return False  # closed meanwhile
        try:
            sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        finally:
            sock.detach()
        return True
    return False
