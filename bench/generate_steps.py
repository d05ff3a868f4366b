"""How one of `go19 serve --engine hf`'s batches splits inside `generate` (not a test):
`.venv/bin/python bench/generate_steps.py` (needs the vlm extra; ``BENCH_MODEL=256x4`` for
the larger random model of bench/serve_vs_vllm.py).

Why: what continuous batching (a request joining the running batch at its next decoding
step, as vLLM's scheduler does) could gain over go19's static batches depends on how much
of a batch's `generate` is its first forward (the prefill: the vision tower on every
picture and the whole prompt through the language model) and how much the steps after it,
which are all a newcomer could skip waiting for. Measured in this process, one torch thread
(the server's ``--threads 1``), on the serving path's own inputs and adapters: positions
of the real games of ../shared as 512 px PNGs, prepared as the server prepares them, the rows half
adapter a and half b in one mixed call (:func:`_row_adapters`), greedy to the answer's end
as the bench's requests are (``max_tokens`` 8; every row stops at its end-of-answer token).

Printed per batch size: the whole `generate`, the first forward alone (``generate`` of one
new token: the prefill and the call's own set-up), the tokens each row decoded and the time
per decoding step after the first.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from transformers import GenerationConfig  # noqa: E402

from orchestrator.files import read_sgf_file  # noqa: E402
from orchestrator.players.openai_wire import AskSettings, prompt_text  # noqa: E402
from orchestrator.prompt import default_template  # noqa: E402
from orchestrator.render import render_png  # noqa: E402
from orchestrator.rules.game import Game  # noqa: E402
from orchestrator.serve.hf.generation import RequestPreparer, _collate, _row_adapters  # noqa: E402
from orchestrator.serve.hf.jobs import Job, Sampling  # noqa: E402
from orchestrator.serve.hf.loading import Loaded, load  # noqa: E402
from orchestrator.serve.hf.preparing import Inputs  # noqa: E402
from tests.vlm.tiny import ANSWERS, GAME, tiny_model  # noqa: E402

ROWS = (1, 8, 16, 64)
REPEATS = 9  # timed calls per measurement (the median is printed), after two to warm up
MAX_TOKENS = 8  # as bench/serve_vs_vllm.py's requests ask
MODEL = os.environ.get("BENCH_MODEL", "")


def positions(count: int) -> list[tuple[str, bytes]]:
    """(prompt text, 512 px PNG) of ``count`` positions of GAME, from move 10 on."""
    record = read_sgf_file(GAME)[0]
    game = Game(19, record.komi)
    settings = AskSettings(model="a", template=default_template(), max_tokens=MAX_TOKENS)
    made: list[tuple[str, bytes]] = []
    last = None
    for number, move in enumerate(record.moves):
        if number >= 10:
            made.append((prompt_text(settings, game), render_png(game.board.to_array(),
                                                                 last, 512)))
            if len(made) == count:
                return made
        game.play(move.point, move.color)
        last = move.point
    raise SystemExit(f"{GAME.name} has fewer than {count + 10} moves")


def prepared(loaded: Loaded, items: list[tuple[str, bytes]]) -> list[Inputs]:
    """The inputs the server makes of these requests (its own chat template step and
    :class:`Preparer`), as the OpenAI port's chat puts the picture before the text."""
    preparer = RequestPreparer(loaded.processor, loaded.names)
    jobs = [Job("a", [{"role": "user", "content": [{"type": "image"},
                                                   {"type": "text", "text": text}]}],
                png, Sampling(MAX_TOKENS)) for text, png in items]
    errors = [error for error in preparer.prepare_many(jobs) if error is not None]
    if errors:
        raise SystemExit(f"the server would refuse a position: {errors[0]}")
    return [job.inputs for job in jobs if job.inputs is not None]


def median_ms(*calls: Callable[[], object]) -> list[float]:
    """Each call's median time, the calls taking turns so that the machine's drift falls on
    all alike."""
    for call in calls * 2:
        call()
    times: list[list[float]] = [[] for _ in calls]
    for _ in range(REPEATS):
        for call, spent in zip(calls, times, strict=True):
            started = time.perf_counter()
            call()
            spent.append(time.perf_counter() - started)
    return [statistics.median(spent) * 1e3 for spent in times]


def main() -> None:
    torch.set_num_threads(1)
    if MODEL:
        hidden, _, layers = MODEL.partition("x")
        if not (hidden.isdigit() and layers.isdigit()):
            raise SystemExit(f"BENCH_MODEL={MODEL}: HIDDENxLAYERS, e.g. 256x4")
        tiny = tiny_model(int(hidden), int(layers))
    else:
        tiny = tiny_model()
    loaded = load(tiny.model, {name: tiny.adapter(name) for name in ("a", "b")}, "cpu")
    inputs = prepared(loaded, positions(max(ROWS)))
    print(f"model {MODEL or 'tiny'}: {tiny.model}; one torch thread; median of {REPEATS}")
    for rows in ROWS:
        batch = _collate(inputs[:rows], loaded.pad_id)
        names = sorted("ab"[k % 2] for k in range(rows))  # grouped, as the batch's call is

        def generate(new_tokens: int, batch: object = batch, names: list[str] = names
                     ) -> torch.Tensor:
            config = GenerationConfig(max_new_tokens=new_tokens, do_sample=False, num_beams=1,
                                      eos_token_id=list(loaded.eos_ids),
                                      pad_token_id=loaded.pad_id)
            with torch.inference_mode(), _row_adapters(loaded, names):
                out: torch.Tensor = loaded.model.generate(**batch, generation_config=config)
            return out

        prompt = int(batch["input_ids"].shape[1])
        decoded = generate(MAX_TOKENS)[:, prompt:]
        # a row's tokens up to and with its end-of-answer token (later ones are padding)
        lengths = [next((k + 1 for k, t in enumerate(row.tolist()) if t in loaded.eos_ids),
                        len(row)) for row in decoded]
        answers = [loaded.processor.tokenizer.decode(row[:n], skip_special_tokens=True)
                   for row, n in zip(decoded, lengths, strict=True)]
        wrong = sum(answer != ANSWERS[name] for answer, name in zip(answers, names,
                                                                    strict=True))
        if wrong:
            raise SystemExit(f"{wrong} of {rows} rows did not answer their adapter's move")
        whole, first = median_ms(lambda: generate(MAX_TOKENS), lambda: generate(1))
        steps = max(lengths) - 1
        per_step = (whole - first) / steps if steps else 0.0
        print(f"{rows:3d} rows, prompt {prompt} tokens: generate {whole:7.2f} ms, first "
              f"forward {first:7.2f} ms ({first / whole:4.0%}), tokens per row "
              f"{min(lengths)}-{max(lengths)}, {steps} steps after it at {per_step:5.2f} ms "
              f"each ({steps * per_step / whole:4.0%}); every row its adapter's move", flush=True)


if __name__ == "__main__":
    main()
