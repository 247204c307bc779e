"""The pre-commit hook, run through `pre-commit try-repo` on a small repository."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

pytestmark = pytest.mark.e2e


def _git(folder: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_hook_rewrites_docs_and_fails_when_it_changed_them(tmp_path, bundled_model_dir):
    repo = tmp_path / "project"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "notes.txt").write_text("The quick brown fox jumsp over the lazy dog.\n")
    (repo / "clean.txt").write_text("The cat sat on the mat.\n")
    (repo / "code.py").write_text("x = 1  # Teh code is not a document\n")
    _git(repo, "add", ".")
    env = os.environ | {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
    }
    command = [
        sys.executable,
        "-m",
        "pre_commit",
        "try-repo",
        str(ROOT),
        "specedit-rewrite",
        "--all-files",
    ]
    first = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "files were modified by this hook" in first.stdout
    assert (repo / "notes.txt").read_text() == "The quick brown fox jumps over the lazy dog.\n"
    assert (repo / "clean.txt").read_text() == "The cat sat on the mat.\n"
    assert (repo / "code.py").read_text() == "x = 1  # Teh code is not a document\n"
    _git(repo, "add", ".")
    second = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True)
    assert second.returncode == 0, second.stdout + second.stderr
