"""The CLI's safe writes (exit 4, --force) and its --test loop (--attempts, exit 5).

The tiny random model really runs (so loading, prompts, stats and attribution are the real
ones), but its answer is garbage that never ends, so `canned` replaces the text of each answer
with a chosen one; the edit's other parts stay real.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import replace

import pytest
from typer.testing import CliRunner

from specedit.cli import app
from specedit.cli.exits import Exit
from specedit.editing import checks, editor

runner = CliRunner()
SOURCE = """def mean(values):
    total = 0
    for value in values:
        total += value
    return total / len(values) + 1


def spread(values):
    return max(values) - min(values)


def count(values):
    return len(values)
"""
FIXED = SOURCE.replace(" + 1\n", "\n")
BROKEN = SOURCE.replace("def spread(values):", "def spread(values:")
TRUNCATED = SOURCE[: SOURCE.index("\n\n\ndef spread")] + "\n"


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "stats.py"
    path.write_text(SOURCE)
    return path


@pytest.fixture
def tiny(tiny_model_dir):
    """Options for the tiny model: no index to build (pld), exact fp32."""
    return ("--model", str(tiny_model_dir), "--dtype", "fp32", "--method", "pld")


def canned(monkeypatch, *texts: str) -> list[editor.PreparedEdit]:
    """Edit number k answers texts[k] (the last one repeats) after k + 1 real tokens, so the
    stats and attribution tell the attempts apart; returns the prepared edits it was given.
    An edit asked for its choices was sure of every token but its last, where `z` was a close
    second: one branch point."""
    calls: list[editor.PreparedEdit] = []

    def execute(lm, prepared, on_step=None, stop=None):
        calls.append(prepared)
        short = replace(prepared, max_new_tokens=len(calls) + 1)
        generation = editor.generate_edit(lm, short, on_step)
        if prepared.request.steering.choices:
            tokens = generation.tokens
            z = lm.tokenizer.encode("z", add_special_tokens=False)[0]
            recorded = {"probabilities": [1.0, 0.4], "runners_up": [tokens[0], z]}
            generation = replace(generation, **recorded)
        return editor.EditResult(
            texts[min(len(calls), len(texts)) - 1], generation, prepared.prompt
        )

    monkeypatch.setattr("specedit.editing.local.execute", execute)
    return calls


def _run(*args):
    return runner.invoke(app, [str(a) for a in args])


def _files(folder):
    return sorted(p.name for p in folder.iterdir())


def test_an_edit_that_breaks_the_syntax_is_refused_in_place(source, tiny, monkeypatch):
    canned(monkeypatch, BROKEN)
    before = source.read_bytes()
    result = _run("fix", source, "mean adds 1", "-i", *tiny)
    assert result.exit_code == 4, result.stderr
    assert source.read_bytes() == before and _files(source.parent) == ["stats.py"]
    assert result.stdout == ""
    assert (
        f"specedit: error: refusing to write {source}: the edit breaks its Python syntax: "
        in result.stderr
    )
    assert "-def spread(values):\n+def spread(values:\n" in result.stderr  # the diff


def test_force_writes_a_refused_edit_with_a_warning(source, tiny, monkeypatch):
    canned(monkeypatch, BROKEN)
    result = _run("fix", source, "mean adds 1", "-i", "--force", *tiny)
    assert result.exit_code == 0, result.stderr
    assert source.read_text() == BROKEN
    assert "specedit: warning: " in result.stderr and "(written anyway: --force)" in result.stderr


def test_a_large_deletion_is_refused_on_stdout_and_with_output(source, tiny, monkeypatch):
    canned(monkeypatch, TRUNCATED)
    out = source.parent / "out.py"
    for extra in ((), ("-o", out)):
        result = _run("fix", source, "mean adds 1", *extra, *tiny)
        assert result.exit_code == 4, result.stderr
        assert result.stdout == "" and not out.exists()
        assert "the edit drops 4 of 9 non-blank lines (44%)" in result.stderr
    allowed = _run("edit", source, "remove spread and count", *tiny)  # asked for: no refusal
    assert allowed.exit_code == 0 and allowed.stdout == TRUNCATED


def test_diff_and_check_only_warn(source, tiny, monkeypatch):
    canned(monkeypatch, BROKEN)
    diff = _run("fix", source, "mean adds 1", "--diff", *tiny)
    assert diff.exit_code == 0 and "+def spread(values:" in diff.stdout
    assert f"specedit: warning: {source}: the edit breaks its Python syntax" in diff.stderr
    check = _run("fix", source, "mean adds 1", "--check", *tiny)
    assert check.exit_code == 1 and "specedit: warning: " in check.stderr
    assert source.read_text() == SOURCE


def test_a_test_that_always_fails_exits_5_after_every_attempt(source, tiny, monkeypatch):
    calls = canned(monkeypatch, FIXED)
    stats = source.parent / "stats.json"
    result = _run(
        "fix",
        source,
        "mean adds 1",
        "-i",
        "--test",
        "echo nope; false",
        "--stats-file",
        stats,
        *tiny,
    )
    assert result.exit_code == 5, result.stderr
    assert source.read_text() == SOURCE and result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.startswith("specedit: attempt")]
    assert lines == [f"specedit: attempt {k}/3: failed (exit 1): nope" for k in (1, 2, 3)]
    assert f"nothing was written to {source}: none of 3 attempts passed --test" in result.stderr
    # the first answer is redrawn where it was least sure (its last token, taking the `z`),
    # greedy, with the same prompt; with no branch point left, the third attempt is shown the
    # failure and samples
    assert calls[0].request.steering.choices and not calls[0].request.steering.forced
    assert len(calls[1].request.steering.forced) == 2 and not calls[1].request.feedback
    assert calls[1].prompt.ids == calls[0].prompt.ids
    assert [bool(c.request.feedback) for c in calls] == [False, False, True]
    assert "nope" in calls[2].request.feedback
    assert [c.request.sampling.temperature > 0 for c in calls] == [False, False, True]
    recorded = json.loads(stats.read_text())
    assert recorded["attempts"] == 3 and recorded["test"] == "failed"
    # where the time went: the loader's stages, then the engine's (this canned edit has no
    # prompt or drafter stage of its own)
    wall = recorded["wall_seconds"]
    assert set(wall) == {"imports", "model_load", "prefill", "decode"}
    assert all(seconds >= 0 for seconds in wall.values())  # a load cached in-process is 0


def test_attempts_sets_the_number_of_tries(source, tiny, monkeypatch):
    calls = canned(monkeypatch, FIXED)
    result = _run("fix", source, "mean adds 1", "--test", "false", "--attempts", "1", "-q", *tiny)
    assert result.exit_code == 5 and len(calls) == 1
    assert "specedit: attempt 1/1: failed (exit 1)\n" in result.stderr  # no output: no colon
    assert result.stderr.count("specedit: attempt") == 1


def test_a_passing_test_delivers_the_first_passing_candidate(source, tiny, monkeypatch):
    calls = canned(monkeypatch, BROKEN.replace("+ 1", "+ 2"), FIXED, SOURCE)
    stats, spans = source.parent / "s.json", source.parent / "a.json"
    test = "grep -qx '    return total / len(values)' {file}"
    result = _run(
        "fix",
        source,
        "mean adds 1",
        "-i",
        "--test",
        test,
        "--stats-file",
        stats,
        "--attribution",
        spans,
        *tiny,
    )
    assert result.exit_code == 0, result.stderr
    assert source.read_text() == FIXED and len(calls) == 2
    assert "specedit: attempt 1/3: failed (exit 1)" in result.stderr
    assert "--test passed after 2 attempts" in result.stderr
    recorded = json.loads(stats.read_text())
    assert recorded["attempts"] == 2 and recorded["test"] == "passed"
    # what is reported is the delivered attempt's: the branch redraw, whose answer has 3
    # tokens (attempt k makes k + 1), the first 2 given (the first answer's start, its `z`)
    assert len(calls[1].request.steering.forced) == 2
    assert json.loads(spans.read_text())["tokens"] == 3 and recorded["new_tokens"] == 1


def test_a_test_that_passes_first_time_writes_and_reports_one_attempt(source, tiny, monkeypatch):
    canned(monkeypatch, FIXED)
    result = _run("fix", source, "mean adds 1", "-i", "--test", "true", "--stats", "json", *tiny)
    assert result.exit_code == 0, result.stderr
    assert source.read_text() == FIXED
    recorded = json.loads(result.stderr.strip().splitlines()[-1])
    assert recorded["attempts"] == 1 and recorded["test"] == "passed"
    assert "specedit: attempt" not in result.stderr


def test_a_passing_candidate_is_still_checked_for_safety(source, tiny, monkeypatch):
    canned(monkeypatch, BROKEN)
    result = _run("fix", source, "mean adds 1", "-i", "--test", "true", *tiny)
    assert result.exit_code == 4 and source.read_text() == SOURCE
    assert "refusing to write" in result.stderr


def test_edits_that_never_reach_the_test_are_edit_errors(source, tiny):
    # the real tiny model: its answer is cut off at 5 tokens every time
    result = _run(
        "fix", source, "fix", "--test", "true", "--attempts", "2", "--max-new-tokens", "5", *tiny
    )
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.count("edit failed: the edit was cut off at the token limit") == 2


def test_test_option_usage_errors(source):
    result = _run("edit", "-", "x", "--test", "true")
    assert result.exit_code == 2 and "--test" in result.stderr and "stdin" in result.stderr
    result = _run("fix", source, "x", "--test", "true", "--attempts", "0")
    assert result.exit_code == 2 and "--attempts must be at least 1" in result.stderr


def test_test_and_attempts_come_from_the_settings_file(source, tiny, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".specedit.toml").write_text(
        'test = "echo from-settings; exit 3"\nattempts = 2\ntest-timeout = 30\n'
    )
    assert _run("trust").exit_code == 0  # a project's `test` runs once the user said so
    calls = canned(monkeypatch, FIXED)
    result = _run("fix", source, "mean adds 1", "-i", *tiny)
    assert result.exit_code == 5, result.stderr
    assert len(calls) == 2
    assert "specedit: attempt 2/2: failed (exit 3): from-settings" in result.stderr
    assert source.read_text() == SOURCE


def test_failed_first_answer_is_redrawn_from_each_branch_point_before_feedback():
    """With the check as the judge, every branch point of the first answer is tried (least
    sure first, each going on from the first answer's statement), then the failure is shown."""
    from specedit.editing.attempts import attempt_edits
    from specedit.editing.checks import CheckResult
    from specedit.editing.editor import EditRequest, EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    pieces = ["a", "b", "c", "d"]
    asked: list[EditRequest] = []

    def run(request: EditRequest) -> EditResult:
        asked.append(request)
        generation = Generation([0, 1], "eos", Stats(), [0.6, 0.4], [2, 3])
        said = request.steering.statement or f"statement {len(asked)}"
        return EditResult(SOURCE, generation, EditPrompt([], "```", SOURCE, 0, 0), said)

    request = EditRequest(SOURCE, "mean adds 1", prompt="fix")
    decode = lambda tokens: "".join(pieces[t] for t in tokens)  # noqa: E731
    failing = lambda text: CheckResult(False, 1, "still wrong", 0.1)  # noqa: E731
    tries = attempt_edits(run, request, failing, 4, decode)
    assert len(tries) == 4 and not any(t.passed for t in tries)
    assert [r.steering.forced for r in asked] == [(), (0, 3), (2,), ()]
    assert [r.steering.choices for r in asked] == [True, False, False, False]
    assert [r.steering.statement for r in asked] == [None, "statement 1", "statement 1", None]
    assert [bool(r.feedback) for r in asked] == [False, False, False, True]
    assert "still wrong" in asked[3].feedback
    passing_second = iter([CheckResult(False, 1, "no", 0.1), CheckResult(True, 0, "", 0.1)])
    asked.clear()
    tries = attempt_edits(run, request, lambda text: next(passing_second), 4, decode)
    assert [t.passed for t in tries] == [False, True] and asked[1].steering.forced == (0, 3)


def test_a_fifo_beside_the_file_does_not_stop_the_test(source, tiny, monkeypatch):
    canned(monkeypatch, FIXED)
    os.mkfifo(source.parent / "events")
    result = _run("fix", source, "mean adds 1", "-i", "--test", "ls", *tiny)
    assert result.exit_code == 0, result.stderr
    assert source.read_text() == FIXED and "Traceback" not in result.stderr


def test_a_folder_too_large_to_copy_is_refused_before_the_model_runs(source, tiny, monkeypatch):
    calls = canned(monkeypatch, FIXED)
    with open(source.parent / "disk.img", "wb") as image:  # sparse: large, yet it takes no disk
        image.truncate(checks.COPY_BYTES + 1)
    result = _run("fix", source, "mean adds 1", "-i", "--test", "true", *tiny)
    assert result.exit_code == Exit.INPUT and calls == []
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert errors == [
        f"specedit: error: --test runs in a copy of the folder of stats.py, {source.parent}, "
        "which holds more than 500 MiB: keep the file in its project's folder (the one its "
        "tests run from), or copy it into a smaller folder to test it"
    ]
    assert source.read_text() == SOURCE


def test_a_placeholder_inside_a_quoted_string_is_refused_before_the_model_runs(
    source, tiny, monkeypatch
):
    calls = canned(monkeypatch, FIXED)
    result = _run("fix", source, "mean adds 1", "-i", "--test", 'sh -c "grep x {file}"', *tiny)
    assert result.exit_code == Exit.INPUT and calls == []
    errors = [line for line in result.stderr.splitlines() if "error" in line]
    assert len(errors) == 1 and 'write "$SPECEDIT_FILE" there instead' in errors[0]
    test = """sh -c 'grep -qx "    return total / len(values)" "$SPECEDIT_FILE"'"""
    result = _run("fix", source, "mean adds 1", "-i", "--test", test, *tiny)
    assert result.exit_code == 0, result.stderr
    assert source.read_text() == FIXED


def test_the_attempts_share_one_copy_of_the_folder(source, tiny, monkeypatch):
    """The folder is copied once per edit, not once per attempt: what the first attempt's
    check left in the copy is there for the second's."""
    calls = canned(monkeypatch, FIXED)
    test = "echo run >> runs.log; test $(wc -l < runs.log) -eq 2"
    result = _run("fix", source, "mean adds 1", "-i", "--test", test, *tiny)
    assert result.exit_code == 0, result.stderr
    assert len(calls) == 2 and "--test passed after 2 attempts" in result.stderr
    assert sorted(p.name for p in source.parent.iterdir()) == ["stats.py"]


def test_a_symlinked_file_is_tested_in_the_link_s_folder_and_written_through(
    tmp_path, tiny, monkeypatch
):
    target = tmp_path / "lib" / "stats.py"
    target.parent.mkdir()
    target.write_text(SOURCE)
    project = tmp_path / "project"
    project.mkdir()
    link = project / "stats.py"
    link.symlink_to(target)
    (project / "test_stats.py").write_text("from stats import mean\nassert mean([1, 3]) == 2\n")
    canned(monkeypatch, FIXED)
    test = f"{shlex.quote(sys.executable)} test_stats.py"
    result = _run("fix", link, "mean adds 1", "-i", "--test", test, "--attempts", "1", *tiny)
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink() and target.read_text() == FIXED
