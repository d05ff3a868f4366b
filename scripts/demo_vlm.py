"""`make demo-vlm`: the whole model-side loop on a tiny model, on the CPU, nothing
downloaded. Each step prints what it does and how long it took:

1. `go19 tiny-model`: a random tiny Qwen2.5-VL;
2. `go19 collect`: a short heuristic run (matchups/demo.toml);
3. `go19 dataset build` + `export`: two slices, the winner's moves and all moves;
4. `go19 train-lora` (TRL's SFTTrainer): adapter `winner` on the first, `all` on the second;
5. `go19 serve --engine hf --constrain legal`: both adapters, one port each, answering
   only legal moves (so that the games below are theirs, not fallbacks);
6. `go19 collect` between them, reviewed by the CPU KataGo when `make katago` prepared it
   (`--review`), else one line says the review is skipped; the run's report is written.

Usage: python scripts/demo_vlm.py [--work DIR] [--games N] [--vlm-games N] [--steps N]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
GO19 = [sys.executable, "-m", "orchestrator.cli"]
MATCHUP = """[run]
name = "demo-vlm"
seed = 19

[players.winner]
kind = "go19"
replicas = ["{winner}"]
slots = 2
adapter = "winner"
model = "tiny Qwen2.5-VL"

[players.all]
kind = "go19"
replicas = ["{all}"]
slots = 2
adapter = "all"
model = "tiny Qwen2.5-VL"

[pairing]
black = "winner"
white = "all"
alternate_colors = true

[game]
size = 19
komi = 2.5
move_cap = {cap}
move_timeout_s = 30
connect_timeout_s = 5
concurrency = 2

[fallback]
void_after = 1000  # a random tiny model's answers are mostly fallbacks: keep its games

[openings]
random_plies = 4
"""


def step(title: str, argv: list[str | Path]) -> None:
    """Run one go19 command, its output shown as it comes; exit on failure."""
    print(f"== {title}", flush=True)
    start = time.monotonic()
    done = subprocess.run([str(a) for a in argv], cwd=REPO)
    if done.returncode != 0:
        sys.exit(f"demo-vlm: {title}: failed (exit {done.returncode})")
    print(f"   ({time.monotonic() - start:.1f} s)", flush=True)


def katago_ready() -> bool:
    return (REPO / ".katago").is_dir() and any((REPO / ".katago").iterdir())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=REPO / "demo-vlm")
    parser.add_argument("--games", type=int, default=8, help="heuristic games to learn from")
    parser.add_argument("--vlm-games", type=int, default=2, help="games between the adapters")
    parser.add_argument("--steps", type=int, default=100, help="training steps per adapter")
    parser.add_argument("--move-cap", type=int, default=40)
    parser.add_argument("--no-review", action="store_true")
    args = parser.parse_args()
    work: Path = args.work
    start = time.monotonic()
    if work.exists():
        subprocess.run(["rm", "-rf", str(work)], check=True)
    work.mkdir(parents=True)
    model = work / "model"
    step("1/6 build the tiny Qwen2.5-VL", [*GO19, "tiny-model", model])
    step(f"2/6 collect {args.games} heuristic games", [
        *GO19, "collect", "--matchup", REPO / "matchups/demo.toml", "--games", args.games,
        "--recordings", work / "heuristic", "--no-dashboard", "--no-report"])
    (run,) = (work / "heuristic").iterdir()
    slices = {"winner": ["--winner-only"], "all": []}
    for name, flags in slices.items():
        step(f"3/6 dataset of {name} moves", [*GO19, "dataset", "build", run, *flags,
                                              "--out", work / f"dataset-{name}"])
        step(f"3/6 export {name} moves (SFT parquet)", [
            *GO19, "dataset", "export", work / f"dataset-{name}", "--out", work / f"sft-{name}"])
    for name in slices:
        step(f"4/6 train adapter {name!r} ({args.steps} steps)", [
            *GO19, "train-lora", "--model", model, "--export", work / f"sft-{name}",
            "--out", work / f"adapter-{name}", "--steps", args.steps])
    print("== 5/6 serve both adapters with go19 serve --engine hf", flush=True)
    t = time.monotonic()
    # A few minutes of LoRA on a random model learn little of a move's spelling (free
    # decoding answered "a ata a" for every move, all fallbacks, nothing to review), so
    # the adapters decode under the move grammar: every answer is their own legal move.
    argv = [*GO19, "serve", "--engine", "hf", "--model", str(model), "--threads", "1",
            "--constrain", "legal"]
    for name in slices:
        argv += ["--adapter", f"{name}={work / f'adapter-{name}'}",
                 "--listen", f"{name}=127.0.0.1:0"]
    server = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = ""
        for line in server.stdout:
            print("   " + line.rstrip(), flush=True)
            if line.startswith("serving GO19 on"):
                break
        ports = dict((name, addr) for addr, name in
                     re.findall(r"(\S+:\d+) \((\w+)\)", line))
        if set(ports) != set(slices):
            sys.exit(f"demo-vlm: the server did not start: {line.strip()!r}")
        print(f"   ({time.monotonic() - t:.1f} s)", flush=True)
        matchup = work / "vlm.toml"
        matchup.write_text(MATCHUP.format(cap=args.move_cap, **ports))
        review = not args.no_review and katago_ready()
        if not review:
            print("== review skipped: no KataGo prepared (make katago)" if not args.no_review
                  else "== review skipped (--no-review)", flush=True)
        step(f"6/6 collect {args.vlm_games} games winner vs all"
             + (", reviewed by KataGo" if review else ""), [
                 *GO19, "collect", "--matchup", matchup, "--games", args.vlm_games,
                 "--recordings", work / "vlm", "--reports", work / "reports", "--no-dashboard",
                 *(["--review"] if review else [])])
    finally:
        server.terminate()
        server.wait()
    print(f"demo-vlm: done in {time.monotonic() - start:.0f} s; report in {work / 'reports'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
