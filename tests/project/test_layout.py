"""The layout's rules, checked on the source: data flows one way, and the CLI starts light.

engine <- models <- drafting <- editing <- {server, bench <- calibrate} <- cli, with view reading
engine events.
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
                base = ".".join(
                    [
                        *package.split(".")[: len(package.split(".")) - node.level + 1],
                        *filter(None, [base]),
                    ]
                )
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
    adapld = "specedit.drafting.copying.adapld"
    assert adapld in GRAPH["specedit.drafting.registry"]  # in a function
    # `from specedit.editing import prompts`
    assert "specedit.editing.prompts" in GRAPH["specedit.editing.editor"]
    assert "specedit.drafting.kinds" in GRAPH["specedit.view.dashboard"]


def test_no_import_cycles():
    cycles = sorted(name for name in MODULES if name in _reachable(name))
    assert not cycles, f"modules that import themselves through others: {cycles}"


SHARED = ("specedit.console", "specedit.files")  # helpers every layer may use
# What each part may import of specedit besides itself; data flows one way:
# engine <- models <- drafting <- editing <- {server, bench <- calibrate} <- cli.
LAYERS = {
    "specedit.console": (),
    "specedit.files": ("specedit.console",),
    "specedit.engine": (),  # the engine imports nothing else of specedit
    "specedit.models": ("specedit.engine", *SHARED),
    "specedit.drafting": ("specedit.engine", "specedit.models", *SHARED),
    "specedit.editing": ("specedit.engine", "specedit.drafting", "specedit.models", *SHARED),
    # the view reads engine events, the draft kinds and the prompt's shape only
    "specedit.view": (
        "specedit.engine.events",
        "specedit.drafting.kinds",
        "specedit.editing.prompts",
    ),
    "specedit.server": (
        "specedit.engine",
        "specedit.drafting",
        "specedit.models",
        "specedit.editing",
        "specedit.view",
        *SHARED,
    ),
    "specedit.bench": (
        "specedit.engine",
        "specedit.drafting",
        "specedit.models",
        "specedit.editing",
        *SHARED,
    ),
    "specedit.calibrate": (
        "specedit.engine",
        "specedit.drafting",
        "specedit.models",
        "specedit.editing",
        "specedit.bench.tasks",
        *SHARED,
    ),
    "specedit.cli": ("specedit",),  # the top: it may import everything
    "specedit.__main__": ("specedit.cli",),
}


def _layer(name: str) -> str | None:
    return next((layer for layer in LAYERS if name == layer or name.startswith(layer + ".")), None)


def test_every_module_has_a_layer_and_few_lie_outside_the_folders():
    assert not [name for name in MODULES if name != "specedit" and _layer(name) is None]
    loose = [path.name for path in ROOT.glob("*.py")]
    assert len(set(loose) - {"__init__.py", "__main__.py"}) <= 6, loose


@pytest.mark.parametrize("layer", LAYERS)
def test_each_layer_imports_only_what_lies_below_it(layer):
    for name in (m for m in MODULES if _layer(m) == layer):
        outside = {m for m in GRAPH[name] if _layer(m) != layer}
        wrong = sorted(m for m in outside if m != "specedit" and not m.startswith(LAYERS[layer]))
        assert not wrong, f"{name} imports {wrong}"


# Drafting's families, in its folders: the hybrid copies with AdaPLD, so the model drafters
# may import the copy drafters, never the reverse; what every family shares lies beside them.
DRAFTING = "specedit.drafting"
FAMILIES = {
    f"{DRAFTING}.copying": (),
    f"{DRAFTING}.model": (f"{DRAFTING}.copying",),
}


def test_drafting_has_few_entries_and_its_families_depend_one_way():
    entries = [path.name for path in (ROOT / "drafting").iterdir() if path.name != "__pycache__"]
    assert len(entries) <= 8, entries
    for name in (m for m in MODULES if m.startswith(DRAFTING)):
        family = next((f for f in FAMILIES if name == f or name.startswith(f + ".")), None)
        if name == f"{DRAFTING}.registry":  # it names them all
            continue
        allowed = (family, *FAMILIES[family]) if family else ()
        wrong = sorted(
            m for m in GRAPH[name] for f in FAMILIES if m.startswith(f) and f not in allowed
        )
        assert not wrong, f"{name} imports {wrong}"


def test_offline_calibration_is_off_the_per_edit_path():
    """What runs per edit (delivering it, and all that imports) never loads the training code."""
    assert not any(m.startswith("specedit.calibrate") for m in _reachable("specedit.cli.deliver"))
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
    """`specedit fix --server URL` runs delivery and the remote editor only: a warm server answers
    without the client paying torch's import, and the client needs nothing of the serve extra
    (the wire schema it shares with the server is pydantic only)."""
    code = (
        "import sys\n"
        "import specedit.cli.deliver, specedit.server.client, specedit.cli\n"
        "heavy = {'torch', 'transformers', 'numpy', 'fastapi', 'uvicorn'}\n"
        "heavy = sorted(heavy & set(sys.modules))\n"
        "assert not heavy, heavy\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
