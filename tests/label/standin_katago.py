"""A stand-in for ``katago analysis`` that misbehaves on purpose: a real process speaking
KataGo's analysis protocol (JSON lines on stdin and stdout), stdlib only so that it starts
in a few tens of milliseconds.

Started as KataGo is (``BINARY analysis -config FILE -model FILE ...``), it reads what to do
from its ``-config`` file, ``key = value`` lines (tests/label/standin.py writes them):

- ``mode``: ``ok`` (the default) answers every query; ``crash`` answers ``after`` analysis
  queries, then the first turn of the next one, then exits with status 1; ``hang`` answers
  ``after`` analysis queries, then reads every line and answers none; ``hang-at-start``
  never answers ``query_version``; ``wrong-id`` answers ``after`` analysis queries, then
  answers under ids it was never sent; ``bad`` answers ``after`` analysis queries, then
  puts ``value`` (``nan``, ``inf`` or ``null``) in the first turn's winrate and score lead.
- ``announce = HOST:PORT``: when it starts to hang it connects there and sends ``hang``
  (a test moves its virtual clock then, never before).
- ``log = PATH``: one JSON line per analysis query received (``pid``, ``id``, ``turns``).

Each process counts its own queries: a restarted stand-in misbehaves again after ``after``.
An answer at one visit is a one-hot policy at the turn number, Black's winrate 0.5 and a
score lead of -turn / 10, so the rows can be told apart. It exits when stdin closes.
"""

import json
import os
import socket
import sys


def read_config(argv):
    path = argv[argv.index("-config") + 1]
    config = {}
    with open(path) as f:
        for line in f:
            key, sep, value = line.partition("=")
            if sep:
                config[key.strip()] = value.strip()
    return config


def announce(config, what):
    where = config.get("announce")
    if where:
        host, _, port = where.rpartition(":")
        with socket.create_connection((host, int(port))) as conn:
            conn.sendall(f"{what}\n".encode())


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")  # NaN and Infinity as Python writes them
    sys.stdout.flush()


def answer(query, turn, bad=()):
    size = query["boardXSize"]
    policy = [0.0] * (size * size + 1)
    policy[turn % len(policy)] = 1.0
    root = {"winrate": 0.5, "scoreLead": -turn / 10, "visits": 1, "currentPlayer": "B"}
    if bad != ():
        root["winrate"] = root["scoreLead"] = bad
    return {"id": query["id"], "isDuringSearch": False, "turnNumber": turn,
            "moveInfos": [], "rootInfo": root, "policy": policy}


BAD = {"nan": float("nan"), "inf": float("inf"), "null": None}


def main():
    config = read_config(sys.argv)
    mode = config.get("mode", "ok")
    after = int(config.get("after", "0"))
    log = open(config["log"], "a") if config.get("log") else None
    analysed = 0
    hanging = False
    for line in sys.stdin:
        if not line.strip():
            continue
        query = json.loads(line)
        action = query.get("action")
        if hanging:
            continue
        if action == "query_version":
            if mode == "hang-at-start":
                hanging = True
                announce(config, "hang")
                continue
            emit({"id": query["id"], "action": action, "version": "0.0-standin",
                  "git_hash": "standin"})
            continue
        if action == "query_models":
            emit({"id": query["id"], "action": action,
                  "models": [{"name": "standin.bin.gz", "internalName": "standin",
                              "maxBatchSize": 1, "version": 0}]})
            continue
        if action == "terminate":
            emit({"id": query["id"], "action": action, "terminateId": query["terminateId"]})
            continue
        if log is not None:
            log.write(json.dumps({"pid": os.getpid(), "id": query["id"],
                                  "turns": query["analyzeTurns"]}) + "\n")
            log.flush()
        turns = query["analyzeTurns"]
        misbehave = analysed >= after
        analysed += 1
        if not misbehave or mode == "ok":
            for turn in turns:
                emit(answer(query, turn))
        elif mode == "crash":
            emit(answer(query, turns[0]))
            sys.stderr.write(f"standin: crashing after {after} queries\n")
            sys.stderr.flush()
            os._exit(1)
        elif mode == "hang":
            hanging = True
            announce(config, "hang")
        elif mode == "wrong-id":
            for turn in turns:
                emit({**answer(query, turn), "id": f"never-sent-{query['id']}"})
        elif mode == "bad":
            emit(answer(query, turns[0], BAD[config.get("value", "nan")]))
            for turn in turns[1:]:
                emit(answer(query, turn))
        else:
            sys.exit(f"standin: unknown mode {mode!r}")


if __name__ == "__main__":
    main()
