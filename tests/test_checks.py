"""Checks run in a child process, in a scratch folder, with a timeout: never in specedit."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from specedit import checks

PYTHON = shlex.quote(sys.executable)


def test_a_passing_program_exits_0():
    result = checks.run_program("assert 1 + 1 == 2\nprint('ok')\n", timeout=30)
    assert result.passed and result.returncode == 0
    assert result.output.strip() == "ok"
    assert result.summary() == "passed"


def test_a_failing_program_reports_its_code_and_output():
    result = checks.run_program("print('before')\nassert 1 + 1 == 3, 'arithmetic'\n", timeout=30)
    assert not result.passed and result.returncode == 1
    assert "before" in result.output and "AssertionError: arithmetic" in result.output
    assert result.summary() == "failed (exit 1): AssertionError: arithmetic"


def test_a_looping_program_times_out():
    result = checks.run_program("while True:\n    pass\n", timeout=1)
    assert result.timed_out and not result.passed
    assert result.summary() == "timed out"


def test_a_program_runs_in_a_scratch_folder_not_the_callers(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    program = (
        "import os, pathlib\nprint(os.getcwd())\npathlib.Path('left-behind.txt').write_text('x')\n"
    )
    result = checks.run_program(program, timeout=30)
    assert result.passed, result.output
    assert Path(result.output.strip()).resolve() != tmp_path.resolve()
    assert list(tmp_path.iterdir()) == []  # the caller's folder was not touched
    assert not Path(result.output.strip()).exists()  # and the scratch folder is gone


def test_run_command_checks_a_copy_and_leaves_the_original_alone(tmp_path):
    original = tmp_path / "mod.py"
    original.write_text("VALUE = 1\n")
    (tmp_path / "test_mod.py").write_text("from mod import VALUE\nassert VALUE == 2, VALUE\n")
    command = f"{PYTHON} test_mod.py && cat {{file}} && echo changed > {{file}}"
    passed = checks.run_command(command, original, "VALUE = 2\n", timeout=30)
    assert passed.passed, passed.output
    assert "VALUE = 2" in passed.output  # {file} named the edited copy
    assert original.read_text() == "VALUE = 1\n"  # the command changed only the copy
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mod.py", "test_mod.py"]


def test_run_command_returns_a_failing_commands_output(tmp_path):
    original = tmp_path / "mod.py"
    original.write_text("VALUE = 1\n")
    (tmp_path / "test_mod.py").write_text("from mod import VALUE\nassert VALUE == 2, VALUE\n")
    failed = checks.run_command(f"{PYTHON} test_mod.py", original, "VALUE = 3\n", timeout=30)
    assert not failed.passed and failed.returncode == 1
    assert "AssertionError: 3" in failed.output
    assert failed.summary() == "failed (exit 1): AssertionError: 3"
    assert original.read_text() == "VALUE = 1\n"
