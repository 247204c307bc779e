"""Checks run in a child process, in a scratch folder, with a timeout: never in specedit."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

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


def test_a_detached_grandchild_holding_the_output_cannot_hang_a_timeout(tmp_path, monkeypatch):
    monkeypatch.setattr(checks, "DRAIN_SECONDS", 0.3)
    file = tmp_path / "mod.py"
    file.write_text("")
    grandchild, pid = _detached_grandchild(tmp_path)
    result = checks.run_command(f"{grandchild} echo started; sleep 60", file, "", timeout=1.5)
    assert result.timed_out and result.summary() == "timed out"
    assert "started" in result.output
    assert result.seconds < 10
    assert _still_running(pid)  # returned while the grandchild still held the pipe


def test_a_detached_grandchild_does_not_hold_up_a_finished_check(tmp_path, monkeypatch):
    monkeypatch.setattr(checks, "DRAIN_SECONDS", 0.3)
    file = tmp_path / "mod.py"
    file.write_text("")
    grandchild, pid = _detached_grandchild(tmp_path)
    result = checks.run_command(f"{grandchild} echo done", file, "", timeout=60)
    assert result.passed and result.output == "done\n"
    assert result.seconds < 10  # not the grandchild's 30 s
    assert _still_running(pid)


def test_a_check_that_prints_10_mb_keeps_only_a_bounded_tail():
    program = "import sys\nsys.stdout.write('x' * 10_000_000)\nprint('\\nthe end')\n"
    result = checks.run_program(program, timeout=60)
    assert result.passed
    assert len(result.output) < checks.OUTPUT_LIMIT + 100
    assert result.output.startswith("[output cut") and result.output.endswith("the end\n")


def test_special_files_in_the_folder_are_left_out_of_the_copy(tmp_path):
    """A FIFO or a socket beside the file is no file a check reads (and copying a FIFO would
    block): the copy leaves them out and the check runs."""
    file = tmp_path / "mod.py"
    file.write_text("VALUE = 1\n")
    os.mkfifo(tmp_path / "pipe")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "sock"))
        result = checks.run_command("ls; cat {file}", file, "VALUE = 2\n", timeout=30)
    assert result.passed, result.output
    assert result.output.splitlines() == ["mod.py", "VALUE = 2"]


def test_a_folder_of_too_many_bytes_is_refused_before_anything_is_copied(tmp_path):
    file = tmp_path / "notes.py"
    file.write_text("VALUE = 1\n")
    with open(tmp_path / "disk.img", "wb") as image:  # sparse: large, yet it takes no disk
        image.truncate(checks.COPY_BYTES + 1)
    with pytest.raises(checks.CheckRefused) as refused:
        checks.run_command("touch {file}.ran", file, "VALUE = 2\n", timeout=30)
    message = str(refused.value)
    assert f"the folder of notes.py, {tmp_path}, which holds more than 500 MiB" in message
    assert "keep the file in its project's folder" in message and "\n" not in message


def test_a_folder_of_too_many_files_is_refused(tmp_path, monkeypatch):
    assert checks.COPY_FILES == 20_000  # a bound of thousands, tested at a smaller one below
    monkeypatch.setattr(checks, "COPY_FILES", 1_500)
    file = tmp_path / "notes.py"
    file.write_text("VALUE = 1\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    for number in range(checks.COPY_FILES - 2):  # with notes.py, a and b: one too many
        (deep / str(number)).touch()
    with pytest.raises(checks.CheckRefused, match="holds more than 1,500 files"):
        checks.run_command("true", file, "VALUE = 2\n", timeout=30)
    os.remove(deep / "0")  # what the bound leaves out: caches and environments are not counted
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").touch()
    assert checks.run_command("true", file, "VALUE = 2\n", timeout=30).passed


def test_one_copy_serves_every_candidate(tmp_path):
    """The folder is copied once per edit: each candidate is written over the file's copy, and
    what a check left elsewhere in the copy is still there for the next."""
    file = tmp_path / "mod.py"
    file.write_text("VALUE = 1\n")
    with checks.command_check("pwd >> runs.log; cat runs.log {file}", file, timeout=30) as check:
        first, second = check("VALUE = 2\n").output, check("VALUE = 3\n").output
    copy = first.splitlines()[0]
    assert first.splitlines() == [copy, "VALUE = 2"]
    assert second.splitlines() == [copy, copy, "VALUE = 3"]
    assert file.read_text() == "VALUE = 1\n" and _names(tmp_path) == ["mod.py"]


def test_a_symlinked_file_is_checked_under_its_own_name_and_its_target_is_untouched(tmp_path):
    """The check sees the candidate where the command looks for it, the link's name in the
    link's folder, and the link's target (here given as an absolute path) is never written."""
    target = tmp_path / "versions" / "v2.py"
    target.parent.mkdir()
    target.write_text("VALUE = 1\n")
    project = tmp_path / "project"
    project.mkdir()
    link = project / "mod.py"
    link.symlink_to(target)
    (project / "test_mod.py").write_text("from mod import VALUE\nassert VALUE == 2, VALUE\n")
    command = f"{PYTHON} test_mod.py && cat mod.py && test ! -L {{file}}"
    result = checks.run_command(command, link, "VALUE = 2\n", timeout=30)
    assert result.passed, result.output
    assert result.output == "VALUE = 2\n"
    assert target.read_text() == "VALUE = 1\n" and link.is_symlink()
    beside = project / "current.py"  # a link to a file in the same folder
    beside.symlink_to(project / "test_mod.py")
    result = checks.run_command("cat current.py", beside, "VALUE = 3\n", timeout=30)
    assert result.output == "VALUE = 3\n"
    assert (project / "test_mod.py").read_text().startswith("from mod import")


def test_an_executable_file_stays_executable_in_the_copy(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\necho old\n")
    script.chmod(0o755)
    result = checks.run_command("{file}", script, "#!/bin/sh\necho new\n", timeout=30)
    assert result.passed and result.output == "new\n", result.output


def test_specedit_file_names_the_copy_for_a_command_in_a_quoted_string(tmp_path):
    hostile = tmp_path / "x';touch PWNED;'.py"
    hostile.write_text("VALUE = 1\n")
    command = """sh -c 'cat "$SPECEDIT_FILE"; basename "$SPECEDIT_FILE"'"""
    result = checks.run_command(command, hostile, "VALUE = 2\n", timeout=30)
    assert result.passed, result.output
    assert result.output.splitlines() == ["VALUE = 2", hostile.name]
    assert not list(tmp_path.rglob("PWNED")) and not Path("PWNED").exists()


def test_a_placeholder_inside_a_longer_quoted_string_is_refused(tmp_path):
    """`sh -c "cat {file}"` would put the quoted path inside another string, where a file name
    with a quote breaks out of it: such a command is refused before anything runs."""
    hostile = tmp_path / "x';touch PWNED;'.py"
    hostile.write_text("VALUE = 1\n")
    for command in ('sh -c "cat {file}"', "sh -c 'cat {file}'", "echo '{file} and more'"):
        with pytest.raises(checks.CheckRefused, match=r'write "\$SPECEDIT_FILE" there instead'):
            checks.run_command(command, hostile, "VALUE = 2\n", timeout=30)
    assert not list(tmp_path.rglob("PWNED")) and not Path("PWNED").exists()


def test_fill_in_reads_quotes_and_escapes_as_the_shell_does():
    path = Path("/tmp/a b/it's.py")
    quoted = shlex.quote(str(path))
    assert checks.fill_in("""echo "it's" {file} 'a "b"'""", path) == (
        f"""echo "it's" {quoted} 'a "b"'"""
    )
    assert checks.fill_in('echo "{file}"x', path) == f"echo {quoted}x"
    assert checks.fill_in(r"echo \{file} {file}", path) == rf"echo \{{file}} {quoted}"
    assert checks.fill_in(r'echo "a\"" {file}', path) == rf'echo "a\"" {quoted}'
    with pytest.raises(checks.CheckRefused):
        checks.fill_in(r'echo "a\" {file}"', path)
    with pytest.raises(checks.CheckRefused):
        checks.fill_in("echo '{file}", path)  # not closed: still inside the string


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())
