"""One module per go19 subcommand (see orchestrator/cli.py)."""
