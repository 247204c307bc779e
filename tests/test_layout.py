"""The layout's rules, checked on the source: data flows one way, and the CLI starts light.

engine <- drafting <- edit <- {jobs, bench, calibrate} <- cli, with view reading engine events.
Imports inside functions count too: a cycle hidden in a function is still a cycle.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import specedit

ROOT = Path(specedit.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(path): path for path in ROOT.rglob("*.py")}


def _imports(name: str) -> set[str]:
    """specedit modules that `name` imports anywhere in its source (type-checking-only imports
    excluded: they never run)."""
    tree = ast.parse(MODULES[name].read_text())
    skipped = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    package = name if MODULES[name].name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1],
                                 *filter(None, [base])])  # fmt: skip
            for alias in node.names:
                child = f"{base}.{alias.name}"
                found.add(child if child in MODULES else base)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imports(name) for name in MODULES}


def _reachable(start: str) -> set[str]:
    seen, todo = set(), [start]
    while todo:
        for module in GRAPH[todo.pop()] - seen:
            seen.add(module)
            todo.append(module)
    return seen


def test_the_graph_sees_the_imports_it_must():
    """Guards the checker itself: known edges, including an import inside a function."""
    assert "specedit.engine.tree" in GRAPH["specedit.engine.session"]
    assert "specedit.drafting.adapld" in GRAPH["specedit.drafting.registry"]  # in a function
    assert "specedit.prompts" in GRAPH["specedit.edit"]  # `from specedit import prompts`
    assert "specedit.drafting.kinds" in GRAPH["specedit.view.dashboard"]


def test_no_import_cycles():
    cycles = sorted(name for name in MODULES if name in _reachable(name))
    assert not cycles, f"modules that import themselves through others: {cycles}"


@pytest.mark.parametrize(
    "layer,forbidden",
    [
        ("specedit.engine", ("specedit.",)),  # the engine imports nothing else of specedit
        ("specedit.drafting", ("specedit.edit", "specedit.jobs", "specedit.bench",
                               "specedit.calibrate", "specedit.view", "specedit.cli")),
        ("specedit.view", ("specedit.edit", "specedit.jobs", "specedit.drafting.registry",
                           "specedit.models", "specedit.cli")),
        ("specedit.edit", ("specedit.jobs", "specedit.bench.runner", "specedit.calibrate",
                           "specedit.cli")),
    ],
)  # fmt: skip
def test_each_layer_imports_only_what_lies_below_it(layer, forbidden):
    for name in (m for m in MODULES if m == layer or m.startswith(layer + ".")):
        outside = {m for m in GRAPH[name] if not m.startswith(layer)}
        wrong = sorted(m for m in outside if m.startswith(forbidden))
        assert not wrong, f"{name} imports {wrong}"


def test_offline_calibration_is_off_the_per_edit_path():
    """What runs per edit (jobs, and all it imports) never loads the training code."""
    assert not any(m.startswith("specedit.calibrate") for m in _reachable("specedit.jobs"))
    assert not any(m.startswith("specedit.calibrate") for m in _reachable("specedit.bench.runner"))


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["fix", "--help"], ["bench", "-h"]])
def test_the_cli_answers_without_importing_torch(args):
    code = (
        "import sys\n"
        "from specedit.cli import app\n"
        f"try:\n    app({args!r})\n"
        "except SystemExit as done:\n    assert done.code == 0, done.code\n"
        "heavy = sorted({'torch', 'transformers', 'numpy'} & set(sys.modules))\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "Usage" in result.stdout or "specedit" in result.stdout


def test_the_remote_client_path_never_loads_torch():
    """`specedit fix --server URL` runs jobs and the remote editor only: a warm server answers
    without the client paying torch's import."""
    code = (
        "import sys\n"
        "import specedit.jobs, specedit.server.client, specedit.cli\n"
        "heavy = sorted({'torch', 'transformers', 'numpy'} & set(sys.modules))\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
