"""`python -m specedit` runs the CLI, as the `specedit` script does."""

from specedit.cli import app

app(prog_name="specedit")
