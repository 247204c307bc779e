"""Checks run in a child process, in a scratch folder, with a timeout: never in specedit."""

from __future__ import annotations

import os
import shlex
import signal
import sys
import time
from pathlib import Path

from specedit.editing import checks

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


def test_a_hostile_file_name_is_one_argument_never_shell_syntax(tmp_path):
    hostile = tmp_path / "x;touch PWNED;#.py"
    hostile.write_text("VALUE = 1\n")
    result = checks.run_command("cat {file} && basename {file}", hostile, "VALUE = 2\n", timeout=30)
    assert result.passed, result.output
    assert result.output.splitlines() == ["VALUE = 2", "x;touch PWNED;#.py"]
    assert not list(tmp_path.rglob("PWNED")) and not Path("PWNED").exists()


def test_a_path_with_a_space_and_a_quoted_placeholder_work(tmp_path):
    folder = tmp_path / "my project"
    folder.mkdir()
    spaced = folder / "my file.py"
    spaced.write_text("VALUE = 1\n")
    for command in ("cat {file}", "cat '{file}'", 'cat "{file}"'):
        result = checks.run_command(command, spaced, "VALUE = 2\n", timeout=30)
        assert result.passed and result.output == "VALUE = 2\n", (command, result.output)


def test_fill_in_quotes_the_placeholder_bare_or_in_quotes():
    path = Path("/tmp/a b/it's.py")
    quoted = shlex.quote(str(path))
    assert checks.fill_in("pytest {file}", path) == f"pytest {quoted}"
    assert checks.fill_in("a '{file}' \"{file}\"", path) == f"a {quoted} {quoted}"
    assert shlex.split(checks.fill_in("ruff check {file} --fix", path))[2] == str(path)


def _detached_grandchild(folder: Path) -> tuple[str, Path]:
    """A shell snippet starting a grandchild that leaves the check's process group, keeps the
    output pipe open for 30 s and writes its pid to the returned file."""
    script, pid = folder / "grandchild.py", folder / "grandchild.pid"
    script.write_text(
        "import os, sys, time\n"
        "os.setsid()\n"
        f"open({str(pid)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(30)\n"
    )
    return f"{PYTHON} {shlex.quote(str(script))} &", pid


def _still_running(pid_file: Path) -> bool:
    """Whether the grandchild is alive, i.e. the check returned without waiting for it; it is
    ended here either way."""
    for _ in range(100):  # it may not have written its pid yet
        if pid_file.exists() and pid_file.read_text():
            break
        time.sleep(0.05)
    pid = int(pid_file.read_text())
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    os.kill(pid, signal.SIGKILL)
    return True


def test_a_detached_grandchild_holding_the_output_cannot_hang_a_timeout(tmp_path):
    file = tmp_path / "mod.py"
    file.write_text("")
    grandchild, pid = _detached_grandchild(tmp_path)
    result = checks.run_command(f"{grandchild} echo started; sleep 60", file, "", timeout=1.5)
    assert result.timed_out and result.summary() == "timed out"
    assert "started" in result.output
    assert _still_running(pid)  # returned while the grandchild still held the pipe


def test_a_detached_grandchild_does_not_hold_up_a_finished_check(tmp_path):
    file = tmp_path / "mod.py"
    file.write_text("")
    grandchild, pid = _detached_grandchild(tmp_path)
    result = checks.run_command(f"{grandchild} echo done", file, "", timeout=60)
    assert result.passed and result.output == "done\n"
    assert _still_running(pid)


def test_a_check_that_prints_10_mb_keeps_only_a_bounded_tail():
    program = "import sys\nsys.stdout.write('x' * 10_000_000)\nprint('\\nthe end')\n"
    result = checks.run_program(program, timeout=60)
    assert result.passed
    assert len(result.output) < checks.OUTPUT_LIMIT + 100
    assert result.output.startswith("[output cut") and result.output.endswith("the end\n")
