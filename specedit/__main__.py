"""`python -m specedit` runs the CLI, as the `specedit` script does."""

from specedit.cli import run

run()
