"""What each install holds: the base install is the light CLI, with no engine; the llamacpp
extra adds the default engine and the torch extra the other. Without torch, the default path
(a model prepared for llama.cpp, an edit there) runs, and an engine that is not installed is
named with the command that installs it."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import ROOT, TEST_MODEL
from typer.testing import CliRunner

from specedit.cli import app

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
TORCH_EXTRA = {"torch", "accelerate", "hnswlib"}


def _names(requirements: list[str]) -> set[str]:
    """The distributions `requirements` name, normalized (PEP 503); this project's own extras
    are left out."""
    names = {re.split(r"[\[<>=!~;\s]", r, maxsplit=1)[0] for r in requirements}
    return {re.sub(r"[-_.]+", "-", n).lower() for n in names} - {"specedit"}


def _imported() -> set[str]:
    """Every module outside the standard library that specedit's code imports, by its first
    name."""
    modules = set()
    for path in (ROOT / "specedit").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules - set(sys.stdlib_module_names) - {"specedit"}


def test_the_base_install_holds_no_engine_and_every_import_is_declared():
    """torch and what only it needs are an extra; each package specedit imports is declared in
    the base install or an extra, not left to arrive with another package (jinja2 came with
    torch)."""
    base = _names(PROJECT["dependencies"])
    extras = {name: _names(items) for name, items in PROJECT["optional-dependencies"].items()}
    assert not base & (TORCH_EXTRA | {"llama-cpp-python"})
    assert extras["torch"] == TORCH_EXTRA and extras["llamacpp"] == {"llama-cpp-python"}
    assert "specedit[torch" in " ".join(PROJECT["optional-dependencies"]["dev"])
    declared = base.union(*extras.values())
    installed = importlib.metadata.packages_distributions()
    for module in _imported():
        if module in installed:  # one the running install lacks cannot be told apart here
            distributions = _names(installed[module])
            assert distributions & declared, f"{module} ({', '.join(distributions)}) undeclared"


@pytest.mark.parametrize(
    ("missing", "command", "message"),
    [
        (
            ("torch",),
            ["fix", "{file}", "add", "--engine", "torch"],
            "the torch engine needs torch: pip install torch==2.13.0 'specedit[torch]'",
        ),
        (
            ("hnswlib",),
            ["models", "prepare", "{folder}", "--engine", "torch"],
            "the torch engine needs hnswlib: pip install torch==2.13.0 'specedit[torch]'",
        ),
        (
            ("torch", "llama_cpp"),
            ["fix", "{file}", "add", "--model", TEST_MODEL],
            "no engine is installed: pip install 'specedit[llamacpp]'",
        ),
    ],
)
def test_an_engine_that_is_not_installed_is_one_line_naming_its_install_command(
    tmp_path, tiny_model_dir, monkeypatch, missing, command, message
):
    for name in missing:
        monkeypatch.setitem(sys.modules, name, None)  # `import torch` now fails
    monkeypatch.delenv("SPECEDIT_ENGINE")
    path = tmp_path / "code.py"
    path.write_text("def add(a, b):\n    return a - b\n")
    args = [a.format(file=path, folder=tiny_model_dir) for a in command]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 3, result.stderr
    assert len(result.stderr.splitlines()) == 1 and message in result.stderr
    assert path.read_text() == "def add(a, b):\n    return a - b\n"


# The CLI in a fresh interpreter where the torch extra is not installed: importing any of it
# fails, as it does there.
WITHOUT_TORCH = """
import sys
for name in ("torch", "accelerate", "hnswlib"):
    sys.modules[name] = None
from specedit.cli import app
app(sys.argv[1:], prog_name="specedit")
"""


@pytest.mark.e2e
@pytest.mark.llamacpp
def test_without_torch_a_model_is_prepared_for_llama_cpp_and_an_edit_builds_nothing(tmp_path):
    """The light install's path from a fresh cache: `models prepare` joins the GGUF file, reads
    its tokenizer and config and measures the pass cost, and neither converts the model for
    torch nor builds AdaPLD's vocabulary indexes; `models info` reads the GGUF file; the edit
    then runs on llama.cpp and builds nothing more (its prompt heads aside)."""
    cache = tmp_path / "cache"
    env = {**os.environ, "SPECEDIT_CACHE": str(cache), "SPECEDIT_ENGINE": "auto"}

    def specedit(*args: str) -> subprocess.CompletedProcess:
        command = [sys.executable, "-c", WITHOUT_TORCH, *args]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
        assert done.returncode == 0, done.stderr
        return done

    def built() -> list[Path]:
        return sorted(p.relative_to(cache) for p in cache.rglob("*") if "prefix" not in p.parts)

    prepared = specedit("models", "prepare", TEST_MODEL)
    assert prepared.stdout.strip() == str(cache / "gguf" / f"{TEST_MODEL}.gguf")
    assert {p.parts[0] for p in built()} == {"gguf", "cost"}  # no models/, no indexes/
    listed = specedit("models").stdout.splitlines()
    assert [TEST_MODEL, "prepared", "(llama.cpp)"] in [line.split()[:3] for line in listed]
    info = dict(
        line.split(None, 1) for line in specedit("models", "info", TEST_MODEL).stdout.splitlines()
    )
    assert (info["model_type"], info["num_hidden_layers"]) == ("qwen2", "24")

    before = built()
    path, stats = tmp_path / "note.txt", tmp_path / "stats.json"
    path.write_text("The quick brown fox jumsp over the lazy dog.\n")
    edited = specedit(
        "rewrite", str(path), "-m", "fix the spelling mistake", "--stats-file", str(stats)
    )
    assert edited.stdout == "The quick brown fox jumps over the lazy dog.\n"
    assert json.loads(stats.read_text())["engine"] == "llama.cpp"
    assert built() == before
