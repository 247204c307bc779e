"""What `--diff` prints: a unified diff that `git apply` takes, whatever the file is called."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from specedit.cli.output import unified_diff


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("name", ["plain.py", 'a\nb "quoted" \\ \x1b[2J\x9b.py'])
def test_a_diff_applies_whatever_its_file_is_called(tmp_path, name):
    """A line feed in a name written as it is would start a header line of its own (a
    hostile name could forge one): such a name is C-quoted as git quotes it."""
    (tmp_path / name).write_text("x = 1\ny = 2\n")
    diff = "".join(unified_diff("x = 1\ny = 2\n", "x = 1\ny = 3\n", name))
    headers = [line for line in diff.splitlines() if line.startswith(("--- ", "+++ "))]
    assert len(headers) == 2 and len(diff.splitlines()) == 6
    subprocess.run(["git", "apply", "-"], input=diff, text=True, cwd=tmp_path, check=True)
    assert (tmp_path / name).read_text() == "x = 1\ny = 3\n"
