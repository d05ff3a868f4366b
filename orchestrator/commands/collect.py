"""`go19 collect` (also installed as plain `collect`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from orchestrator.collect.matchup import MatchupError
from orchestrator.collect.review import LiveReview, ReviewOptions
from orchestrator.collect.run import (
    EXIT_INPUT,
    CollectError,
    CollectOptions,
    RunSummary,
    ViewTask,
    collect,
)
from orchestrator.collect.standings import games_named, stop_reason
from orchestrator.commands import SUMMARIES, add_katago_files, add_katago_timeout, positive_int
from orchestrator.players.address import is_loopback
from orchestrator.report.quality import LABELS_DIR
from orchestrator.words import plural

if TYPE_CHECKING:
    from orchestrator.label.run import EngineFiles
    from orchestrator.report.model import Report

EXIT_CODES = """\
exit status:
  0    every game asked for is recorded, or the SPRT or the gate decided (`go19
       gate RUN_DIR` then says accept or reject in its exit status)
  2    bad matchup or options (a --web port in use), or the recordings cannot be
       written (disk full, read-only): nothing half-written is left, --resume continues
  3    a player cannot be reached: no replica answers at start (after
       --wait-endpoints), every replica down for down_pause_s, or a streak of
       void games made of failed connections; --review's KataGo does not start;
       with --strict-audit, the serving audit found a model answering as another
  4    stopped before the games asked for: a streak of void games (timeouts,
       errors or illegal moves)
  130  interrupted (Ctrl-C or SIGTERM): the first one lets the games in flight
       finish and records them, a second one drops them; --resume continues

examples:
  go19 collect --matchup matchups/r5_vs_r4.toml --games 500
  go19 collect --matchup matchups/r5_vs_r4.toml --games 500 --wait-endpoints 600 --resume
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "collect",
        help=SUMMARIES["collect"],
        description="Play N finished games between the players of a matchup file, refereed "
        "under area scoring with positional superko; record every game as SGF plus one line "
        "in games.jsonl under recordings/<run>/, then write a report. Every GO19 replica is "
        "pinged and every GTP engine started once before anything is written.",
        epilog=EXIT_CODES,
    )
    parser.add_argument("--matchup", type=Path, required=True, help="matchup TOML file")
    parser.add_argument(
        "--games", type=int,
        help="finished non-void games wanted (default: [run] games of the matchup)",
    )
    parser.add_argument(
        "--resume",
        nargs="?",
        const=True,
        default=False,
        metavar="RUN_DIR",
        help="continue the latest unfinished run of this matchup, or the given run folder "
        "(default: start a new run)",
    )
    parser.add_argument(
        "--wait-endpoints", type=float, default=0.0, metavar="SECONDS",
        help="wait up to this long for endpoints that do not answer yet, e.g. a GPU "
        "server still loading its model (default 0: exit 3 at once)",
    )
    parser.add_argument(
        "--strict-audit", action="store_true",
        help="exit 3 when the serving audit finds a model whose answer changes with the "
        "models it is batched with (default: a warning line; docs/vlm.md)",
    )
    parser.add_argument("--recordings", type=Path, default=Path("recordings"),
                        help="where run folders go (default recordings)")
    parser.add_argument("--reports", type=Path, default=Path("reports"),
                        help="where the end-of-run report goes (default reports)")
    parser.add_argument("--no-dashboard", action="store_true",
                        help="plain log lines instead of the live dashboard (default: "
                        "dashboard on a terminal)")
    parser.add_argument("--no-report", action="store_true",
                        help="skip the end-of-run report (default: write it)")
    parser.add_argument("--next-steps", action="store_true",
                        help="end with what to try next on this run, as commands run from "
                        "the repository (`make demo` does; default: off)")
    parser.add_argument(
        "--standings-every", type=int, default=10, metavar="N",
        help="without the dashboard (--no-dashboard, no terminal), print a standings block "
        "every N finished games; 0: never (default 10)",
    )
    parser.set_defaults(func=run)

    parser.add_argument(
        "--web", metavar="[HOST:]PORT",
        help="also serve a watch page of the run (needs the web extra; host 127.0.0.1 "
        "unless given; default: no watch page)",
    )
    review = parser.add_argument_group(
        "review", "KataGo labels each recorded game into RUN_DIR/labels beside the games, at "
        "the lowest priority, never waited for by them (docs/review.md): the dashboard and the "
        "watch page show each player's mean point loss a move and the paired verdict, the "
        "report its move-quality section")
    review.add_argument("--review", action="store_true",
                        help="review the games with KataGo as they are recorded (default: "
                        "off; `go19 review RUN_DIR` does it afterwards)")
    review.add_argument("--review-engines", type=positive_int, default=1, metavar="N",
                        help="KataGo processes labelling at once (default 1)")
    review.add_argument("--visits", type=positive_int, default=1, metavar="N",
                        help="KataGo visits per position, as go19 label (default 1: the "
                        "raw net)")
    add_katago_files(review, "the one `make katago` prepared; used by --review and "
                     "[adjudicate]")
    add_katago_timeout(review)
    parser.add_argument(
        "--web-allow-host", action="append", default=[], metavar="NAME",
        help="another Host name the watch page may be reached by (repeatable; default: "
        "the loopback names and the --web host)",
    )

def run(args: argparse.Namespace) -> int:
    if args.games is not None and args.games < 1:
        print("collect: --games must be at least 1", file=sys.stderr)
        return EXIT_INPUT
    if not args.wait_endpoints >= 0:
        print("collect: --wait-endpoints must be 0 or more seconds", file=sys.stderr)
        return EXIT_INPUT
    if args.standings_every < 0:
        print("collect: --standings-every must be 0 or more", file=sys.stderr)
        return EXIT_INPUT
    resume = Path(args.resume) if isinstance(args.resume, str) else args.resume
    katago = _katago(args)
    options = CollectOptions(
        matchup_path=args.matchup,
        games=args.games,
        resume=resume,
        recordings=args.recordings,
        dashboard=not args.no_dashboard and sys.stdout.isatty(),
        wait_endpoints_s=args.wait_endpoints,
        strict_audit=args.strict_audit,
        katago=katago,
    )
    from orchestrator.collect.dashboard import Dashboard
    from orchestrator.collect.standings import PlainLog, plain_log

    dashboard = Dashboard() if options.dashboard else PlainLog(args.standings_every)
    view: ViewTask | None = dashboard.run
    report = None if args.no_report else EndReport(args.reports)
    if args.web is not None:  # the watch page runs where the dashboard would, beside it
        view = _with_web_page(args.web, args.web_allow_host, report, view)
        if view is None:
            return EXIT_INPUT
    review = _review(args, katago)
    if isinstance(review, int):
        return review
    try:
        # The endpoint checks come before the dashboard starts: they go to the plain log.
        summary = trio.run(collect, options, dashboard.on_event, view, plain_log, review)
    except MatchupError as exc:
        print(f"collect: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except CollectError as exc:
        print(f"collect: {exc}", file=sys.stderr)
        return exc.exit_code
    print_summary(summary)
    if review is not None:
        print(review_summary(review, summary))
    if report is not None and summary.state.done:
        written = report.console(summary.run_dir)
        if review is not None:  # as go19 review ends
            from orchestrator.report.quality_tables import verdict_lines

            for name, line in verdict_lines(written):
                print(f"{name}: {line}")
    if args.next_steps and summary.state.done and not summary.removed:
        print(next_steps(summary.run_dir, None if args.no_report
                         else args.reports / summary.run_dir.name / "report.html"))
    return summary.exit_code


class EndReport:
    """The report of the run, written once: by the watch page as the run ends (the page
    is sent it), else after the run; its summary is printed after the run's."""

    def __init__(self, reports: Path) -> None:
        self.reports = reports
        self._written: Report | None = None
        self._error: Exception | None = None

    def write(self, run_dir: Path) -> Path | None:
        """For the watch page (a worker thread): the report's ``report.html``, or None
        when it could not be written (said after the run, as without the page)."""
        from orchestrator.report.build import ReportError, write_report

        try:
            self._written = write_report([run_dir], self.reports / run_dir.name)
        except (ReportError, OSError) as exc:
            self._error = exc
            return None
        return self.reports / run_dir.name / "report.html"

    def console(self, run_dir: Path) -> Report:
        """The report's summary on the terminal, written now if it was not yet."""
        from orchestrator.report.build import write_report
        from orchestrator.report.console import print_summary

        out = self.reports / run_dir.name
        if self._error is not None:
            raise self._error
        if self._written is None:
            return write_report([run_dir], out, console=True)
        print_summary(self._written, out)
        return self._written


def next_steps(run_dir: Path, report: Path | None) -> str:
    """What a newcomer can do with a run just recorded (`make demo`'s last lines): the
    report, a game of their own, KataGo's review, training data and DPO pairs."""
    go19, name, labels = ".venv/bin/go19", run_dir.name, run_dir / LABELS_DIR
    data, pairs = Path("datasets") / name, Path("datasets") / f"{name}-kg"
    lines = ["what next:"]
    if report is not None:
        lines.append(f"  the report: open {report} in a browser (also report.md, report.json)")
    lines += [
        "  play the heuristic AI in the browser:",
        f"    .venv/bin/pip install -e '.[web]' && {go19} play --open",
        "  KataGo's point loss of every move, added to the report (4 games: minutes on a CPU):",
        f"    make katago && {go19} review {run_dir} --max-games 4",
        "  training data, a picture, a prompt and an answer per move:",
        f"    {go19} dataset build {run_dir} --out {data}",
        f"    {go19} dataset export {data} --format jsonl --out exports/{name}",
        "  DPO pairs, after the review:",
        f"    {go19} dataset build {run_dir} --labels {labels} --out {pairs}",
        f"    {go19} dataset export {pairs} --format dpo --dpo-style swift --out "
        f"exports/{name}-dpo",
    ]
    return "\n".join(lines)


def _katago(args: argparse.Namespace) -> EngineFiles | str:
    """The KataGo of ``[adjudicate]`` and ``--review`` (go19 label's checks of its files;
    their logs go elsewhere here), or why there is none."""
    from orchestrator.label.job import KataGoChoice
    from orchestrator.label.store import LabelError

    try:
        return KataGoChoice(args.katago, args.model, args.config).files(Path("katago.log"))
    except LabelError as exc:
        return str(exc)


def _review(args: argparse.Namespace, katago: EngineFiles | str) -> LiveReview | None | int:
    """The live review ``--review`` asks for, None without it, or the exit status after
    one line (no KataGo)."""
    if not args.review:
        return None
    if isinstance(katago, str):
        print(f"collect: --review: {katago}", file=sys.stderr)
        return EXIT_INPUT
    return LiveReview(ReviewOptions(katago.binary, katago.model, katago.config,
                                    engines=args.review_engines, visits=args.visits,
                                    timeout=args.katago_timeout))


def review_summary(review: LiveReview, summary: RunSummary) -> str:
    r = review.result
    line = (f"review: {plural(r.labelled, 'game')} labelled into {review.folder} "
            f"({r.positions} positions, KataGo restarts {r.restarts})")
    if review.stopped is not None:
        line += f"; stopped: {review.stopped}"
    if review.behind:
        line += (f"; {plural(review.behind, 'recorded game')} not labelled "
                 f"({games_named(review.left)}): `go19 collect --matchup ... --resume "
                 f"{summary.run_dir} --review` labels them")
    return line


def _with_web_page(bind: str, allow_hosts: list[str], report: EndReport | None,
                   dashboard: ViewTask | None) -> ViewTask | None:
    """What runs in the dashboard's place: the watch page (orchestrator/web) beside the
    dashboard, if any, on a port bound now, before any game. None after a one-line error."""
    try:
        from orchestrator.web import server
    except ImportError as exc:
        print(f"collect: --web needs the web extra ({exc.name} missing): "
              ".venv/bin/pip install -e '.[web]'", file=sys.stderr)
        return None
    try:
        host, port = server.parse_bind(bind)  # the host checked, as players/address.py does
    except ValueError as exc:
        print(f"collect: --web: {exc}", file=sys.stderr)
        return None
    problem = server.allowed_names_problem(allow_hosts)
    if problem:
        print(f"collect: --web-allow-host: {problem}", file=sys.stderr)
        return None
    try:
        listener = server.bind_listener(host, port)
    except OSError as exc:
        print(f"collect: --web: cannot listen on {host}:{port}: {exc.strerror or exc}",
              file=sys.stderr)
        return None
    if not is_loopback(host):
        print(server.NO_AUTH_WARNING.format(host=host), file=sys.stderr)
    hosts = server.trusted_hosts(host, allow_hosts)
    return server.watch_task(listener, hosts, None if report is None else report.write,
                             dashboard)


def print_summary(summary: RunSummary) -> None:
    state = summary.state
    if summary.removed:
        print(f"interrupted: {summary.dropped_in_flight} game(s) in flight dropped and no game "
              f"was recorded: removed {summary.run_dir}, nothing to resume")
        return
    print(f"run {summary.run_dir}: {state.done}/{state.target} games finished, {state.void} void")
    if summary.interrupted:
        if summary.dropped_in_flight:
            print(
                f"interrupted: {summary.dropped_in_flight} game(s) in flight were dropped "
                "(not recorded); finished games are safe. Continue with --resume."
            )
        else:
            print(
                f"interrupted: {summary.finished_after_interrupt} game(s) in flight were "
                "finished and recorded. Continue with --resume."
            )
    elif state.stop is not None:
        print(f"stopped early: {stop_reason(state.stop)}")
    for name, tally in sorted(state.tally.items()):
        if tally.games:
            print(f"  {name}: {tally.wins}-{tally.losses}-{tally.draws} (W-L-D)")
