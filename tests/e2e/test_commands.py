"""End to end on the bundled real model: a real file fixed, a pipeline, the benchmark."""

from __future__ import annotations

import json

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


def test_bench_runs_methods_side_by_side(bundled_model_dir, tmp_path):
    """On the real model in fp32, every strict method reproduces plain greedy decoding token
    for token (bf16 may round a batched pass differently, so the dtype is pinned); a short
    decode proves it as well as a whole answer, which the fast tier's bench tests judge."""
    report = tmp_path / "bench.json"
    result = runner.invoke(
        app,
        [
            "bench",
            "--tasks",
            "typo-click-readme",
            "--methods",
            "ar,hf-pld,pld,pldplus",
            "--dtype",
            "fp32",
            "--max-new-tokens",
            "96",
            "--json",
            str(report),
        ],
    )
    assert result.exit_code == 0, result.stderr
    data = json.loads(report.read_text())
    rows = data["rows"]
    assert [row["method"] for row in rows] == ["ar", "hf-pld", "pld", "pldplus"]
    assert data["dtype"] == "float32"
    assert [row["identical"] for row in rows] == [True] * 4
    assert [row["new_tokens"] for row in rows] == [96] * 4
    assert all(row["stop"] == "length" for row in rows)
    assert data["summary"]["pldplus"]["mean_accepted"] > 2  # drafts were accepted


def test_bench_edits_the_named_region_and_judges_the_whole_file(bundled_model_dir, tmp_path):
    """`--regions named` asks for the function the instruction names (`quote`, lines 26-35 of
    35): a shorter answer, put back into the file before it is scored and tested."""
    report = tmp_path / "bench.json"
    result = runner.invoke(
        app,
        [
            "bench",
            "--tasks",
            "fix-shlex-quote-return",
            "--methods",
            "pld",
            "--regions",
            "whole,named",
            "--dtype",
            "fp32",
            "--json",
            str(report),
        ],
    )
    assert result.exit_code == 0, result.stderr
    whole, named = json.loads(report.read_text())["rows"]
    assert (whole["method"], named["method"]) == ("pld+whole", "pld+named")
    assert named["new_tokens"] < whole["new_tokens"]
    # Scored and tested on the whole file: whatever the model did to the region's 10 lines, the
    # 25 before it are there.
    assert named["dropped"] <= 10 and named["passed"] is not None
