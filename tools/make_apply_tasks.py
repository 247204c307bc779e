"""Build the apply suite, ``specedit/bench/apply.jsonl``: lazy edit snippets to merge into files.

Each task is (file, snippet, expected): the file is a whole pure-Python standard-library module
of 70-260 lines (real code nobody on the team wrote), the expected text is that module after one
small change to one function, and the snippet shows the change the way chat models write it:
the changed function (with its class line for a method) between marker comments standing for
the unchanged code. A run passes when the merged file equals the expected text exactly.

Changes, one per task, chosen deterministically by walking each module's functions:

- ``guard``: a check that the first argument is not None, at the top of the body;
- ``rename``: a local variable renamed throughout the function;
- ``docstring``: a one-line docstring for a function that has none; the snippet elides the
  body with a marker inside the function (`# ... existing code ...` at body indentation);
- ``helper``: a new function after a one-argument function, which maps it over an iterable;
  the snippet shows the anchor's first line, a marker for its body, then the new function.

Markers rotate through the styles chat models use: ``# ... existing code ...``, ``# ...``,
``# ... rest of the code ...`` and none at all (only the changed function). No randomness: the
same interpreter gives a byte-identical file.

Usage::

    python tools/make_apply_tasks.py [--output PATH]
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import re
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

from specedit.editing.prompts import snippet_block

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "specedit" / "bench" / "apply.jsonl"
MODULES = (
    "colorsys",
    "bisect",
    "fnmatch",
    "glob",
    "html",
    "genericpath",
    "linecache",
    "getopt",
    "netrc",
    "reprlib",
    "sched",
    "graphlib",
    "quopri",
    "pty",
    "rlcompleter",
    "codeop",
    "chunk",
    "imghdr",
    "nturl2path",
    "secrets",
)
CHANGES = ("guard", "rename", "docstring", "helper")
MARKERS = ("# ... existing code ...", "# ...", "# ... rest of the code ...", None)
PER_MODULE = 2
LINES = range(60, 261)
HELPER = 5  # lines the helper change appends, blank lines included


@dataclass(frozen=True)
class Task:
    id: str
    kind: str
    group: str
    instruction: str
    input: str
    expected: str
    language: str = "python"


def functions(tree: ast.Module) -> list[tuple[ast.FunctionDef, ast.ClassDef | None]]:
    """Top-level functions and the methods of top-level classes, in source order."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found.append((node, None))
        elif isinstance(node, ast.ClassDef):
            found += [(item, node) for item in node.body if isinstance(item, ast.FunctionDef)]
    return found


def first_line(node: ast.FunctionDef) -> int:
    """1-based first line of the function, decorators included."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def has_docstring(node: ast.FunctionDef) -> bool:
    first = node.body[0]
    return (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )


def parameters(node: ast.FunctionDef) -> list[str]:
    names = [a.arg for a in node.args.posonlyargs + node.args.args]
    return names[1:] if names and names[0] in ("self", "cls") else names


def locals_of(node: ast.FunctionDef) -> list[str]:
    """Plain local names assigned in the function (not parameters), used at least twice."""
    params = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
    names = [n for n in ast.walk(node) if isinstance(n, ast.Name)]
    stored = [
        n.id for n in names if isinstance(n.ctx, ast.Store) and n.id not in params and len(n.id) > 1
    ]
    used = [n.id for n in names]
    return [name for name in dict.fromkeys(stored) if used.count(name) >= 3]


def body_start(node: ast.FunctionDef) -> int:
    """1-based line where the body begins after the docstring (if any)."""
    return (
        node.body[1].lineno if has_docstring(node) and len(node.body) > 1 else node.body[0].lineno
    )


def change(kind: str, lines: list[str], node: ast.FunctionDef) -> tuple[list[str], list[str]]:
    """(new lines of the whole file, the changed function's new lines) or raise ValueError."""
    start, end = first_line(node), node.end_lineno
    function = lines[start - 1 : end]
    inner = indent_of(lines[node.body[0].lineno - 1])
    if kind == "guard":
        names = parameters(node)
        if not names or (has_docstring(node) and len(node.body) == 1):
            raise ValueError("no argument")
        at = body_start(node) - start
        guard = [
            f"{inner}if {names[0]} is None:",
            f'{inner}    raise TypeError("{names[0]} must not be None")',
        ]
        new = function[:at] + guard + function[at:]
    elif kind == "rename":
        names = locals_of(node)
        if not names:
            raise ValueError("no local")
        old = names[0]
        pattern = re.compile(rf"(?<![.\w]){re.escape(old)}\b")
        new = [pattern.sub(f"{old}_value", line) for line in function]
        if new == function:
            raise ValueError("nothing renamed")
    elif kind == "docstring":
        if has_docstring(node) or node.body[0].lineno == node.lineno:
            raise ValueError("has a docstring")
        at = node.body[0].lineno - start
        words = node.name.strip("_").replace("_", " ")
        new = function[:at] + [f'{inner}"""Return the result of {words}."""'] + function[at:]
    elif kind == "helper":
        if len(parameters(node)) != 1 or (node.args.args and node.args.args[0].arg == "self"):
            raise ValueError("not a one-argument function")
        if indent_of(lines[start - 1]):
            raise ValueError("a method")
        name = node.name
        helper = [
            "",
            "",
            f"def {name}_each(items):",
            f'    """Apply {name}() to every item; returns a list."""',
            f"    return [{name}(item) for item in items]",
        ]
        assert len(helper) == HELPER
        new = function + helper
    else:
        raise ValueError(kind)
    return lines[: start - 1] + new + lines[end:], new


def snippet(
    kind: str,
    new: list[str],
    node: ast.FunctionDef,
    cls: ast.ClassDef | None,
    lines: list[str],
    marker: str | None,
) -> str:
    """The changed function as a chat model writes it, between markers."""
    shown = new
    base = indent_of(new[0])
    if kind == "docstring":  # signature and docstring, then the body elided
        at = node.body[0].lineno - first_line(node) + 1
        shown = new[:at] + [indent_of(new[at]) + (marker or "# ... existing code ...")]
    elif kind == "helper":  # the anchor's first line, its body elided, then the new function
        body_indent = indent_of(lines[node.body[0].lineno - 1])
        signature = new[: node.body[0].lineno - first_line(node)]
        shown = [*signature, body_indent + (marker or "# ... existing code ..."), *new[-HELPER:]]
    parts: list[str] = []
    if cls is not None:
        parts += [lines[cls.lineno - 1]]
        if marker:
            parts += [base + marker, ""]
    elif marker:
        parts += [marker, ""]
    parts += shown
    if marker:
        parts += ["", base + marker if cls is not None else marker]
    return "\n".join(parts) + "\n"


def module_tasks(module_name: str, number: int) -> list[Task]:
    with warnings.catch_warnings():  # `chunk` and `imghdr` are deprecated: read, never used
        warnings.simplefilter("ignore", DeprecationWarning)
        source = inspect.getsource(importlib.import_module(module_name))
    lines = source.splitlines()
    if len(lines) not in LINES:
        raise SystemExit(f"{module_name} has {len(lines)} lines, outside {LINES}")
    tree = ast.parse(source)
    tasks: list[Task] = []
    used: set[str] = set()
    kinds = [CHANGES[(number + k) % len(CHANGES)] for k in range(len(CHANGES))]
    for kind in kinds:
        for node, cls in functions(tree):
            if node.name in used:
                continue
            try:
                changed, new = change(kind, lines, node)
            except ValueError:
                continue
            marker = MARKERS[(number * PER_MODULE + len(tasks)) % len(MARKERS)]
            text = snippet(kind, new, node, cls, lines, marker)
            expected = "\n".join(changed) + "\n"
            ast.parse(expected)  # the change keeps the module valid Python
            tasks.append(
                Task(
                    id=f"apply-{module_name}-{kind}",
                    kind="apply",
                    group="apply",
                    instruction=snippet_block(text, "python"),
                    input=source,
                    expected=expected,
                )
            )
            used.add(node.name)
            break
        if len(tasks) == PER_MODULE:
            break
    return tasks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()
    tasks = [task for number, name in enumerate(MODULES) for task in module_tasks(name, number)]
    assert len({t.id for t in tasks}) == len(tasks), "task ids must be unique"
    for task in tasks:
        assert task.input != task.expected
    args.output.write_text("".join(json.dumps(asdict(t)) + "\n" for t in tasks))
    kinds = {k: sum(t.id.endswith(k) for t in tasks) for k in CHANGES}
    print(f"wrote {len(tasks)} tasks to {args.output}: {kinds}")


if __name__ == "__main__":
    main()
