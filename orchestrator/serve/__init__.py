"""Serving moves: the GO19 server (:mod:`.go19`), the engines behind it (:mod:`.engines`:
heuristic, random, any player such as a GTP engine; :mod:`.hf`: a transformers VLM and its
LoRA adapters, with their OpenAI-compatible app)."""

from orchestrator.serve.engines import (
    ChooserEngine,
    Engine,
    EngineError,
    HeuristicEngine,
    PictureEngine,
    PlayerEngine,
    RandomEngine,
    position,
    stone_points,
)
from orchestrator.serve.go19 import ServerStats, serve_go19

__all__ = ["ChooserEngine", "Engine", "EngineError", "HeuristicEngine", "PictureEngine",
           "PlayerEngine", "RandomEngine", "ServerStats", "position", "serve_go19",
           "stone_points"]
