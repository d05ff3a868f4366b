"""`go19 serve --engine hf`: its options, their checks, and the call into
:mod:`orchestrator.serve.hf` (imported only here, and only for this engine: torch stays out of
every other command)."""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from orchestrator.commands import extra_problem
from orchestrator.coords import MOVE_TEXTS
from orchestrator.players.address import is_loopback
from orchestrator.prompt import GO19_FIELDS, PromptError, fields, read_template

if TYPE_CHECKING:
    from orchestrator.serve.hf.loading import AdapterInfo
    from orchestrator.serve.hf.model_process import ModelProcess
    from orchestrator.serve.hf.preparing import PreparePool

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
BASE = "base"  # orchestrator.serve.hf.jobs.BASE, without importing the package before the checks
API_KEY_ENV = "GO19_API_KEY"  # as vLLM's VLLM_API_KEY

# (option, dest, default): the options that mean something only with --engine hf.
_HF_OPTIONS: list[tuple[str, str, object]] = []


def _add(group: argparse._ArgumentGroup, option: str, **kwargs: object) -> None:
    action = group.add_argument(option, **kwargs)  # type: ignore[arg-type]
    _HF_OPTIONS.append((option, action.dest, action.default))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "--engine hf", "A vision-language model (transformers' AutoModelForImageTextToText) "
        "and its peft LoRA adapters, loaded once from local folders (nothing is fetched), "
        "answering every --listen port and --openai from one batch queue. Needs the vlm "
        "extra; docs/vlm.md.")
    _add(group, "--model", type=Path, metavar="DIR",
         help="the base model's folder (no default: --engine hf needs one)")
    _add(group, "--adapter", action="append", metavar="NAME=DIR",
         help="a LoRA adapter folder and the name ports and OpenAI requests call it by "
         "(repeatable; default: none, the base model alone)")
    _add(group, "--listen", action="append", metavar="NAME=[HOST:]PORT",
         help="a GO19 port answered by adapter NAME ('base': the model without adapter); "
         "repeatable, HOST defaults to --host (default: none; --openai alone serves no "
         "GO19 port)")
    _add(group, "--openai", metavar="[HOST:]PORT", help="also serve the OpenAI-compatible "
         "API (GET /v1/models, POST /v1/chat/completions; model = the adapter name) "
         "(default: none)")
    _add(group, "--api-key", metavar="KEY",
         help="the OpenAI API answers only requests with 'Authorization: Bearer KEY' (401 "
         f"otherwise, as vLLM's --api-key); /health stays open (default: ${API_KEY_ENV}, "
         "which keeps the key out of the process list; neither: no key). The GO19 ports "
         "have no authentication: keep them on a private network")
    _add(group, "--max-batch", type=int, default=32, metavar="N",
         help="requests of all ports in one batch at most (1: no batching)")
    _add(group, "--max-wait-ms", type=float, default=5.0, metavar="MS",
         help="how long a batch may wait for requests still being prepared to join it (it "
         "never waits for requests not yet arrived)")
    _add(group, "--batch-adapters", choices=("mixed", "split"), default="mixed",
         help="mixed: requests of several adapters share a generate call (adapters on the "
         "language model only; one that touches the vision tower always gets its own); "
         "split: one call per adapter")
    _add(group, "--max-new-tokens", type=int, default=8, metavar="N",
         help="tokens an answer may have (OpenAI requests: when they set no max_tokens)")
    _add(group, "--temperature", type=float, default=0.0,
         help="0 decodes greedily; above, answers are sampled (repeatable with --seed)")
    _add(group, "--prompt", type=Path, metavar="FILE", help="prompt template, the file "
         "`go19 dataset export --prompt` took; with --listen it may show only what a GO19 "
         "request carries, and {komi} with --komi (default: the shipped template)")
    _add(group, "--answer", choices=MOVE_TEXTS, default="gtp",
         help="how the model spells a move, as the export wrote it (gtp Q16, sgf pd, rowcol "
         "3,15); the first token of the reply that spells one is played")
    _add(group, "--constrain", choices=("none", "legal"), default="none",
         help="legal: decode only the spelling of an empty point that is not suicide, or "
         "pass; ko and superko cannot be known (a GO19 request has no history)")
    _add(group, "--device", default="auto",
         help="auto (the first CUDA device if torch sees one, else cpu), cpu, cuda, cuda:N")
    _add(group, "--dtype", choices=("auto", "bfloat16", "float16", "float32"), default="auto",
         help="auto: bfloat16 on a GPU (float16 where it lacks bfloat16), float32 on the CPU")
    _add(group, "--threads", type=int, metavar="N",
         help="torch's CPU threads for the model (default: torch's own choice, the cores)")
    _add(group, "--prepare-workers", type=int, metavar="N",
         help="processes that decode the pictures and run the processor beside the model "
         "(0: threads of the ports' process, which share its GIL) (default: half the "
         "cores up to 4, one less with --model-process: none on 2 cores)")
    _add(group, "--model-process", action=argparse.BooleanOptionalAction, default=True,
         help="the model in a process of its own, apart from the ports and the batch queue "
         "(as vLLM's engine core), so that generate has a GIL of its own; "
         "--no-model-process: all in one process (docs/vlm.md has the figures)")
    _add(group, "--log-requests", type=Path, metavar="FILE",
         help="append one JSON line per request to FILE: the prompt (the exact text given "
         "to the processor), image_sha256 (of the picture's bytes as received), the adapter, "
         "the answer, its ms, batch and timings (default: none)")
    _add(group, "--summary-s", type=float, default=60.0, metavar="S",
         help="a summary line on stderr every S seconds (requests/s, mean batch, p50/p95 "
         "latency per adapter); 0: none")


def given_options(args: argparse.Namespace) -> list[str]:
    """The --engine hf options given a value other than their default."""
    return [option for option, dest, default in _HF_OPTIONS
            if getattr(args, dest) != default]


def _named(text: str, what: str) -> tuple[str, str]:
    name, sep, rest = text.partition("=")
    if not sep or not rest:
        raise ValueError(f"{what} {text!r}: expected NAME=...")
    if not _NAME.fullmatch(name):
        raise ValueError(f"{what} {text!r}: a name is letters, digits, '.', '_' and '-'")
    return name, rest


def _bind(text: str, default_host: str, what: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host.strip("[]") if sep and host else default_host
    if not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"{what}: bad address {text!r}, expected [HOST:]PORT with a port in "
                         "0..65535")
    return host, int(port)


def _check(args: argparse.Namespace) -> None:
    """Every command-line problem as a ValueError, before anything is loaded."""
    if args.port is not None:
        raise ValueError("--engine hf takes --listen NAME=[HOST:]PORT (one per adapter), "
                         "not --port")
    if args.model is None:
        raise ValueError("--engine hf needs --model DIR")
    if not args.model.is_dir():
        raise ValueError(f"--model {args.model}: no such folder")
    adapters: dict[str, Path] = {}
    for text in args.adapter or ():
        name, folder = _named(text, "--adapter")
        if name == BASE:
            raise ValueError(f"--adapter {text!r}: '{BASE}' is the model without adapter")
        if name in adapters:
            raise ValueError(f"--adapter {name} is given twice")
        if not Path(folder).is_dir():
            raise ValueError(f"--adapter {text}: no such folder")
        adapters[name] = Path(folder)
    args.adapters = adapters
    args.listens = []
    seen: set[tuple[str, int]] = set()
    for text in args.listen or ():
        name, address = _named(text, "--listen")
        if name != BASE and name not in adapters:
            known = f"adapters: {', '.join(adapters)}; " if adapters else "no --adapter given; "
            raise ValueError(f"--listen {text!r}: no adapter named {name!r} ({known}"
                             f"'{BASE}' is the model without adapter)")
        host, port = _bind(address, args.host, f"--listen {text!r}")
        if port and (host, port) in seen:
            raise ValueError(f"--listen {text!r}: that address is already listened on")
        seen.add((host, port))
        args.listens.append((name, host, port))
    args.openai_bind = None if args.openai is None else _bind(args.openai, args.host, "--openai")
    if args.api_key is not None and args.openai_bind is None:
        raise ValueError("--api-key is for the OpenAI API: give --openai [HOST:]PORT")
    if args.api_key is not None and not args.api_key.strip():
        raise ValueError("--api-key is empty")
    if not args.listens and args.openai_bind is None:
        raise ValueError("--engine hf needs a --listen NAME=[HOST:]PORT or --openai [HOST:]PORT")
    for name, bad, rule in (
        ("max-batch", args.max_batch < 1, "at least 1"),
        ("max-wait-ms", not args.max_wait_ms >= 0, "zero or more"),
        ("max-new-tokens", not 1 <= args.max_new_tokens <= 1024, "in 1..1024"),
        ("temperature", not 0 <= args.temperature <= 2, "in 0..2"),
        ("summary-s", not args.summary_s >= 0, "zero or more"),
        ("threads", args.threads is not None and args.threads < 1, "at least 1"),
        ("prepare-workers", args.prepare_workers is not None and args.prepare_workers < 0,
         "zero or more"),
        ("size", any(s != 19 for s in args.sizes or ()), "19: the prompt speaks of 19x19"),
        ("idle-timeout", not args.idle_timeout > 0, "positive"),
        ("frame-timeout", not args.frame_timeout > 0, "positive"),
        ("max-connections", args.max_connections < 1, "at least 1"),
        ("partial-budget-mib", not args.partial_budget_mib > 0, "positive"),
    ):
        if bad:
            raise ValueError(f"--{name} must be {rule}")


def _check_knowable(template: str, args: argparse.Namespace) -> None:
    """A GO19 port fills the template from the request alone (the board and the side to
    move) and ``--komi``: any other field would be a guess, so the template is refused."""
    where = args.prompt or "the prompt template"
    for name in fields(template):
        if name in GO19_FIELDS or (name == "komi" and args.komi is not None):
            continue
        if name == "komi":
            raise ValueError(f"{where} shows {{komi}}, which a GO19 request does not carry: "
                             "give --komi K, the komi of the games this server plays")
        raise ValueError(f"{where} shows {{{name}}}, which a GO19 request does not carry (it "
                         "has only the board and the side to move): remove it from the "
                         "template, and export with the same template")


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    try:
        _check(args)
    except ValueError as exc:
        print(f"serve: {exc}", file=sys.stderr)
        return 2
    api_key = args.api_key or os.environ.get(API_KEY_ENV) or None
    if args.openai_bind is not None and api_key is None and not is_loopback(args.openai_bind[0]):
        # Said once the command line is read, before anything is loaded (a large model
        # takes minutes), not after.
        print(f"serve: warning: the OpenAI API on {args.openai} has no key: anyone who can "
              f"reach it uses the model and every adapter; give --api-key or ${API_KEY_ENV}",
              file=sys.stderr, flush=True)
    try:
        template = read_template(args.prompt)
        if args.listens:
            _check_knowable(template, args)
    except (ValueError, PromptError) as exc:
        print(f"serve: {exc}", file=sys.stderr)
        return 2
    problem = extra_problem("--engine hf")
    if problem:
        print(f"serve: {problem}", file=sys.stderr)
        return 2
    log_file = None
    if args.log_requests is not None:
        try:  # line-buffered: each request's line is in the file once it is answered
            log_file = open(args.log_requests, "a", encoding="utf-8", buffering=1)
        except OSError as exc:
            print(f"serve: --log-requests {args.log_requests}: cannot open it: "
                  f"{exc.strerror or exc}", file=sys.stderr)
            return 2
    try:
        return _serve(args, template, api_key, None if log_file is None else (
            lambda line: log_file.write(line + "\n")))
    finally:
        if log_file is not None:
            log_file.close()


def _serve(args: argparse.Namespace, template: str, api_key: str | None,
           request_log: Callable[[str], object] | None) -> int:
    if args.threads is not None:
        import torch

        torch.set_num_threads(args.threads)
    from orchestrator.serve.hf.batcher import default_prepare_workers
    from orchestrator.serve.hf.loading import LoadError, check_before_loading
    from orchestrator.serve.hf.model_process import ModelProcess, ModelSettings
    from orchestrator.serve.hf.preparing import PreparePool

    try:
        check_before_loading(args.model, args.adapters, args.device)
    except LoadError as exc:
        print(f"serve: {exc}", file=sys.stderr)
        return 2
    workers = default_prepare_workers(args.model_process) if args.prepare_workers is None \
        else args.prepare_workers
    # Started first: they load the processor (and the model) while this process goes on.
    model = ModelProcess(ModelSettings(
        args.model, args.adapters, args.device, args.dtype, args.threads,
        args.batch_adapters == "mixed", args.seed)) if args.model_process else None
    pool = PreparePool(args.model, workers) if workers else None
    try:
        return _serve_with(args, template, api_key, request_log, pool, model)
    finally:
        if pool is not None:
            pool.close()
        if model is not None:
            model.close()


def _serve_with(args: argparse.Namespace, template: str, api_key: str | None,
                request_log: Callable[[str], object] | None, pool: PreparePool | None,
                model: ModelProcess | None) -> int:
    from orchestrator.serve.hf.batcher import default_prepare_threads
    from orchestrator.serve.hf.generation import BatchRunner, RequestPreparer
    from orchestrator.serve.hf.loading import LoadError, describe, load, load_processor
    from orchestrator.serve.hf.openai_app import ServedModel
    from orchestrator.serve.hf.server import (
        Listen,
        ListenError,
        ServeOptions,
        serve_vlm,
        startup_lines,
    )

    mixing = args.batch_adapters == "mixed"
    try:
        if model is None:
            loaded = load(args.model, args.adapters, args.device, args.dtype)
            runner = BatchRunner(loaded, mixing=mixing, seed=args.seed, preparing=pool)
            run_batch, prepare, description = runner.run, runner.prepare_many, describe(loaded)
        else:
            preparer = RequestPreparer(load_processor(args.model), [BASE, *args.adapters], pool)
            description = model.wait_ready()
            run_batch, prepare = model.run, preparer.prepare_many
    except LoadError as exc:
        print(f"serve: {exc}", file=sys.stderr)
        return 2
    if pool is not None:
        try:
            pool.wait_ready()
        except Exception as exc:  # the model's process loaded the same folder: unlikely
            print(f"serve: a prepare worker cannot load the processor of {args.model}: "
                  f"{_one_line(exc)}", file=sys.stderr)
            return 2
    options = ServeOptions(
        listens=[Listen(*listen) for listen in args.listens], template=template,
        openai=args.openai_bind, api_key=api_key, max_batch=args.max_batch,
        max_wait_ms=args.max_wait_ms,
        max_new_tokens=args.max_new_tokens, temperature=args.temperature, answer=args.answer,
        komi=args.komi, constrain=args.constrain == "legal",
        request_log=request_log,
        summary_s=args.summary_s, idle_timeout=args.idle_timeout,
        frame_timeout=args.frame_timeout, max_connections=args.max_connections,
        partial_budget=int(args.partial_budget_mib * (1 << 20)),
        connection_log=(lambda _: None) if args.quiet else _stderr,
        prepare_threads=pool.workers if pool is not None else default_prepare_threads(),
    )
    models = [ServedModel(BASE, str(args.model), None)] + [
        ServedModel(name, str(info.path), BASE) for name, info in description.adapters.items()]
    model_line = (f"{args.model} ({description.model_type}, "
                  f"{description.parameters / 1e6:.2f} M parameters)")
    described = [(name, _describe(info, mixing)) for name, info in description.adapters.items()]
    if any(adapter == BASE for adapter, _, _ in args.listens):
        described.insert(0, (BASE, "the model without adapter"))
    where = f", in process {model.pid} of its own" if model is not None else ""
    failed: list[str] = []

    async def main() -> None:
        # Hypercorn takes a KeyboardInterrupt as its own shutdown and returns: the signals
        # end everything here instead (as in `go19 play`).
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                try:
                    bound = await nursery.start(serve_vlm, options, run_batch, models, _stderr,
                                                prepare)
                except ListenError as exc:
                    failed.append(str(exc))
                    return
                device = f"{description.device} ({description.dtype})"
                for line in startup_lines(device, model_line + where, described, bound):
                    print(line, flush=True)
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    return

    trio.run(main)
    if failed:
        print(f"serve: {failed[0]}", file=sys.stderr)
        return 1
    return 0


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300] or type(exc).__name__


def _describe(info: AdapterInfo, mixing: bool) -> str:
    if not info.mixable:
        batches = f"batches of its own ({info.why_not_mixable})"
    else:
        batches = "mixed batches" if mixing else "batches of its own (--batch-adapters split)"
    return f"rank {info.rank}, targets {info.targets}, {batches}"
