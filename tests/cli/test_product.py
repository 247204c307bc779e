"""The product CLI on the bundled model: output modes, exit codes, settings, batch, Ctrl-C."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from specedit import files
from specedit.cli import app

runner = CliRunner()
# The test model (0.5B) fixes a misspelt word inside the sentence; a misspelt first word it
# leaves as it is with the file before the instruction (docs/quality.md, "Prompt layout").
TYPO = "The quick brown fox jumsp over the lazy dog.\n"
FIXED = "The quick brown fox jumps over the lazy dog.\n"
CLEAN = "The cat sat on the mat.\n"


@pytest.fixture
def typo(tmp_path):
    path = tmp_path / "note.txt"
    path.write_text(TYPO)
    return path


def _run(*args: str, **kwargs):
    return runner.invoke(app, [str(a) for a in args], **kwargs)


@pytest.mark.e2e
def test_diff_prints_a_unified_diff_only(typo, bundled_model_dir):
    result = _run("edit", typo, "fix the spelling mistake", "--diff", "-q")
    assert result.exit_code == 0, result.stderr
    assert f"--- a/{typo}" in result.stdout and "-The quick brown fox jumsp" in result.stdout
    assert "+The quick brown fox jumps" in result.stdout
    assert result.stderr == ""  # --quiet


@pytest.mark.e2e
def test_check_exits_1_on_change_and_0_when_clean(typo, tmp_path, bundled_model_dir):
    result = _run("edit", typo, "fix the spelling mistake", "--check")
    assert result.exit_code == 1 and result.stdout == ""
    assert f"would edit {typo}" in result.stderr
    assert typo.read_text() == TYPO  # --check writes nothing
    clean = tmp_path / "clean.txt"
    clean.write_text(CLEAN)
    assert _run("edit", clean, "fix the spelling mistakes", "--check").exit_code == 0


@pytest.mark.e2e
def test_in_place_and_output_file_with_json_stats_and_attribution(
    typo, tmp_path, bundled_model_dir
):
    out, stats, spans = tmp_path / "out.txt", tmp_path / "stats.json", tmp_path / "spans.json"
    result = _run(
        "edit",
        typo,
        "fix the spelling mistake",
        "-o",
        out,
        "--stats",
        "json",
        "--stats-file",
        stats,
        "--attribution",
        spans,
    )
    assert result.exit_code == 0, result.stderr
    assert out.read_text() == FIXED and typo.read_text() == TYPO
    line = json.loads(result.stderr.strip().splitlines()[-1])
    assert line["changed"] is True and line["new_tokens"] > 0
    recorded = json.loads(stats.read_text())
    assert recorded["forward_passes"] == line["forward_passes"]
    stages = {"imports", "model_load", "prompt", "drafter", "prefill", "decode"}
    assert set(recorded["wall_seconds"]) == stages
    assert all(seconds >= 0 for seconds in recorded["wall_seconds"].values())
    copied = [s for s in json.loads(spans.read_text())["spans"] if s["input"]]
    assert copied  # " quick brown fox ..." is copied from the input
    result = _run("edit", typo, "fix the spelling mistake", "-i")
    assert result.exit_code == 0 and result.stdout == ""
    assert typo.read_text() == FIXED


@pytest.mark.e2e
def test_rewrite_batch_loads_once_and_reports_each_file(tmp_path, bundled_model_dir):
    a, b, missing = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "missing.txt"
    a.write_text(TYPO)
    b.write_text(CLEAN)
    result = _run("rewrite", a, missing, b, "-m", "fix the spelling mistakes", "-i")
    assert result.exit_code == 2  # the missing file; the others were still edited
    assert a.read_text() == FIXED and b.read_text() == CLEAN
    assert "no such file" in result.stderr and f"edited {a}" in result.stderr


def test_several_files_need_a_writing_mode(tmp_path):
    result = _run("rewrite", tmp_path / "a.md", tmp_path / "b.md", "-m", "fix")
    assert result.exit_code == 2 and "need -i/--in-place" in result.stderr


def test_conflicting_modes_and_stdin_in_place_are_usage_errors(typo):
    assert "choose one of" in _run("fix", typo, "x", "--diff", "--check").stderr
    assert "stdin cannot be edited in place" in _run("edit", "-", "x", "-i").stderr


def test_settings_file_and_environment_set_defaults(tmp_path, monkeypatch, typo):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".specedit.toml").write_text('method = "nonexistent"\n')
    result = _run("fix", typo, "fix")
    assert result.exit_code == 2 and "'nonexistent' is not one of" in result.stderr
    monkeypatch.setenv("SPECEDIT_METHOD", "also-missing")  # the environment beats the file
    assert "'also-missing'" in _run("fix", typo, "fix").stderr
    assert "'flag'" in _run("fix", typo, "fix", "--method", "flag").stderr  # flags beat both
    (tmp_path / ".specedit.toml").write_text('colour = "blue"\n')
    result = _run("fix", typo, "fix")
    assert result.exit_code == 2 and "unknown setting(s) colour" in result.stderr


def test_pyproject_tool_table_is_read(tmp_path, monkeypatch, typo):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.specedit]\nmax-new-tokens = "many"\n')
    result = _run("fix", typo, "fix")
    assert result.exit_code == 2  # click rejects the bad value from the settings


def test_ctrl_c_leaves_the_file_untouched_and_exits_130(typo, monkeypatch, tiny_model_dir):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("specedit.editing.local.execute", interrupted)
    result = _run("fix", typo, "fix", "-i", "--model", tiny_model_dir, "--dtype", "fp32")
    assert result.exit_code == 130
    assert "interrupted; nothing was written" in result.stderr
    assert typo.read_text() == TYPO
    assert [p.name for p in typo.parent.iterdir()] == [typo.name]  # no temp file left


def test_atomic_write_keeps_the_original_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "keep.txt"
    target.write_text("original\n")
    target.chmod(0o640)

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError):
        files.write_atomic(str(target), "new\n")
    assert target.read_text() == "original\n"
    assert [p.name for p in tmp_path.iterdir()] == ["keep.txt"]
    monkeypatch.undo()
    files.write_atomic(str(target), "new\n")
    assert target.read_text() == "new\n" and (target.stat().st_mode & 0o777) == 0o640
