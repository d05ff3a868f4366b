"""CPU of a `go19` start against a bare Python start, in the same run: `go19 --help` (and a
mistyped command) import no subcommand; `go19 collect --help` imports collect's.

    .venv/bin/python bench/cli_start.py
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROUNDS = 7


def cpu_s(args: list[str]) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, cwd=REPO, capture_output=True, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    go19 = [sys.executable, "-m", "orchestrator.cli"]
    cases = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "go19 --help": [*go19, "--help"],
        "go19 colect (mistyped)": [*go19, "colect"],
        "go19 collect --help": [*go19, "collect", "--help"],
    }
    medians = {}
    for _ in range(ROUNDS):  # rounds alternate the cases, so load falls on all alike
        for name, args in cases.items():
            medians.setdefault(name, []).append(cpu_s(args))
    base = statistics.median(medians["python -c pass"])
    for name, samples in medians.items():
        median = statistics.median(samples)
        print(f"{name:26} {median:6.3f} s CPU (median of {ROUNDS})  {median / base:5.1f}x python")


if __name__ == "__main__":
    main()
