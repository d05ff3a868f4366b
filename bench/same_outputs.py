"""Same outputs before and after a change: run go19's commands from two checkouts on the
same inputs and compare what they write, byte for byte.

    .venv/bin/python bench/same_outputs.py --before /path/to/checkout-of-main [--after .]

Each checkout runs its own code (``.venv/bin/python -m orchestrator.cli`` from the checkout,
so that worktrees sharing one venv still run their own); both venvs must have the same optional
packages (isal deflates shards otherwise than zlib, numba runs the compiled paths).
Compared, with the same input for both:

- ``go19 dataset build`` of the real corpus (``../shared/sgf/real``; once whole, once with
  ``--max-per-game 2``) and of a demo run's folder: every file of the dataset;
- ``go19 dataset export`` (jsonl and parquet) of the demo run's dataset and jsonl of the
  corpus's small one: every file, PNGs included;
- ``go19 replay`` (plain and ``--json``) of the corpus and of the demo run: stdout, stderr;
- ``go19 report`` of the demo run: report.md, report.json, report.html.

Masked there (they are the clock's, not the code's): a manifest's ``created`` and
``seconds``, a report's ``generated`` time. The demo run folder they read is the one the
*before* checkout recorded. Where the *after* checkout writes a dataset's ``sgf_root``
(issue 21: the game table's ``path`` relative to it), both game tables are compared with
each path resolved as ``load_games`` resolves it (to the ``file`` it reads), and their
manifests without ``sgf_root`` and with the sha256 of that resolved table: the same games
at the same files, spelt from two dataset folders. Any other `"../…"` path in a manifest (an
export's `dataset`) is compared made absolute, for the same reason.

Then each checkout records its own demo run (the before checkout's ``matchups/demo.toml``,
the same matchup for both, with one game at a
time, so the embedded heuristic servers see their requests in one order, and a picture
size per player so that the size travels) and their SGFs and journals are compared after
masking only what the clock and the machine decide: ``DT``, ``GOXIXMS`` values, the
journal's ``started``/``finished``/``latency_ms``, the UTC stamps in the run id and the SGF
names, and the embedded servers' loopback ports. Where the *after* checkout writes a
player's ``render`` settings (``--render-added``: the field issue 22 adds), the comparison
checks they say the matchup's ``image_px`` and then leaves them out. Last, the after run's
recordings go through build and export, and their pictures must be the before run's.

Where a later issue changed a default on purpose, ``--prompt FILE`` exports both with one
template and ``--added KEY`` leaves out a JSON key the after checkout adds with an empty
value (e.g. a report's ``"adjudication": null``).

Exit status 0 when everything is the same, 1 otherwise (each difference is named).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GAMES = 6
IMAGE_PX = {"strong": 160, "weak": 128}

MANIFEST_CLOCK = [
    (re.compile(rb'"created": "[^"]*"'), b'"created": "<clock>"'),
    (re.compile(rb'"seconds": [0-9.e+-]+'), b'"seconds": <clock>'),
]
REPORT_CLOCK = [
    (re.compile(rb'"generated": "[^"]*"'), b'"generated": "<clock>"'),
    (re.compile(rb"Generated \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"), b"Generated <clock>"),
]
STAMP = re.compile(rb"\d{8}-\d{6}")
PORT = re.compile(rb"127\.0\.0\.1:\d+")
SGF_CLOCK = [
    (re.compile(rb"DT\[[^\]]*\]"), b"DT[<clock>]"),
    (re.compile(rb"GOXIXMS\[[^\]]*\]"), b"GOXIXMS[<clock>]"),
    (STAMP, b"<stamp>"),
    (PORT, b"127.0.0.1:<port>"),
]


def resolve_sgf_paths(dataset: Path) -> None:
    """Rewrite a dataset folder (a copy) as a build before ``sgf_root`` wrote it: every
    game-table path resolved to the file it names, no ``sgf_root``, the table's sha256."""
    manifest_path = dataset / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    root = dataset.resolve() / manifest.pop("sgf_root")
    table = dataset / manifest["games"]["file"]
    rows = [json.loads(line) for line in table.read_text().splitlines()]
    for row in rows:
        row["path"] = os.path.normpath(root / row["path"])
    # As the build writes a row (non-ASCII kept).
    table.write_bytes("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
                      .encode())
    manifest["games"]["sha256"] = hashlib.sha256(table.read_bytes()).hexdigest()
    manifest_path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")


RELATIVE = re.compile(rb'"(\.\./[^"]*)"')


def resolve_relative(path: Path) -> bytes:
    """A manifest's bytes with every ``"../…"`` path it holds (relative to its folder:
    ``sgf_root``, an export's ``dataset``) made absolute: the before and after outputs sit
    in two folders, so the same target is spelt two ways. Other files as they are."""
    data = path.read_bytes()
    if path.name != "manifest.json":
        return data
    return RELATIVE.sub(lambda m: b'"' + os.path.normpath(
        os.path.join(path.parent.resolve(), m.group(1).decode())).encode() + b'"', data)


# Keys a later issue added with an empty value (--added KEY): left out of both sides, so
# that what was there before still has to be the same.
ADDED: list[tuple[re.Pattern[bytes], bytes]] = []


def added_rules(key: str) -> list[tuple[re.Pattern[bytes], bytes]]:
    name = re.escape(key.encode())
    empty = rb'(?:null|true|false|\[\]|\{\})'
    return [(re.compile(rb',\s*"' + name + rb'":\s*' + empty), b""),
            (re.compile(rb'"' + name + rb'":\s*' + empty + rb',\s*'), b"")]


def mask(data: bytes, rules: list[tuple[re.Pattern[bytes], bytes]]) -> bytes:
    for pattern, replacement in [*rules, *ADDED]:
        data = pattern.sub(replacement, data)
    return data


class Comparison:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str]] = []

    def same(self, what: str, before: bytes, after: bytes) -> bool:
        ok = before == after
        detail = "same" if ok else _first_difference(before, after)
        self.rows.append((what, detail))
        print(f"{'ok  ' if ok else 'DIFF'} {what}{'' if ok else ': ' + detail}", flush=True)
        return ok

    def folders(self, what: str, before: Path, after: Path,
                rules: dict[str, list[tuple[re.Pattern[bytes], bytes]]] | None = None) -> None:
        names_b = sorted(p.relative_to(before).as_posix() for p in before.rglob("*") if p.is_file())
        names_a = sorted(p.relative_to(after).as_posix() for p in after.rglob("*") if p.is_file())
        if names_b != names_a:
            self.same(f"{what}: file list", "\n".join(names_b).encode(),
                      "\n".join(names_a).encode())
            return
        different = []

        def read(root: Path, name: str) -> bytes:
            rule = (rules or {}).get(Path(name).name, [])
            return mask(resolve_relative(root / name), rule)

        for name in names_b:
            if read(before, name) != read(after, name):
                different.append(name)
        detail = f"{len(names_b)} files"
        if different:
            first = different[0]
            detail += f", {len(different)} differ, first {first}: " + _first_difference(
                read(before, first), read(after, first))
        self.rows.append((what, "same" if not different else detail))
        print(f"{'ok  ' if not different else 'DIFF'} {what} ({detail})", flush=True)

    @property
    def ok(self) -> bool:
        return all(detail == "same" for _, detail in self.rows)


def _first_difference(before: bytes, after: bytes) -> str:
    b, a = before.decode(errors="replace"), after.decode(errors="replace")
    for line in difflib.unified_diff(b.splitlines(), a.splitlines(), "before", "after",
                                     lineterm="", n=0):
        if line.startswith(("-", "+")) and not line.startswith(("---", "+++")):
            return line[:300]
    return f"{len(before)} vs {len(after)} bytes"


def go19(tree: Path, *args: str | Path, check: bool = True) -> subprocess.CompletedProcess:
    # The checkout's own code: worktrees may share one venv, whose go19 script imports the
    # package it was installed from; -m with the checkout first on the path does not.
    command = [str(tree / ".venv" / "bin" / "python"), "-m", "orchestrator.cli",
               *map(str, args)]
    done = subprocess.run(command, cwd=tree, capture_output=True,
                          env={**os.environ, "PYTHONPATH": str(tree)})
    if check and done.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(map(str, args))} exited {done.returncode}:\n"
                         f"{done.stderr.decode(errors='replace')[-2000:]}")
    return done


OPTIONAL = ("isal", "numba", "pyarrow")  # change what is written, or which code writes it


def extras(tree: Path) -> list[str]:
    """The optional packages the checkout's venv has."""
    probe = (f"import importlib.util; print(' '.join(m for m in {OPTIONAL!r} if "
             "importlib.util.find_spec(m)))")
    done = subprocess.run([str(tree / ".venv" / "bin" / "python"), "-c", probe],
                          capture_output=True, text=True, check=True)
    return done.stdout.split()


def demo_matchup(tree: Path, out: Path) -> Path:
    text = (tree / "matchups" / "demo.toml").read_text()
    text = text.replace("concurrency = 8", "concurrency = 1")
    for name, px in IMAGE_PX.items():
        text = text.replace(f"[players.{name}]\n", f"[players.{name}]\nimage_px = {px}\n")
    out.write_text(text)
    return out


def record_demo(tree: Path, work: Path, matchup_of: Path) -> Path:
    """``tree`` records the demo of ``matchup_of`` (the before checkout: the same matchup
    for both, whatever a later issue changed in matchups/demo.toml)."""
    matchup = demo_matchup(matchup_of, work / "demo.toml")
    go19(tree, "collect", "--matchup", matchup, "--games", GAMES, "--recordings",
         work / "rec", "--no-dashboard", "--no-report")
    (run,) = (work / "rec").iterdir()
    return run


def strip_render(data: bytes) -> tuple[bytes, list[str]]:
    """A journal line (or SGF) without the players' ``render`` settings, and what is wrong
    with them: each must be there and give the player's ``image_px`` from the matchup."""
    problems: list[str] = []

    def check(name: str, meta: dict) -> dict:
        render = meta.pop("render", None)
        if not isinstance(render, dict) or render.get("image_px") != IMAGE_PX.get(name):
            problems.append(f"{name}: render {render!r}")
        return meta

    def dumps(value: object) -> str:
        return json.dumps(value, separators=(",", ":"))

    text = data.decode()
    # The journal record's "players" object (games.jsonl, and GOXIXREC in the SGF).
    text = re.sub(r'"players":(\{(?:[^{}]|\{(?:[^{}]|\{[^{}]*\})*\})*\})',
                  lambda m: '"players":' + dumps({name: check(name, meta) for name, meta
                                                  in json.loads(m.group(1)).items()}), text)
    # GOXIXB / GOXIXW: one player's metadata; PB / PW name the player.
    for prop, name_prop in (("GOXIXB", "PB"), ("GOXIXW", "PW")):
        found = re.search(name_prop + r"\[([^\]]*)\]", text)
        name = found[1] if found else "?"
        text = re.sub(prop + r"\[(\{[^\]]*\})\]", lambda m, name=name, prop=prop: (
            f"{prop}[{dumps(check(name, json.loads(m.group(1))))}]"), text)
    return text.encode(), problems


def journal_rules() -> list[tuple[re.Pattern[bytes], bytes]]:
    return [
        (re.compile(rb'"(started|finished)":"[^"]*"'), rb'"\1":"<clock>"'),
        (re.compile(rb'"latency_ms":\{(?:[^{}]|\{[^{}]*\})*\}'), b'"latency_ms":<clock>'),
        *SGF_CLOCK,
    ]


def compare_recordings(cmp: Comparison, before: Path, after: Path, render_added: bool) -> None:
    rules = journal_rules()
    files_b = sorted(p.name for p in before.glob("baduk-*.sgf"))
    files_a = sorted(p.name for p in after.glob("baduk-*.sgf"))
    cmp.same("demo run: SGF names (stamps masked)", mask("\n".join(files_b).encode(), rules),
             mask("\n".join(files_a).encode(), rules))
    for name in ["games.jsonl", *files_b]:
        b = mask((before / name).read_bytes(), rules)
        matches = [after / name] if name == "games.jsonl" else [
            p for p in after.glob("baduk-*.sgf") if mask(p.name.encode(), rules) ==
            mask(name.encode(), rules)]
        if not matches:
            continue
        a = (matches[0]).read_bytes()
        if render_added:
            a, problems = strip_render(a)
            if problems:
                cmp.same(f"demo run: {name}: render settings", b"", "; ".join(problems).encode())
        cmp.same(f"demo run: {name} (clock masked)", b, mask(a, rules))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="checkout of the base")
    parser.add_argument("--after", type=Path, default=ROOT, help="checkout of the change")
    parser.add_argument("--work", type=Path, default=Path("/tmp/go19-same-outputs"))
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "sgf" / "real")
    parser.add_argument("--render-added", action="store_true",
                        help="the after checkout records the players' render settings")
    parser.add_argument("--prompt", type=Path, default=None,
                        help="the prompt template both checkouts export with (a later issue "
                             "may have changed the default)")
    parser.add_argument("--added", action="append", default=[], metavar="KEY",
                        help="a JSON key the after checkout adds with an empty value "
                             "(null, false, [], {}): left out of both sides")
    args = parser.parse_args()
    for key in args.added:
        ADDED.extend(added_rules(key))
    prompt = [] if args.prompt is None else ["--prompt", str(args.prompt.resolve())]
    trees = {"before": args.before.resolve(), "after": args.after.resolve()}
    found = {side: extras(tree) for side, tree in trees.items()}
    if found["before"] != found["after"]:
        # isal deflates shards differently from zlib; numba takes the compiled paths.
        print(f"the venvs differ in optional packages ({found}): install the same extras "
              "in both (pip install -e '.[fast]')", file=sys.stderr)
        return 2
    print(f"optional packages in both venvs: {' '.join(found['after']) or 'none'}")
    corpus = args.corpus.resolve()
    if not corpus.is_dir():
        print(f"no corpus at {corpus}", file=sys.stderr)
        return 2
    shutil.rmtree(args.work, ignore_errors=True)
    work = {side: args.work / side for side in trees}
    for folder in work.values():
        folder.mkdir(parents=True)
    cmp = Comparison()

    demo = record_demo(trees["before"], work["before"], trees["before"])
    rules = {"manifest.json": MANIFEST_CLOCK}
    for side, tree in trees.items():
        out = work[side]
        go19(tree, "dataset", "build", corpus, "--out", out / "ds-real")
        go19(tree, "dataset", "build", corpus, "--max-per-game", "2", "--out", out / "ds-small")
        go19(tree, "dataset", "build", demo, "--out", out / "ds-demo")
        # The same input for both: the before checkout's datasets.
        source = work["before"]
        go19(tree, "dataset", "export", source / "ds-demo", "--format", "jsonl",
             *prompt, "--out", out / "ex-demo-jsonl")
        go19(tree, "dataset", "export", source / "ds-demo", "--format", "parquet",
             *prompt, "--out", out / "ex-demo-parquet")
        go19(tree, "dataset", "export", source / "ds-small", "--format", "jsonl",
             *prompt, "--out", out / "ex-small-jsonl")
        # Beside each other, so that their links to the SGFs read the same.
        go19(tree, "report", demo, "--out", work["before"] / f"report-{side}")
        for name, target in (("corpus", corpus), ("demo", demo)):
            for flag in ((), ("--json",)):
                done = go19(tree, "replay", target, *flag)
                (out / f"replay-{name}{''.join(flag)}.out").write_bytes(done.stdout)
                (out / f"replay-{name}{''.join(flag)}.err").write_bytes(done.stderr)
    for name in ("ds-real", "ds-small", "ds-demo"):
        before_ds, after_ds = work["before"] / name, work["after"] / name
        if "sgf_root" in json.loads((after_ds / "manifest.json").read_text()):
            # Relative to each dataset folder: the same files spelt from two places.
            sides = []
            for side, folder in (("before", before_ds), ("after", after_ds)):
                resolved = work[side] / f"{name}-resolved"
                shutil.copytree(folder, resolved)
                if "sgf_root" in json.loads((resolved / "manifest.json").read_text()):
                    resolve_sgf_paths(resolved)
                sides.append(resolved)
            cmp.folders(f"{name} (relative SGF paths resolved)", *sides, rules)
        else:
            cmp.folders(name, before_ds, after_ds, rules)
    for name in ("ex-demo-jsonl", "ex-demo-parquet", "ex-small-jsonl"):
        cmp.folders(name, work["before"] / name, work["after"] / name, rules)
    cmp.folders("report", work["before"] / "report-before", work["before"] / "report-after",
                {name: REPORT_CLOCK for name in ("report.md", "report.json", "report.html")})
    for path in sorted(work["before"].glob("replay-*")):
        cmp.same(path.name, path.read_bytes(), (work["after"] / path.name).read_bytes())

    # Each checkout's own demo run: the games must be the same.
    fresh = work["after"] / "own"
    fresh.mkdir()
    after_run = record_demo(trees["after"], fresh, trees["before"])
    compare_recordings(cmp, demo, after_run, args.render_added)
    go19(trees["after"], "dataset", "build", after_run, "--out", fresh / "ds")
    go19(trees["after"], "dataset", "export", fresh / "ds", "--format", "jsonl", *prompt,
         "--out", fresh / "ex")
    before_ex = json.loads((work["before"] / "ex-demo-jsonl" / "manifest.json").read_text())
    after_ex = json.loads((fresh / "ex" / "manifest.json").read_text())
    pictures = [(s["images_sha256"], s["image_px"]) for s in before_ex["shards"]]
    cmp.same("own demo run: exported pictures and their sizes",
             json.dumps(pictures).encode(),
             json.dumps([(s["images_sha256"], s["image_px"]) for s in after_ex["shards"]]).encode())
    print(f"size from: before {before_ex['counts']['image_px_from']}, "
          f"after's own run {after_ex['counts']['image_px_from']}")
    print("all the same" if cmp.ok else "DIFFERENCES (above)")
    return 0 if cmp.ok else 1


if __name__ == "__main__":
    sys.exit(main())
