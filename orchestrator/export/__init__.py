"""``go19 dataset export``: a built dataset into the files a VLM trainer takes as they
are (pictures exactly as the GO19 client renders them, the prompt from
:mod:`orchestrator.prompt`, the answer in the chosen spelling)."""

from orchestrator.export.pipeline import DEFAULT_SHARD_SIZE, FORMATS, ExportOptions, export

__all__ = ["DEFAULT_SHARD_SIZE", "FORMATS", "ExportOptions", "export"]
