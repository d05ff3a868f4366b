"""Per-row decoding inside one ``generate`` call: a row may be held to a list of strings
(its legal moves, or an OpenAI request's ``structured_outputs.choice``), stop at its own
``max_tokens``, and sample at its own temperature with its own seed, so a request gets
the answer it would get alone whatever batch it runs in.

``generate`` itself runs greedy: :class:`RowControls` is a logits processor that, per
row, masks every token that does not continue one of its choices (a trie of the choices'
token ids, the tokenizer's own spelling of each), forces the end of the answer at its
token limit, and for a sampled row draws the token itself (``torch.Generator`` seeded per
request) and leaves only that one, which greedy then picks.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from transformers import LogitsProcessor

from orchestrator.serve.hf.jobs import Sampling


class _Node:
    __slots__ = ("children", "end")

    def __init__(self) -> None:
        self.children: dict[int, _Node] = {}
        self.end = False  # a whole choice ends here


class ChoiceTrie:
    """The token-id sequences of the allowed answers."""

    def __init__(self, sequences: Iterable[Sequence[int]]) -> None:
        self.root = _Node()
        for ids in sequences:
            if not ids:
                continue
            node = self.root
            for token in ids:
                node = node.children.setdefault(int(token), _Node())
            node.end = True
        if not self.root.children:
            raise ValueError("no choice to decode to")


@dataclass
class _Row:
    sampling: Sampling
    trie: ChoiceTrie | None
    generator: torch.Generator | None
    node: _Node | None = None
    finished: bool = False
    hit_limit: bool = False  # the answer was cut at max_tokens


class RowControls(LogitsProcessor):
    """The logits processor of one ``generate`` call, one row per request in batch order."""

    def __init__(self, prompt_len: int, eos_ids: tuple[int, ...]) -> None:
        self.prompt_len = prompt_len
        self.eos_ids = eos_ids
        self.rows: list[_Row] = []

    def add(self, sampling: Sampling, trie: ChoiceTrie | None, seed: int | None,
            device: torch.device) -> None:
        generator = None
        if sampling.temperature > 0:
            generator = torch.Generator(device=device)
            generator.manual_seed(seed if seed is not None else 0)
        self.rows.append(_Row(sampling, trie, generator, trie.root if trie else None))

    def cut_at_limit(self, row: int) -> bool:
        return self.rows[row].hit_limit

    def needed(self, max_new_tokens: int) -> bool:
        """Whether any row needs this processor in a call of ``max_new_tokens``: one held to
        choices, sampled, or with a token limit below the call's (``generate`` stops every
        row at the call's own). Without one, greedy ``generate`` alone decodes the same."""
        return any(row.trie is not None or row.generator is not None
                   or row.sampling.max_tokens < max_new_tokens for row in self.rows)

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor
                 ) -> torch.FloatTensor:
        step = input_ids.shape[1] - self.prompt_len
        for i, row in enumerate(self.rows):
            if row.finished:
                continue
            if step > 0:
                last = int(input_ids[i, -1])
                if last in self.eos_ids:
                    row.finished = True
                    continue
                if row.node is not None:
                    row.node = row.node.children.get(last)
            if step >= row.sampling.max_tokens:
                row.hit_limit = True
                self._only(scores, i, list(self.eos_ids))
                continue
            if row.trie is not None:
                node = row.node
                allowed = list(node.children) if node is not None else []
                if node is None or node.end:
                    allowed += self.eos_ids
                self._only(scores, i, allowed)
            if row.generator is not None:
                self._sample(scores, i, row)
        return scores

    @staticmethod
    def _only(scores: torch.Tensor, i: int, allowed: list[int]) -> None:
        keep = torch.tensor(allowed, device=scores.device)
        kept = scores[i, keep].clone()
        scores[i].fill_(-torch.inf)
        scores[i, keep] = kept

    @staticmethod
    def _sample(scores: torch.Tensor, i: int, row: _Row) -> None:
        logits = scores[i].float() / row.sampling.temperature
        probs = torch.softmax(logits, dim=-1)
        if row.sampling.top_p < 1.0:
            ordered, order = torch.sort(probs, descending=True)
            drop = torch.cumsum(ordered, dim=-1) - ordered > row.sampling.top_p
            probs = probs.clone()
            probs[order[drop]] = 0.0
        token = int(torch.multinomial(probs, 1, generator=row.generator))
        scores[i].fill_(-torch.inf)
        scores[i, token] = 0.0
