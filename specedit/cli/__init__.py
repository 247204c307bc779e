"""The command line: the editing commands (commands.py) with their options (options.py), the
commands around them (tools.py: bench, calibrate, serve, models), loading the model
(startup.py), and delivering an edit to its file (deliver.py). `run` is the `specedit` script's
entry point."""

from specedit.cli.commands import app, run

__all__ = ["app", "run"]
