"""The command line: the Typer commands (commands.py) and delivering an edit to its file
(deliver.py). `run` is the `specedit` script's entry point."""

from specedit.cli.commands import app, run

__all__ = ["app", "run"]
