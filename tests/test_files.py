"""Writes that lose nothing: through symlinks, with the file's mode, owner, line endings and BOM,
synced to disk before the rename.

The CLI runs the tiny random model for real (loading, prompts, stats); `answering` replaces the
text of each answer with a chosen one, and can act while "the model works"."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from specedit import edit, files, safety
from specedit.cli import app
from specedit.exits import Exit

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
        generation = edit.generate_edit(lm, replace(prepared, max_new_tokens=2), on_step)
        text = answer(len(calls), prepared.request.text)
        return edit.EditResult(text, generation, prepared.prompt)

    monkeypatch.setattr(edit, "execute", execute)


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
