"""One batch of requests through the processor and ``generate``: synchronous, run by the
batcher in its one worker thread, so nothing here may touch trio.

Adapters in a batch: rows of *mixable* adapters (and of ``base``) share one ``generate``
call, each row with its own adapter: every LoRA layer of the language model gets the
batch's per-row adapter names, as peft's ``adapter_names=`` does, while LoRA layers
outside it (the vision tower of another adapter), whose rows are image patches rather
than requests, get ``__base__`` for every patch. peft's own ``adapter_names=`` passes the
per-request list to those layers too and fails on the count (patches, not requests), which
is why the hooks are set here. An adapter that is not mixable (see :mod:`.loading`) runs
in calls of its own with ``set_adapter``; ``mixing=False`` splits every adapter that way.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from typing import Any, Protocol

import torch
import torch.nn.functional as F
from peft.tuners.lora import Linear as LoraLinear
from transformers import BatchFeature, GenerationConfig, LogitsProcessorList

from orchestrator.players.openai_wire import Completion
from orchestrator.serve.hf.decoding import ChoiceTrie, RowControls
from orchestrator.serve.hf.jobs import BASE, BatchTimes, Job, RequestError
from orchestrator.serve.hf.loading import Loaded
from orchestrator.serve.hf.preparing import Inputs, Item, Preparer

_CHOICE_CACHE = 65536  # token ids of this many choice strings are kept
_CHAT_CACHE = 4096  # chat template texts kept


class Preparing(Protocol):
    """Makes the inputs of requests (chat text, picture bytes): :class:`.Preparer` in
    this process, :class:`.PreparePool` in worker processes."""

    def make(self, items: Sequence[Item]) -> list[Inputs | RequestError]: ...


class RequestPreparer:
    """A request's inputs from its chat and picture: the chat template applied (kept per
    messages), then the processor's tensors (:class:`.Preparer` or :class:`.PreparePool`).
    Needs the processor only, not the model: the model's process runs it, or, with the model
    in a process of its own (:mod:`.model_process`), the process of the ports."""

    def __init__(self, processor: Any, names: Sequence[str],
                 preparing: Preparing | None = None) -> None:
        self.processor = processor
        self.names = frozenset(names)
        self._chats: dict[str, str] = {}  # the chat template's text per messages (JSON)
        self.preparing: Preparing = preparing if preparing is not None else Preparer(processor)

    def prepare(self, job: Job) -> None:
        """The request's own inputs (picture decoded, chat template, processor: its tokens
        and pixels), on ``job.inputs``; a RequestError when they cannot be made."""
        error = self.prepare_many([job])[0]
        if error is not None:
            raise error

    def prepare_many(self, jobs: list[Job]) -> list[RequestError | None]:
        """:meth:`prepare` for requests that arrived together (their pictures through the
        image processor in one call, see :mod:`.preparing`); each request's RequestError,
        or None. Thread-safe: run beside ``generate``."""
        started = time.perf_counter()
        errors: list[RequestError | None] = [None] * len(jobs)
        made: list[int] = []
        for i, job in enumerate(jobs):
            try:
                job.prompt = self._chat_text(job)
                made.append(i)
            except RequestError as exc:
                errors[i] = exc
        if made:
            inputs = self.preparing.make([(jobs[i].prompt or "", jobs[i].image) for i in made])
            for i, result in zip(made, inputs, strict=True):
                if isinstance(result, RequestError):
                    errors[i] = result
                else:
                    jobs[i].inputs = result
        spent = (time.perf_counter() - started) / max(len(jobs), 1)
        for job in jobs:
            job.prepare_s = spent
        return errors

    def _chat_text(self, job: Job) -> str:
        """The chat template applied to the request's messages, kept per messages: a
        template's prompts are few, and jinja costs more than the look-up's JSON."""
        if job.adapter not in self.names:
            raise RequestError(f"no adapter named {job.adapter!r}")
        key = json.dumps(job.messages, ensure_ascii=False, sort_keys=True)
        text = self._chats.get(key)
        if text is not None:
            return text
        try:
            text = self.processor.apply_chat_template(
                job.messages, add_generation_prompt=True, tokenize=False)
        except Exception as exc:  # jinja errors, content the template does not know
            raise RequestError(f"the chat template cannot render these messages: {exc}"
                               ) from None
        if len(self._chats) >= _CHAT_CACHE:
            self._chats.clear()
        self._chats[key] = text
        return text


class BatchRunner:
    def __init__(self, loaded: Loaded, mixing: bool = True, seed: int | None = None,
                 preparing: Preparing | None = None) -> None:
        self.loaded = loaded
        self.mixing = mixing
        self._seeds = random.Random(seed)  # seeds of sampled requests that bring none
        self._active: str | None = None
        self._choice_ids: dict[str, list[int]] = {}
        self._tokenizer = loaded.processor.tokenizer
        self.preparer = RequestPreparer(loaded.processor, loaded.names, preparing)
        self.prepare = self.preparer.prepare
        self.prepare_many = self.preparer.prepare_many

    def run(self, jobs: list[Job]) -> tuple[list[Completion | RequestError], BatchTimes]:
        """Every job's completion, or the RequestError that is its answer instead (jobs not
        prepared yet are prepared here)."""
        times = BatchTimes()
        results: list[Completion | RequestError | None] = [None] * len(jobs)
        ready: list[int] = []
        for i, job in enumerate(jobs):
            if job.inputs is None:
                try:
                    self.prepare(job)
                except RequestError as exc:
                    results[i] = exc
                    continue
            ready.append(i)
        for rows in self._calls([(i, jobs[i].adapter) for i in ready]):
            outcomes = self._generate([jobs[i] for i in rows], times)
            for i, outcome in zip(rows, outcomes, strict=True):
                results[i] = outcome
        assert all(result is not None for result in results)
        return results, times  # type: ignore[return-value]

    def _calls(self, rows: list[tuple[int, str]]) -> list[list[int]]:
        """The batch's rows, grouped into generate calls."""
        shared: list[int] = []
        alone: dict[str, list[int]] = {}
        for i, adapter in rows:
            info = self.loaded.adapters.get(adapter)
            if self.mixing and (adapter == BASE or (info is not None and info.mixable)):
                shared.append(i)
            else:
                alone.setdefault(adapter, []).append(i)
        # A shared call's rows grouped by adapter: each adapter's rows are then one slice
        # of the batch in every LoRA layer (see _row_adapters), not a gather and a scatter.
        names = dict(rows)
        shared.sort(key=lambda i: names[i])
        return [group for group in (shared, *alone.values()) if group]

    def _generate(self, jobs: list[Job], times: BatchTimes) -> list[Completion | RequestError]:
        started = time.perf_counter()
        loaded = self.loaded
        inputs = _collate([job.inputs for job in jobs if job.inputs is not None],
                          loaded.pad_id).to(loaded.device)
        prompt_len = inputs["input_ids"].shape[1]
        controls = RowControls(prompt_len, loaded.eos_ids)
        failed: dict[int, RequestError] = {}
        for row, job in enumerate(jobs):
            try:
                trie = self._trie(job.sampling.choices)
            except ValueError as exc:
                failed[row] = RequestError(str(exc))
                trie = None
            seed = job.sampling.seed
            if seed is None and job.sampling.temperature > 0:
                seed = self._seeds.getrandbits(63)
            controls.add(job.sampling, trie, seed, loaded.device)
        longest = max(job.sampling.max_tokens for job in jobs)
        # A batch whose rows all decode greedily to the call's own limit (the usual one)
        # skips the per-row Python work at every step.
        processors = LogitsProcessorList([controls] if controls.needed(longest) else [])
        config = GenerationConfig(
            max_new_tokens=longest, do_sample=False,
            num_beams=1, eos_token_id=list(loaded.eos_ids), pad_token_id=loaded.pad_id,
            repetition_penalty=1.0,
        )
        times.prepare_s += time.perf_counter() - started
        started = time.perf_counter()
        with torch.inference_mode(), self._adapters([job.adapter for job in jobs]):
            output = loaded.model.generate(**inputs, generation_config=config,
                                           logits_processor=processors)
        times.generate_s += time.perf_counter() - started
        times.calls += 1
        times.rows.append(len(jobs))
        started = time.perf_counter()
        answers: list[Completion | RequestError] = []
        for row in range(len(jobs)):
            if row in failed:
                answers.append(failed[row])
                continue
            answers.append(self._completion(output[row, prompt_len:].tolist(),
                                            int(inputs["attention_mask"][row].sum()),
                                            controls.cut_at_limit(row)))
        times.finish_s += time.perf_counter() - started
        return answers

    def _completion(self, generated: list[int], prompt_tokens: int, cut: bool) -> Completion:
        eos = self.loaded.eos_ids
        stop = next((k for k, token in enumerate(generated) if token in eos), None)
        answer = generated if stop is None else generated[:stop]
        ended = stop is not None and not cut
        text = self._tokenizer.decode(answer, skip_special_tokens=True)
        return Completion(text, prompt_tokens, len(answer) + ended,
                          "stop" if ended else "length")

    def _trie(self, choices: tuple[str, ...] | None) -> ChoiceTrie | None:
        if choices is None:
            return None
        missing = [c for c in dict.fromkeys(choices) if c not in self._choice_ids]
        if missing:
            if len(self._choice_ids) + len(missing) > _CHOICE_CACHE:
                self._choice_ids.clear()
            encoded = self._tokenizer(missing, add_special_tokens=False)["input_ids"]
            self._choice_ids.update(zip(missing, encoded, strict=True))
        return ChoiceTrie(self._choice_ids[c] for c in choices)

    def _adapters(self, names: list[str]) -> Any:
        """The context a generate call over rows of adapters ``names`` runs in."""
        model = self.loaded.model
        if not self.loaded.adapters:
            return nullcontext()
        if len(set(names)) == 1:
            (name,) = set(names)
            if name == BASE:
                return model.disable_adapter()
            if self._active != name:
                model.set_adapter(name, inference_mode=True)
                self._active = name
            return nullcontext()
        return _row_adapters(self.loaded, names)


@contextmanager
def _row_adapters(loaded: Loaded, names: list[str]) -> Iterator[None]:
    """Each row through its own adapter in the language model's LoRA layers (rows grouped
    by adapter: each group is one slice), ``__base__`` for the image patches elsewhere.
    In the language model a layer's forward is peft's vanilla-LoRA mixed-batch sum,
    ``base(x) + B(A(x[rows])) * scaling`` per adapter, on slices rather than peft's
    per-call Python index lists (38 % of ``generate`` at 16 rows on the tiny model)."""
    groups: list[tuple[str, slice]] = []
    for k, name in enumerate(names):
        if groups and groups[-1][0] == name:
            groups[-1] = (name, slice(groups[-1][1].start, k + 1))
        else:
            groups.append((name, slice(k, k + 1)))
    handles = []
    replaced = []

    def sliced(layer: Any) -> Any:
        # Each group's weights looked up once per batch, not per call; F.linear on them is
        # what their bias-free nn.Linear computes (a B with a bias keeps its module).
        plan = []
        for name, rows in groups:
            if name == BASE or name not in layer.lora_A:
                continue
            a, b, dropout = layer.lora_A[name], layer.lora_B[name], layer.lora_dropout[name]
            plan.append((rows, a.weight, b.weight if b.bias is None else b,
                         None if isinstance(dropout, torch.nn.Identity) else dropout,
                         layer.scaling[name]))

        def forward(x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            result = layer.base_layer(x, *args, **kwargs)
            for rows, a, b, dropout, scaling in plan:
                sub = x[rows]
                if sub.dtype != a.dtype:
                    sub = sub.to(a.dtype)
                if dropout is not None:
                    sub = dropout(sub)
                low = F.linear(sub, a)
                out = F.linear(low, b) if isinstance(b, torch.Tensor) else b(low)
                out = out * scaling
                result[rows] += out if out.dtype == result.dtype else out.to(result.dtype)
            return result
        return forward

    def elsewhere(_module: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        kwargs["adapter_names"] = ["__base__"] * args[0].shape[0]
        return args, kwargs

    def plain(layer: Any) -> bool:
        """A vanilla LoRA Linear (no DoRA or other variant: those are not mixable)."""
        return (isinstance(layer, LoraLinear) and not getattr(layer, "lora_variant", {})
                and not any(layer.use_dora.values()))

    ordered = [name for name, _ in groups]
    grouped = len(ordered) == len(set(ordered))  # else peft's own per-row lists
    try:
        for layer, in_language in loaded.lora_layers:
            if in_language and grouped and plain(layer):
                layer.forward = sliced(layer)
                replaced.append(layer)
            elif in_language:
                per_row = [name if name != BASE else "__base__" for name in names]
                handles.append(layer.register_forward_pre_hook(
                    lambda _m, args, kwargs, per_row=per_row: (
                        args, {**kwargs, "adapter_names": per_row}), with_kwargs=True))
            else:
                handles.append(layer.register_forward_pre_hook(elsewhere, with_kwargs=True))
        yield
    finally:
        for layer in replaced:
            del layer.forward  # the class's forward again
        for handle in handles:
            handle.remove()


def _collate(rows: list[dict[str, Any]], pad_id: int) -> BatchFeature:
    """Requests prepared one by one as one batch, as the processor would have made it with
    left padding: per-token tensors (``(1, length)``: input ids, attention mask, token
    types) padded on the left, everything else (pixels, image grids: absent from a request
    without a picture) concatenated."""
    lengths = [row["input_ids"].shape[1] for row in rows]
    longest = max(lengths)
    batch: dict[str, Any] = {}
    for key in dict.fromkeys(key for row in rows for key in row):
        values = [row.get(key) for row in rows]
        if all(isinstance(v, torch.Tensor) and v.dim() == 2 and v.shape == (1, n)
               for v, n in zip(values, lengths, strict=True) if v is not None):
            fill = pad_id if key == "input_ids" else 0
            batch[key] = torch.cat([
                torch.nn.functional.pad(v if v is not None else torch.zeros(1, n, dtype=torch.long),
                                        (longest - n, 0), value=fill)
                for v, n in zip(values, lengths, strict=True)])
        elif all(isinstance(v, torch.Tensor) for v in values if v is not None):
            batch[key] = torch.cat([v for v in values if v is not None])
        else:
            batch[key] = [item for v in values if v is not None for item in v]
    return BatchFeature(batch)
