"""`specedit apply`: the shipped apply suite, the snippet in the prompt, the command's errors."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from specedit.bench.tasks import load_tasks
from specedit.cli import app
from specedit.editing import prompts

SUITE = load_tasks(suite="apply")
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


SOURCE = "import math\n\n\ndef area(r):\n    return math.pi * r * r\n\n\ndef main():\n    print(area(2))\n"  # noqa: E501
CLEAR = "```python\ndef area(r):\n    if r < 0:\n        raise ValueError(r)\n    # ... existing code ...\n```"  # noqa: E501
MERGED = SOURCE.replace(
    "def area(r):\n", "def area(r):\n    if r < 0:\n        raise ValueError(r)\n"
)
DOUBTFUL = "# ...\n\ndef helper():\n    pass\n\n# ...\n"  # a new part between two markers


def _files(tmp_path, snippet: str) -> tuple[Path, Path]:
    source, change = tmp_path / "geo.py", tmp_path / "change.txt"
    source.write_text(SOURCE)
    change.write_text(snippet)
    return source, change


def test_a_clear_snippet_is_merged_without_loading_a_model(tmp_path, monkeypatch):
    def no_model(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr("specedit.cli.commands.load_model", no_model)
    source, change = _files(tmp_path, CLEAR)
    stats, attribution = tmp_path / "stats.json", tmp_path / "attribution.json"
    result = runner.invoke(
        app,
        [
            "apply",
            str(source),
            str(change),
            "-i",
            "--stats-file",
            str(stats),
            "--attribution",
            str(attribution),
        ],
    )
    assert result.exit_code == 0, result.stderr
    assert source.read_text() == MERGED
    assert "merged without the model" in result.stderr
    assert json.loads(stats.read_text())["method"] == "merge"
    record = json.loads(attribution.read_text())
    assert record["output"] == MERGED and record["tokens"] == 0
    spans = record["spans"]
    assert [s["output"][0] for s in spans[1:]] == [s["output"][1] for s in spans[:-1]]
    assert spans[-1]["output"][1] == len(MERGED)
    for span in spans:  # copied spans are the input's text; the rest is the snippet's
        shown = MERGED[span["output"][0] : span["output"][1]]
        if span["source"] == "input":
            assert shown == SOURCE[span["input"][0] : span["input"][1]]
        else:
            assert span["source"] == "snippet" and shown.strip() in CLEAR
    # from stdin, to stdout; the same snippet again changes nothing
    source.write_text(SOURCE)
    piped = runner.invoke(app, ["apply", str(source), "-", "-q"], input=CLEAR)
    assert piped.exit_code == 0 and piped.stdout == MERGED
    again = runner.invoke(app, ["apply", "-", str(change), "-q"], input=MERGED)
    assert again.exit_code == 0 and again.stdout == MERGED


@pytest.mark.parametrize(
    "snippet, extra",
    [(DOUBTFUL, []), (CLEAR, ["--merge", "model"]), (CLEAR, ["--test", "false"])],
    ids=["doubtful", "asked-for-the-model", "merge-fails-test"],
)
def test_otherwise_the_model_merges(tmp_path, snippet, extra):
    """The tiny test model cannot merge: cut off at 4 tokens, it shows that it was asked."""
    source, change = _files(tmp_path, snippet)
    result = runner.invoke(
        app, ["apply", str(source), str(change), "-i", "--max-new-tokens", "4", *extra]
    )
    assert result.exit_code in (2, 5), result.stderr
    assert "merged without the model:" not in result.stderr
    assert (
        "cut off at the token limit" in result.stderr or "attempts passed --test" in result.stderr
    )
    assert source.read_text() == SOURCE  # nothing written
    if "--test" in extra:
        assert "the merge without the model failed" in result.stderr


def test_the_bench_merges_as_apply_does(tmp_path):
    """`--methods merge`: without the model where the snippet is clear (no tokens, exact), else
    the model with the engine's default method; it runs on apply tasks only."""
    tasks = tmp_path / "tasks.jsonl"
    lines = [
        {
            "id": name,
            "kind": "apply",
            "instruction": snippet,
            "input": SOURCE,
            "expected": MERGED,
            "language": "python",
        }
        for name, snippet in (("clear", CLEAR), ("doubtful", DOUBTFUL))
    ]
    tasks.write_text("\n".join(map(json.dumps, lines)))
    report = tmp_path / "report.json"
    args = ["bench", "--methods", "merge", "--json", str(report), "--max-new-tokens", "8"]
    result = runner.invoke(app, [*args, "--tasks-file", str(tasks)])
    assert result.exit_code == 0, result.stderr
    rows = {row["task"]: row for row in json.loads(report.read_text())["rows"]}
    assert rows["clear"]["stop"] == "merged" and rows["clear"]["exact_match"]
    assert rows["clear"]["new_tokens"] == 0 and rows["clear"]["passed"]
    assert rows["doubtful"]["stop"] != "merged" and rows["doubtful"]["new_tokens"] > 0
    edit_suite = runner.invoke(app, ["bench", "--methods", "merge", "--tasks", "typo-gguf-readme"])
    assert edit_suite.exit_code == 2 and "runs on apply tasks" in edit_suite.stderr


def test_with_examples_an_apply_s_snippet_is_not_read_for_calls_and_values(tmp_path, monkeypatch):
    """A snippet is code, not a report: `# area(2) should be 12.0` in it is no example to run.
    The examples check is asked for with no instruction (the model then merges, cut off)."""
    import contextlib

    from specedit.cli import deliver

    asked = []

    @contextlib.contextmanager
    def recording(path, text, language, wanted, instruction=""):
        asked.append(instruction)
        yield None

    monkeypatch.setattr(deliver, "examples_check", recording)
    snippet = "# ...\n\ndef helper():\n    return area(2)  # area(2) should be 12.0\n\n# ...\n"
    source, change = _files(tmp_path, snippet)
    runner.invoke(app, ["apply", str(source), str(change), "--max-new-tokens", "4", "--examples"])
    assert asked == [""]
