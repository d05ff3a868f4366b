"""What a VLM is asked, in one home: the prompt template and the code that fills it,
imported by the training export and by every player and server that asks a model, so a
model is asked exactly what it was trained on."""

from orchestrator.prompt.answer import read_move, unparsed_detail
from orchestrator.prompt.template import (
    ANSWER_FORMATS,
    GO19_FIELDS,
    PLACEHOLDERS,
    PromptError,
    check_template,
    default_template,
    fields,
    fill,
    read_template,
    text_board,
    uses_board,
)

__all__ = [
    "ANSWER_FORMATS", "GO19_FIELDS", "PLACEHOLDERS", "PromptError", "check_template",
    "default_template", "fields", "fill", "read_move", "read_template", "text_board",
    "unparsed_detail", "uses_board",
]
