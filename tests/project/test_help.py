"""`--help` is the first page a user reads: saved snapshots show each change to it in review.

After a deliberate change: `SPECEDIT_UPDATE_SNAPSHOTS=1 pytest tests/project/test_help.py`,
then read the diff of tests/snapshots/.
"""

from __future__ import annotations

import os

import pytest
from helpers import SNAPSHOTS
from typer.testing import CliRunner

from specedit.cli import app


@pytest.mark.parametrize("command", ["fix", "edit", "rewrite", "apply"])
def test_the_editing_commands_help_is_as_saved(command, monkeypatch):
    for name in ("SPECEDIT_MODEL", "SPECEDIT_DTYPE", "SPECEDIT_THREADS"):  # the fast tier's
        monkeypatch.delenv(name, raising=False)
    result = CliRunner().invoke(app, [command, "--help"], terminal_width=100, prog_name="specedit")
    assert result.exit_code == 0, result.output
    saved = SNAPSHOTS / f"help-{command}.txt"
    if os.environ.get("SPECEDIT_UPDATE_SNAPSHOTS"):
        saved.write_text(result.stdout)
    assert result.stdout == saved.read_text()


def test_the_usage_line_names_the_arguments_and_no_option_takes_a_page():
    result = CliRunner().invoke(app, ["fix", "--help"], terminal_width=100, prog_name="specedit")
    assert "Usage: specedit fix [OPTIONS] {FILE} {INSTRUCTION}" in result.stdout
    options = result.stdout.split("Options:")[1]
    entries = [entry for entry in options.split("\n  -") if entry.strip()]
    assert max(entry.count("\n") for entry in entries) <= 8
