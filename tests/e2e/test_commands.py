"""End to end on the bundled real model: a real file fixed, a pipeline, a proofread rewrite. (The
bench on tiny models: bench/ and cli/; on real ones it is run, not tested: docs/benchmarks.md.)"""

from __future__ import annotations

import pytest
from helpers import ROOT
from typer.testing import CliRunner

from specedit.cli import app

pytestmark = pytest.mark.e2e
runner = CliRunner()
EXAMPLE = ROOT / "examples" / "buggy_stats.py"


def test_fix_prints_the_fixed_example(bundled_model_dir):
    result = runner.invoke(
        app, ["fix", str(EXAMPLE), "mean() returns a huge number instead of the average"]
    )
    assert result.exit_code == 0, result.stderr
    original = EXAMPLE.read_text()
    assert result.stdout == original.replace(
        "return sum(values) * len(values)", "return sum(values) / len(values)"
    )
    assert "tokens/pass" in result.stderr  # one stats line, on stderr only


def test_a_long_file_s_fix_writes_the_named_function_s_body_alone(bundled_model_dir, tmp_path):
    """In a file of 200 lines or more a fix is narrowed to the function it names, and of one
    whose docstring takes lines of its own only the code after it is written: every other
    byte is the file's own."""
    one_line = '    """Arithmetic mean of a non-empty list."""\n'
    documented = (
        '    """Arithmetic mean of a non-empty list.\n\n    Their sum over their count.\n    """\n'
    )
    helpers = "".join(f"\n\ndef scaled_{i}(value):\n    return value * {i}\n" for i in range(50))
    text = EXAMPLE.read_text().replace(one_line, documented)
    text = text.replace(
        '\n\nif __name__ == "__main__":', helpers + '\n\nif __name__ == "__main__":'
    )
    path = tmp_path / "stats.py"
    path.write_text(text)
    result = runner.invoke(
        app, ["fix", str(path), "mean() returns a huge number instead of the average"]
    )
    assert result.exit_code == 0, result.stderr
    assert "editing mean (lines 11-13): named in the instruction; its body" in result.stderr
    assert result.stdout == text.replace("sum(values) * len(values)", "sum(values) / len(values)")


def test_stdin_to_stdout_pipeline(bundled_model_dir):
    text = "The quick brown fox jumsp over the lazy dog.\n"
    result = runner.invoke(app, ["edit", "-", "fix the spelling mistake"], input=text)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "The quick brown fox jumps over the lazy dog.\n"


def test_a_rewrite_is_proofread_where_the_model_copied_a_typo(bundled_model_dir, tmp_path):
    """The model copies "epxressive" (its runner-up there is " expressive"); proofreading goes
    on from the runner-up and keeps the word the model prefers without the document. One
    candidate as the model wrote it keeps the typo."""
    doc = tmp_path / "README.md"
    doc.write_text(
        "# Jinja\n\nJinja is a fast, epxressive, extensible templating engine. Special\n"
        "placeholders in the template allow writing code similar to Python\n"
        "syntax. Then the template is passed data to render the final document.\n"
    )
    result = runner.invoke(app, ["rewrite", str(doc), "-m", "Fix the typos."])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == doc.read_text().replace("epxressive", "expressive")
    assert "corrected after the model (1): epxressive -> expressive" in result.stderr
    result = runner.invoke(app, ["rewrite", str(doc), "-m", "Fix the typos.", "--samples", "1"])
    assert result.exit_code == 0 and result.stdout == doc.read_text(), result.stderr
