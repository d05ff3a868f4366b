"""Serving moves: the GO19 server (:mod:`.go19`) in front of any player (:mod:`.engines`:
a request's position as a game); :mod:`.hf`: a transformers VLM and its LoRA adapters, with
their OpenAI-compatible app."""

from orchestrator.serve.engines import EngineError, position, request_game, stone_points
from orchestrator.serve.go19 import ServerStats, serve_go19

__all__ = ["EngineError", "ServerStats", "position", "request_game", "serve_go19",
           "stone_points"]
