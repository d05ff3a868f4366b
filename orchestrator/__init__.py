"""go19: collect, referee, rate and turn into datasets games between Go-playing VLM adapters."""

__version__ = "0.1.0"
