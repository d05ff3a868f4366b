"""A GTP engine that glitches on purpose: after some of its genmove replies it sends an
extra empty reply (``=`` and a blank line), as the engine of issue 21 did.

It keeps the moves it was told (``play``, and its own ``genmove`` answers) since the
last ``clear_board``, and answers a genmove with a point that depends on all of them, so
an answer read one exchange late is almost never the answer for the position at hand.
Every genmove is logged, one JSON line each: its id, the moves the engine's board held,
and its answer; a test can then check that a move recorded as the engine's own is the
answer to its own genmove.

    glitchy_gtp.py LOG --glitch once MARKER   the first genmove of the whole run (MARKER
                                              says it happened) is followed by a glitch
    glitchy_gtp.py LOG --glitch every N       every Nth genmove of each process is
"""

from __future__ import annotations

import json
import os
import sys
import zlib

LETTERS = "ABCDEFGHJKLMNOPQRSTUVWXYZ"


def vertices(size: int) -> list[str]:
    return [f"{LETTERS[col]}{row}" for row in range(size, 0, -1) for col in range(size)]


def main() -> None:
    log_path, _, mode, arg = sys.argv[1:5]
    size = 19
    history: list[str] = []  # "black D4", "white pass", ... as told since clear_board
    genmoves = 0
    log = open(log_path, "a", encoding="utf-8")
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        ident = words.pop(0) if words[0].isdigit() else ""
        command, args = (words[0], words[1:]) if words else ("", [])
        reply, glitch = "", False
        if command == "boardsize":
            size = int(args[0])
            history = []
        elif command == "clear_board":
            history = []
        elif command == "play":
            vertex = args[1].upper()
            history.append(f"{args[0].lower()} {'pass' if vertex == 'PASS' else vertex}")
        elif command == "genmove":
            genmoves += 1
            taken = {entry.split()[1] for entry in history}
            order = vertices(size)
            start = zlib.crc32(" ".join(history).encode()) % len(order)
            free = [v for v in order[start:] + order[:start] if v not in taken]
            reply = free[0] if free else "pass"
            print(json.dumps({"pid": os.getpid(), "id": ident, "history": history,
                              "answer": reply}), file=log, flush=True)
            history = [*history, f"{args[0].lower()} {reply}"]
            if mode == "once":
                glitch = not os.path.exists(arg)
                if glitch:
                    open(arg, "w").close()
            else:
                glitch = genmoves % int(arg) == 0
        elif command == "name":
            reply = "glitchy"
        elif command == "version":
            reply = "1"
        elif command == "protocol_version":
            reply = "2"
        sys.stdout.write(f"={ident} {reply}\n\n")
        if glitch:
            sys.stdout.write("= \n\n")
        sys.stdout.flush()
        if command == "quit":
            break


if __name__ == "__main__":
    main()
