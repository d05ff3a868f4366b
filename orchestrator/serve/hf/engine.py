"""A GO19 port's engine, a player (:class:`~orchestrator.players.base.Player`): the
request's own PNG and the export's prompt for its position, asked of one adapter through
the shared batch queue, the reply read as a move.

What the model sees is what ``go19 dataset export`` writes for the same position: the
picture is the PNG bytes the client sent (never re-rendered), the text is the template
filled by :func:`orchestrator.prompt.fill`, the function the export calls, and the answer
is read in the export's spelling by :func:`orchestrator.prompt.read_move`. A GO19 request
carries the board and the side to move and nothing else: a template that shows the move
number is refused at start (no board tells it: captures and passes), one that shows the
komi needs ``--komi`` (``commands/serve_hf.py``), so no fact is guessed.

``constrain`` (``--constrain legal``) holds the answer to the spelling of an empty point
where the stone would not be suicide, or ``pass``. Ko and superko cannot be known: GO19
carries no history, so the referee may still refuse a ko capture.
"""

from __future__ import annotations

import numpy as np

from orchestrator.players.base import Answer, answered
from orchestrator.players.openai_wire import legal_texts
from orchestrator.prompt import fill, read_move, unparsed_detail, uses_board
from orchestrator.rules.game import Game
from orchestrator.serve import EngineError, position
from orchestrator.serve.hf.batcher import Batcher
from orchestrator.serve.hf.jobs import Job, RequestError, Sampling


class VlmEngine:
    def __init__(self, batcher: Batcher, adapter: str, template: str, spelling: str,
                 komi: float | None, sampling: Sampling, constrain: bool = False) -> None:
        self.name = adapter
        self.batcher = batcher
        self.adapter = adapter
        self.template = template
        self.with_board = uses_board(template)
        self.spelling = spelling
        self.komi = komi
        self.sampling = sampling
        self.constrain = constrain

    def prompt(self, board: np.ndarray, color: int) -> str:
        return fill(self.template, color, None, self.komi, self.spelling,
                    board if self.with_board else None)

    async def answer(self, game: Game, number: int = 0,
                     picture: bytes | None = None) -> Answer:
        """The adapter's move for the request's position, read from its reply to the
        request's own ``picture`` (none is an error: it never draws one)."""
        return await answered(self._move(game.board.to_array(), game.to_play, picture))

    async def _move(self, board: np.ndarray, color: int, png: bytes | None) -> int:
        if not png:
            raise EngineError("the request carries no picture (png_len 0): this engine "
                              "answers from the PNG")
        position(board)  # an impossible position is refused before the model sees it
        choices = tuple(legal_texts(position(board), color, self.spelling)) \
            if self.constrain else None
        messages = [{"role": "user", "content": [
            {"type": "image"}, {"type": "text", "text": self.prompt(board, color)}]}]
        sampling = Sampling(self.sampling.max_tokens, self.sampling.temperature,
                            self.sampling.top_p, None, choices)
        try:
            completion = await self.batcher.submit(Job(self.adapter, messages, png, sampling))
        except RequestError as exc:
            raise EngineError(str(exc)) from None
        text = completion.text or ""
        move = read_move(text, board.shape[0], self.spelling)
        if move is None:
            raise EngineError(unparsed_detail(text))
        return move

    async def aclose(self) -> None:
        return None
