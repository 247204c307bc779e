"""Writes that lose nothing: through symlinks, with the file's mode, owner, line endings and BOM,
synced to disk, never over a file that changed while the model worked, and one line (and its
own exit code) when the disk refuses; Ctrl-C says what a batch had already written.

The CLI runs the tiny random model for real (loading, prompts, stats); `answering` replaces the
text of each answer with a chosen one, and can act while "the model works"."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specedit import files
from specedit.cli import app
from specedit.cli.exits import Exit
from specedit.editing import editor, safety
from specedit.files import BOM, MAX_INPUT_BYTES, InputError, read_input

runner = CliRunner()
SOURCE = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


@pytest.fixture
def tiny(tiny_model_dir):
    """Options for the tiny model: no index to build (pld), exact fp32."""
    return ("--model", str(tiny_model_dir), "--dtype", "fp32", "--method", "pld")


def answering(monkeypatch, answer: Callable[[int, str], str]) -> None:
    """Edit number k (from 1) of input `text` answers `answer(k, text)`, after two real tokens;
    whatever `answer` does happens while the model works."""
    calls = []

    def execute(lm, prepared, on_step=None, stop=None):
        calls.append(prepared)
        generation = editor.generate_edit(lm, replace(prepared, max_new_tokens=2), on_step)
        text = answer(len(calls), prepared.request.text)
        return editor.EditResult(text, generation, prepared.prompt)

    monkeypatch.setattr("specedit.editing.local.execute", execute)


def fixing(k: int, text: str) -> str:
    return text.replace("a - b", "a + b")


def _run(*args):
    return runner.invoke(app, [str(a) for a in args])


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_in_place_through_a_symlink_edits_the_target_and_keeps_its_mode(
    tmp_path, tiny, monkeypatch
):
    target = tmp_path / "real" / "code.py"
    target.parent.mkdir()
    target.write_text(SOURCE)
    target.chmod(0o640)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    answering(monkeypatch, fixing)
    result = _run("fix", link, "add subtracts", "-i", *tiny)
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == FIXED
    assert (target.stat().st_mode & 0o7777) == 0o640
    assert _names(target.parent) == ["code.py"] and _names(tmp_path) == ["link.py", "real"]


def test_a_new_output_file_follows_the_umask(tmp_path, tiny, monkeypatch):
    source = tmp_path / "code.py"
    source.write_text(SOURCE)
    answering(monkeypatch, fixing)
    old = os.umask(0o022)
    try:
        assert _run("fix", source, "add subtracts", "-o", tmp_path / "a.py", *tiny).exit_code == 0
        os.umask(0o077)
        assert _run("fix", source, "add subtracts", "-o", tmp_path / "b.py", *tiny).exit_code == 0
    finally:
        os.umask(old)
    assert (tmp_path / "a.py").read_text() == FIXED
    assert ((tmp_path / "a.py").stat().st_mode & 0o777) == 0o644
    assert ((tmp_path / "b.py").stat().st_mode & 0o777) == 0o600


def test_the_temporary_file_is_synced_before_the_rename(tmp_path, monkeypatch):
    calls = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(files.os, "fsync", lambda fd: calls.append("fsync") or real_fsync(fd))
    monkeypatch.setattr(
        files.os, "replace", lambda a, b: calls.append("replace") or real_replace(a, b)
    )
    files.write_atomic(tmp_path / "out.txt", "text\n")
    assert calls == ["fsync", "replace", "fsync"]  # the file, the rename, then its folder
    assert (tmp_path / "out.txt").read_text() == "text\n"


def test_a_hard_linked_file_is_replaced_and_the_warning_says_the_other_name_keeps_the_old_text(
    tmp_path, capsys
):
    path, other = tmp_path / "a.txt", tmp_path / "b.txt"
    path.write_text("old\n")
    os.link(path, other)
    files.write_atomic(path, "new\n")
    assert path.read_text() == "new\n" and other.read_text() == "old\n"
    assert "had 1 other hard link; it keeps the old text" in capsys.readouterr().err


def test_keep_conventions_restores_the_input_s_line_endings_and_bom():
    keep = files.keep_conventions
    assert keep("a\r\nb\r\n", "a\nb\nc\n") == "a\r\nb\r\nc\r\n"
    assert keep("a\r\nb\r\n", "a\r\nb\nc\r\n") == "a\r\nb\r\nc\r\n"  # mixed answer
    assert keep("a\r\nb\r\nc\n", "x\n") == "x\r\n"  # mostly CRLF
    assert keep("a\nb\n", "a\r\nb\n") == "a\nb\n"  # no CRLF in the input: none in the output
    assert keep("a\nb\nc\r\n", "a\nb\r\nc\r\n") == "a\nb\r\nc\r\n"  # mostly LF: as written
    assert keep("\ufeffa\n", "a\n") == "\ufeffa\n"
    assert keep("\ufeffa\n", "\ufeff\ufeffa\n") == "\ufeffa\n"
    assert keep("a\n", "\ufeffa\n") == "a\n"
    assert keep("\ufeffa\r\n", "\ufeffb\n") == "\ufeffb\r\n"


def test_a_crlf_file_stays_crlf_and_a_bom_stays_one_bom(tmp_path, tiny, monkeypatch):
    crlf, bom = tmp_path / "crlf.py", tmp_path / "bom.py"
    crlf.write_bytes(SOURCE.replace("\n", "\r\n").encode())
    bom.write_bytes(("\ufeff" + SOURCE).encode())
    answering(monkeypatch, lambda k, text: FIXED if k == 1 else "\ufeff\ufeff" + FIXED)
    result = _run("rewrite", crlf, bom, "-m", "add subtracts", "-i", *tiny)
    assert result.exit_code == 0, result.stderr
    assert crlf.read_bytes() == FIXED.replace("\n", "\r\n").encode()
    assert bom.read_bytes() == b"\xef\xbb\xbf" + FIXED.encode()


def test_a_bom_python_file_whose_edit_breaks_its_syntax_is_refused(tmp_path, tiny, monkeypatch):
    path = tmp_path / "bom.py"
    before = ("\ufeff" + SOURCE).encode()
    path.write_bytes(before)
    broken = SOURCE.replace("(a, b)", "(a, b")
    assert safety.problems("\ufeff" + SOURCE, "\ufeff" + broken, "fix", "python")
    assert safety.sniff('\ufeff{"a": 1}') == "json"
    answering(monkeypatch, lambda k, text: broken)
    result = _run("fix", path, "add subtracts", "-i", *tiny)
    assert result.exit_code == Exit.UNSAFE
    assert "the edit breaks its Python syntax" in result.stderr
    assert path.read_bytes() == before


def test_a_file_changed_while_the_model_worked_is_left_alone_and_the_batch_goes_on(
    tmp_path, tiny, monkeypatch
):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(SOURCE)
    b.write_text(SOURCE)
    mine = SOURCE + "\n\ndef sub(a, b):\n    return a - b\n"

    def user_saves_a_meanwhile(k: int, text: str) -> str:
        if k == 1:
            a.write_text(mine)
        return fixing(k, text)

    answering(monkeypatch, user_saves_a_meanwhile)
    result = _run("rewrite", a, b, "-m", "add subtracts", "-i", *tiny)
    assert result.exit_code == Exit.CHANGED_ON_DISK == 6
    assert a.read_text() == mine and b.read_text() == FIXED
    [refusal] = [line for line in result.stderr.splitlines() if "error" in line]
    assert refusal.startswith(
        f"specedit: error: refusing to write {a}: it changed on disk while the model worked "
        "(its size went from 32 to 66 bytes"
    )
    assert refusal.endswith("); nothing was written")
    assert f"edited {b}" in result.stderr and _names(tmp_path) == ["a.py", "b.py"]


def test_output_onto_the_input_itself_is_checked_too(tmp_path, tiny, monkeypatch):
    path = tmp_path / "code.py"
    path.write_text(SOURCE)

    def meddling(k: int, text: str) -> str:
        path.write_text("# mine\n" + text)  # while the model works
        return fixing(k, text)

    answering(monkeypatch, meddling)
    result = _run("fix", path, "add subtracts", "-o", path, *tiny)
    assert result.exit_code == Exit.CHANGED_ON_DISK and path.read_text() == "# mine\n" + SOURCE
    assert result.stdout == "" and "changed on disk" in result.stderr


def test_a_fingerprint_tells_what_changed(tmp_path):
    path = tmp_path / "a.txt"
    path.write_text("abc\n")
    stamp = files.read_input(str(path)).fingerprint
    assert stamp == files.fingerprint(path) and stamp.change(path) is None
    os.utime(path, ns=(stamp.mtime_ns + 10**9, stamp.mtime_ns + 10**9))
    assert stamp.change(path) == "its modification time changed, same content"
    path.write_text("abd\n")
    os.utime(path, ns=(stamp.mtime_ns, stamp.mtime_ns))
    assert stamp.change(path) == "its content changed"
    with pytest.raises(files.ChangedOnDisk, match="content changed"):
        files.write_atomic(path, "new\n", stamp)
    assert path.read_text() == "abd\n" and _names(tmp_path) == ["a.txt"]
    path.unlink()
    assert stamp.change(path) == "it was removed"


def test_a_full_disk_is_one_line_and_the_batch_goes_on(tmp_path, tiny, monkeypatch):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(SOURCE)
    b.write_text(SOURCE)
    answering(monkeypatch, fixing)
    real_fsync, syncs = os.fsync, []

    def full_once(fd):  # the first file's data does not fit
        syncs.append(fd)
        if len(syncs) == 1:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", full_once)
    result = _run("rewrite", a, b, "-m", "add subtracts", "-i", *tiny)
    assert result.exit_code == Exit.WRITE == 7
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert errors == [
        f"specedit: error: cannot write {a}: No space left on device; nothing was written to {a}"
    ]
    assert "Traceback" not in result.stderr
    assert a.read_text() == SOURCE and b.read_text() == FIXED
    assert _names(tmp_path) == ["a.py", "b.py"]  # no temporary file left


def test_a_missing_output_folder_is_a_write_error(tmp_path, tiny, monkeypatch):
    source = tmp_path / "code.py"
    source.write_text(SOURCE)
    answering(monkeypatch, fixing)
    out = tmp_path / "missing" / "out.py"
    result = _run("fix", source, "add subtracts", "-o", out, *tiny)
    assert result.exit_code == Exit.WRITE
    assert (
        f"specedit: error: cannot write {out}: No such file or directory; "
        f"nothing was written to {out}\n"
    ) in result.stderr
    assert result.stdout == "" and "Traceback" not in result.stderr
    assert source.read_text() == SOURCE and _names(tmp_path) == ["code.py"]


def test_output_to_a_pipe_or_device_is_a_write_error_that_leaves_it_in_place(
    tmp_path, tiny, monkeypatch
):
    """A rename would replace the node itself (as root, even /dev/null): refused instead."""
    source = tmp_path / "code.py"
    source.write_text(SOURCE)
    answering(monkeypatch, fixing)
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    result = _run("fix", source, "add subtracts", "-o", pipe, *tiny)
    assert result.exit_code == Exit.WRITE
    assert f"cannot write {pipe}: not a regular file" in result.stderr
    assert pipe.is_fifo() and _names(tmp_path) == ["code.py", "pipe"]


def test_ctrl_c_in_a_batch_names_the_files_already_written(tmp_path, tiny, monkeypatch):
    a, b, c = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "c.py"
    for path in (a, b, c):
        path.write_text(SOURCE)

    def interrupted_at_c(k: int, text: str) -> str:
        if k == 3:
            raise KeyboardInterrupt
        return fixing(k, text)

    answering(monkeypatch, interrupted_at_c)
    result = _run("rewrite", a, b, c, "-m", "add subtracts", "-i", "-q", *tiny)
    assert result.exit_code == Exit.INTERRUPTED
    assert result.stderr.endswith(
        f"specedit: error: interrupted; already written: {a}, {b}; nothing else was written\n"
    )
    assert a.read_text() == FIXED and b.read_text() == FIXED and c.read_text() == SOURCE
    assert _names(tmp_path) == ["a.py", "b.py", "c.py"]


def test_stats_and_attribution_that_cannot_be_written_are_one_line_each_and_the_batch_goes_on(
    tmp_path, tiny, monkeypatch
):
    """A report that cannot be written (a path under a regular file, a full disk) is one line
    and exit 7 for each file, the edits themselves delivered; the batch goes on."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(SOURCE)
    b.write_text(SOURCE)
    (tmp_path / "file.txt").write_text("")
    stats = tmp_path / "file.txt" / "stats.json"
    answering(monkeypatch, fixing)
    result = _run(
        "rewrite", a, b, "-m", "add subtracts", "-i", "--stats-file", stats, "--attribution",
        "/dev/full", *tiny,
    )  # fmt: skip
    assert result.exit_code == Exit.WRITE, result.stderr
    assert "Traceback" not in result.stderr
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert errors == 2 * [
        f"specedit: error: cannot write stats to {stats}: Not a directory",
        "specedit: error: cannot write attribution to /dev/full: No space left on device",
    ]
    assert a.read_text() == FIXED and b.read_text() == FIXED
    assert _names(tmp_path) == ["a.py", "b.py", "file.txt"]
    printed = _run("fix", a, "add subtracts", "--stats-file", stats, *tiny)
    assert printed.exit_code == Exit.WRITE and printed.stdout == FIXED


def test_a_batch_s_stats_file_and_attribution_hold_every_file(tmp_path, tiny, monkeypatch):
    """One file's stats are one JSON object, as ever; a batch's are a list, one object per
    file, each naming its file (in the order edited), and so is the attribution."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text(SOURCE)
    b.write_text(SOURCE)
    stats, spans = tmp_path / "stats.json", tmp_path / "spans.json"
    answering(monkeypatch, fixing)
    report = ("--stats-file", stats, "--attribution", spans)
    result = _run("rewrite", a, b, "-m", "add subtracts", "-i", *report, *tiny)
    assert result.exit_code == 0, result.stderr
    recorded = json.loads(stats.read_text())
    assert [record["file"] for record in recorded] == [str(a), str(b)]
    assert all(record["changed"] and record["method"] == "pld" for record in recorded)
    attributed = json.loads(spans.read_text())
    assert [record["file"] for record in attributed] == [str(a), str(b)]
    assert all(record["tokens"] == 2 and "spans" in record for record in attributed)
    one = _run("fix", a, "add subtracts", *report, *tiny)
    assert one.exit_code == 0, one.stderr
    assert json.loads(stats.read_text())["file"] == str(a)
    assert json.loads(spans.read_text())["file"] == str(a)


@pytest.mark.skipif(not (shutil.which("patch") and shutil.which("diff")), reason="needs patch")
@pytest.mark.parametrize(
    "before,after",
    [
        ("def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b"),
        ("def add(a, b):\n    return a - b", "def add(a, b):\n    return a + b\n"),
        ("def add(a, b):\n    return a - b\n", "def add(a, b):\n    return a + b"),
        ("page\x0cone\ntwo a - b\nend", "page\x0cone\ntwo a + b\nend"),  # a form feed
    ],
)
def test_a_diff_applies_with_patch_whether_or_not_the_file_ends_with_a_newline(
    tmp_path, tiny, monkeypatch, before, after
):
    """A last line without a newline is marked `\\ No newline at end of file`, and only a line
    feed ends a line, as with `diff -u`, so `patch` takes the diff and makes the edited file
    byte for byte."""
    monkeypatch.chdir(tmp_path)
    Path("code.txt").write_text(before)
    Path("edited.txt").write_text(after)
    answering(monkeypatch, lambda k, text: after)
    result = _run("fix", "code.txt", "add subtracts", "--diff", *tiny)
    assert result.exit_code == 0, result.stderr
    unified = subprocess.run(["diff", "-u", "code.txt", "edited.txt"], capture_output=True)
    assert result.stdout.splitlines()[2:] == unified.stdout.decode().splitlines()[2:]
    Path("fix.diff").write_text(result.stdout)
    applied = subprocess.run(
        ["patch", "-p1", "-i", "fix.diff"], capture_output=True, text=True, check=False
    )
    assert applied.returncode == 0, applied.stdout + applied.stderr + result.stdout
    assert Path("code.txt").read_bytes() == after.encode()
    if not before.endswith("\n"):
        assert "\n\\ No newline at end of file\n" in result.stdout


@pytest.mark.skipif(os.geteuid() != 0, reason="making another user's symlink takes root")
def test_output_through_another_user_s_symlink_in_a_shared_sticky_folder_is_refused(
    tmp_path, tiny, monkeypatch
):
    """In a sticky folder others may write to (/tmp), a symlink at the -o path owned by neither
    the user nor the folder's owner may point anywhere it likes: it is not followed, as Linux's
    protected_symlinks does not, and nothing is written; one's own link there is followed."""
    source, victim = tmp_path / "code.py", tmp_path / "victim.py"
    source.write_text(SOURCE)
    victim.write_text("precious\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    link = shared / "out.py"
    link.symlink_to(victim)
    os.lchown(link, 4242, 4242)
    answering(monkeypatch, fixing)
    result = _run("fix", source, "add subtracts", "-o", link, *tiny)
    assert result.exit_code == Exit.WRITE
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert errors == [
        f"specedit: error: cannot write {link}: {link} is a symbolic link owned by uid 4242, "
        f"neither you nor the owner of the shared folder {shared}: not followed, as with "
        f"Linux's protected_symlinks; nothing was written to {link}"
    ]
    assert victim.read_text() == "precious\n" and link.is_symlink()
    assert _names(shared) == ["out.py"]
    os.chown(shared, 4242, 4242)  # the folder's owner's link is followed
    assert _run("fix", source, "add subtracts", "-o", link, *tiny).exit_code == 0
    assert victim.read_text() == FIXED


def _refusal(path: str) -> str:
    with pytest.raises(InputError) as refused:
        read_input(path)
    return str(refused.value)


def test_inputs_that_are_not_text_files_are_refused_without_waiting_or_filling_memory(tmp_path):
    """A named pipe nobody writes to would block the read for ever, /dev/zero would fill the
    memory, a file larger than any context is read no further than the limit."""
    pipe = tmp_path / "events.py"
    os.mkfifo(pipe)
    assert _refusal(str(pipe)) == f"{pipe} is empty"
    assert "is not a file of text (a device or a socket)" in _refusal("/dev/zero")
    huge = tmp_path / "huge.py"
    with open(huge, "wb") as f:
        f.truncate(MAX_INPUT_BYTES + 1)  # sparse: nothing is written
    assert "is larger than 64 MiB" in _refusal(str(huge))


def test_a_utf16_file_and_a_file_of_a_byte_order_mark_alone_say_what_they_are(tmp_path):
    utf16 = tmp_path / "notes.txt"
    utf16.write_text("hello\n", encoding="utf-16")
    assert "is UTF-16 or UTF-32 text" in _refusal(str(utf16))
    mark = tmp_path / "mark.py"
    mark.write_bytes(BOM.encode() + b"\n\n")
    assert _refusal(str(mark)) == f"{mark} is empty"


def test_another_user_s_file_keeps_its_group_and_says_whose_it_is(tmp_path, monkeypatch, capsys):
    """We may not give a file to another user; we may give it to a group we are in."""
    path = tmp_path / "team.py"
    path.write_text(SOURCE)
    stat = path.stat()
    calls = []

    def chown(file, uid, gid):
        calls.append((uid, gid))
        if uid != -1:
            raise PermissionError(errno.EPERM, "Operation not permitted")

    monkeypatch.setattr(files.os, "chown", chown)
    files.write_atomic(path, FIXED)
    assert path.read_text() == FIXED
    assert calls == [(stat.st_uid, stat.st_gid), (-1, stat.st_gid)]
    owner = f"({stat.st_uid}:{stat.st_gid}); they are now {os.getuid()}:{stat.st_gid}"
    assert f"{path} could not keep its owner and group {owner}" in capsys.readouterr().err


def test_a_file_s_extended_attributes_are_kept(tmp_path):
    path = tmp_path / "tagged.py"
    path.write_text(SOURCE)
    try:
        os.setxattr(path, "user.note", b"keep")
    except (OSError, AttributeError):
        pytest.skip("this file system (or system) takes no user attributes")
    files.write_atomic(path, FIXED)
    assert path.read_text() == FIXED and os.getxattr(path, "user.note") == b"keep"
