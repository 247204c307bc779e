"""`specedit apply`: the shipped apply suite, the snippet in the prompt, the command's errors."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specedit import prompts
from specedit.bench.tasks import load_tasks
from specedit.cli import app

SUITE = load_tasks(suite="apply")
ROOT = Path(__file__).resolve().parent.parent
MARKER = re.compile(r"^\s*(# \.\.\.|# \.\.\. .*\.\.\.)\s*$")
runner = CliRunner()


def _snippet(task) -> str:
    """The snippet's code: the instruction's code block without its fences."""
    return "\n".join(task.instruction.splitlines()[1:-1]) + "\n"


def test_the_suite_is_large_and_varied():
    assert len(SUITE) >= 30 and len({t.id for t in SUITE}) == len(SUITE)
    changes = {t.id.rsplit("-", 1)[1] for t in SUITE}
    assert changes == {"guard", "rename", "docstring", "helper"}
    assert all(t.kind == "apply" and t.expected is not None for t in SUITE)
    assert sum(MARKER.match(line) is not None for t in SUITE for line in _snippet(t).splitlines())
    assert any(not any(MARKER.match(x) for x in _snippet(t).splitlines()) for t in SUITE)


@pytest.mark.parametrize("task", SUITE, ids=lambda t: t.id)
def test_each_snippet_shows_its_change_and_the_answer_is_valid_python(task):
    ast.parse(task.input)
    ast.parse(task.expected)
    assert task.expected != task.input
    code = [line for line in _snippet(task).splitlines() if line.strip()]
    expected = task.expected.splitlines()
    # every line the snippet shows, markers aside, is a line of the answer...
    assert all(line in expected for line in code if not MARKER.match(line))
    # ...and at least one of them is new: the snippet carries the change
    assert any(line not in task.input.splitlines() for line in code if not MARKER.match(line))


def test_the_suite_file_is_what_the_script_builds(tmp_path):
    out = tmp_path / "apply.jsonl"
    subprocess.run(
        [sys.executable, str(ROOT / "tools" / "make_apply_tasks.py"), "--output", str(out)],
        check=True,
        capture_output=True,
    )
    assert out.read_text() == (ROOT / "specedit" / "bench" / "apply.jsonl").read_text()


def test_the_snippet_gets_a_fence_of_its_own(tokenizer):
    snippet = "# ...\n\ndef f(x):\n    ```not a fence```\n    return x\n\n# ...\n"
    block = prompts.snippet_block(snippet, "python")
    assert block.startswith("````python\n") and block.endswith("\n````")
    prompt = prompts.build(
        tokenizer, prompts.load_template("apply"), "def f(x):\n    return x\n", block, "python"
    )
    rendered = tokenizer.decode(prompt.ids)
    assert block in rendered and "def f(x):\n    return x\n```" in rendered


@pytest.mark.parametrize(
    "args,message",
    [
        (["-", "-"], "cannot both come from stdin"),
        (["FILE", "missing.py"], "missing.py: no such file"),
        (["FILE", "EMPTY"], "the snippet is empty"),
    ],
)
def test_bad_snippets_exit_2_and_write_nothing(tmp_path, args, message):
    source, empty = tmp_path / "code.py", tmp_path / "empty.py"
    source.write_text("def f(x):\n    return x\n")
    empty.write_text("\n")
    names = {"FILE": str(source), "EMPTY": str(empty), "missing.py": str(tmp_path / "missing.py")}
    result = runner.invoke(app, ["apply", *[names.get(a, a) for a in args], "-i"])
    assert result.exit_code == 2 and message in result.stderr
    assert source.read_text() == "def f(x):\n    return x\n"
