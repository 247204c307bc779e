"""What `specedit bench` says before it runs tests that did not ship with it: they run with the
user's rights, unsandboxed (docs/benchmarks.md)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from specedit.bench.runner import BenchError, run_bench
from specedit.bench.setups import MERGE
from specedit.bench.tasks import SUITES

LM = SimpleNamespace(engine="torch", draft=None, name="m")
TASK = {"id": "t", "kind": "fix", "instruction": "fix it", "input": "x = 2\n"}


def _bench(capsys, **options) -> str:
    """What the bench says on stderr before it stops at a setup that cannot run (`merge` on
    edit tasks, refused once the tasks are read)."""
    with pytest.raises(BenchError, match="merges snippets"):
        run_bench(LM, [MERGE], **options)
    return capsys.readouterr().err


def test_tests_from_a_tasks_file_not_shipped_are_warned_about_in_one_line(tmp_path, capsys):
    foreign = tmp_path / "tasks.jsonl"
    foreign.write_text(json.dumps(TASK | {"tests": "assert x == 1"}) + "\n")
    err = _bench(capsys, tasks_file=foreign)
    assert err.count("\n") == 1 and err.startswith(f"specedit: warning: {foreign}: ")
    assert "unsandboxed, with your rights" in err


def test_the_shipped_suites_and_tasks_that_run_nothing_are_not_warned_about(tmp_path, capsys):
    shipped = SUITES["edit"]  # a suite folder reads as a tasks file too
    text_only = tmp_path / "tasks.jsonl"
    text_only.write_text(json.dumps(TASK | {"expected": "x = 1\n"}) + "\n")
    assert _bench(capsys) == ""
    assert _bench(capsys, tasks_file=shipped) == ""
    assert _bench(capsys, tasks_file=text_only) == ""  # compared as text: nothing runs
