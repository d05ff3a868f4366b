"""`go19 label` as a job of typed values: what to label and how (:class:`LabelJob`), its
checks before anything is written, the run on one KataGo here and its record in the folder.

``go19 label``, ``go19 review`` (its runs' games, with ``review``) and ``collect`` (KataGo's
files, :class:`KataGoChoice`) take it from here; the ``--ray`` path
(:mod:`orchestrator.cluster.label_job`) opens and finishes its folder with
:func:`open_folder` and :func:`finish`, so that both refuse the same input the same way and
keep the same exit statuses, run record and summary.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import trio

from orchestrator.dataset.shards import DatasetError
from orchestrator.label.config import prepared_katago
from orchestrator.label.games import LabelGame, select_games
from orchestrator.label.progress import PlainReporter, RichReporter
from orchestrator.label.run import EngineFiles, Labelling, LabelRun, LabelRunError, RunOptions
from orchestrator.label.store import LabelError, LabelWriter
from orchestrator.recordings import RunName
from orchestrator.words import found_line, plural, some

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class KataGoChoice:
    """KataGo's files as given (``--katago``, ``--model``, ``--config``); one not given is
    the one ``make katago`` prepared."""

    binary: Path | None = None
    model: Path | None = None
    config: Path | None = None

    def files(self, log: Path) -> EngineFiles:
        """The files to start KataGo with, each there (else :class:`LabelError`, one line
        naming the option), its log ``log``."""
        if self.binary and self.model and self.config:
            binary, model, config = self.binary, self.model, self.config
        else:
            prepared = prepared_katago()
            if prepared is None:
                raise LabelError("no KataGo: run `make katago` first, or pass "
                                 "--katago/--model/--config")
            binary = self.binary or prepared.binary
            model = self.model or prepared.model
            config = self.config or prepared.config
        for path, what in ((binary, "--katago"), (model, "--model"), (config, "--config")):
            if not path.is_file():
                raise LabelError(f"{what} {path}: no such file")
        return EngineFiles(binary, model, config, log)


@dataclass(frozen=True, slots=True)
class LabelJob:
    """One ``go19 label`` run: the SGF files or folders to read, the label folder to write
    (``resume``: go on in it), KataGo and the run's options (``options.review``: as ``go19
    review`` labels), the game selection; ``run``: the folder holds that run's labels only
    (``RUN_DIR/labels``)."""

    inputs: tuple[Path, ...]
    out: Path
    katago: KataGoChoice = KataGoChoice()
    options: RunOptions = field(default_factory=RunOptions)
    resume: bool = False
    max_games: int | None = None
    max_moves: int | None = None
    run: RunName | None = None

    @property
    def log(self) -> Path:
        return self.out / "katago.log"


Opened = tuple[T, list[LabelGame], int, LabelWriter]


def run_label(job: LabelJob) -> int:
    """The job on one KataGo here, its progress on stderr; the exit status (0 done, 1 the
    folder cannot be written or the run stopped, 2 unusable input, KataGo or folder)."""
    opened = open_folder(job, lambda: job.katago.files(job.log))
    if isinstance(opened, int):
        return opened
    files, games, void_files, writer = opened
    reporter, shown = progress()
    label_run = LabelRun(writer, files, job.options, reporter)

    def label() -> None:
        with shown:
            trio.run(label_run.run, games)

    return finish(label, label_run, writer, job, games, void_files)


def progress() -> tuple[RichReporter | PlainReporter, AbstractContextManager[Any]]:
    """The run's progress display: a bar on a terminal, plain lines otherwise; and what
    shows it while the run goes (the bar's context)."""
    if sys.stderr.isatty():
        bar = RichReporter()
        return bar, bar
    return PlainReporter(), nullcontext()


def say(problem: object) -> None:
    """One line on stderr, as every line of ``go19 label`` about a problem is said."""
    print(f"label: {problem}", file=sys.stderr)


def open_folder(job: LabelJob, check: Callable[[], T]) -> Opened[T] | int:
    """``check()`` (the engine's files), the games to label and the opened label folder;
    or, after one line on stderr, the exit status: 2 for unusable input (also input without
    a game to label: nothing is written) or folder, 1 if it cannot be written."""
    try:
        first = check()
        games, void_files = select_games(job.inputs, max_games=job.max_games,
                                         max_moves=job.max_moves, review=job.options.review)
        if (nothing := _nothing(games, void_files, job.out)) is not None:
            say(nothing)
            return 2
        writer = LabelWriter.open(job.out, job.options.settings(job.max_moves), map(
            str, job.inputs), resume=job.resume, run=job.run)
    except (LabelError, DatasetError) as exc:
        say(exc)
        return 2
    except OSError as exc:
        say(f"cannot write {job.out}: {exc.strerror or exc}")
        return 1
    return first, games, void_files, writer


def finish(label: Callable[[], None], label_run: Labelling, writer: LabelWriter,
           job: LabelJob, games: list[LabelGame], void_files: int, *,
           fatal: tuple[type[Exception], ...] = (),
           more: Callable[[], dict[str, Any]] = dict) -> int:
    """Runs ``label``, records the run in the folder whatever happens (``more`` adds to that
    record), prints the summary; the exit status. ``fatal``: the errors of the caller's
    engines that exit 2 as well."""
    status, finished = 0, False
    stopped: LabelRunError | None = None
    try:
        label()
        finished = True
    except fatal as exc:
        say(exc)
        status = 2
    except LabelRunError as exc:
        stopped = exc  # said once the folder is flushed: it names the games not in it
        status = 1
    except LabelError as exc:  # a resumed folder made with another model
        say(exc)
        status = 2
    finally:
        result = label_run.result
        writer.add_run({"seconds": round(result.seconds, 3),
                        "querying_seconds": round(result.querying_seconds, 3),
                        "games": result.games, "labelled": result.labelled,
                        "positions": result.positions, "errors": result.errors,
                        "restarts": result.restarts,
                        "max_in_flight": job.options.max_in_flight,
                        "max_games": job.max_games, "finished": finished, **more()})
        writer.flush()
    if stopped is not None:
        say(f"{stopped}{_left(games, writer)}")
    print(_summary(label_run, job.out, games, void_files))
    return status


def _summary(run: Labelling, out: Path, games: list[LabelGame], void_files: int) -> str:
    r = run.result
    skipped: dict[str, int] = {}
    for game in games:
        if game.status != "ok":
            name = f"{game.status} {game.reason}" if game.reason else game.status
            skipped[name] = skipped.get(name, 0) + 1
    not_used = ", ".join(f"{k} {n}" for k, n in sorted(skipped.items())) or "none"
    return "\n".join([
        f"{out}: {r.labelled}/{r.games} games labelled ({r.positions} positions) in "
        f"{r.seconds:.0f} s, {r.rate:.2f} positions/s while KataGo ran",
        f"  already labelled {r.already}; KataGo errors {r.errors}; engine restarts "
        f"{r.restarts}",
        f"  not for the dataset: {not_used}; void files {void_files}",
    ])


def _nothing(games: list[LabelGame], void_files: int, out: Path) -> str | None:
    """The one line refusing inputs without a game to label, or None if there is one."""
    if any(game.status == "ok" for game in games):
        return None
    rejected = Counter(g.reason or "?" for g in games if g.status == "rejected")
    skipped = Counter(g.reason or g.status for g in games if g.status != "rejected")
    found = found_line(len({g.path for g in games}), len(games), rejected, skipped, void_files)
    return f"nothing to label, nothing written to {out}: {found}"


def _left(games: list[LabelGame], writer: LabelWriter) -> str:
    """What a stopped run leaves for ``--resume``: the games to label not labelled."""
    done = writer.labelled()
    left = list(dict.fromkeys(g.where for g in games
                              if g.status == "ok" and g.positions and g.ident not in done))
    if not left:
        return ""
    names = some([Path(where).name for where in left])
    return (f"; {plural(len(left), 'game')} not labelled ({names}): the same command with "
            "--resume labels them")
