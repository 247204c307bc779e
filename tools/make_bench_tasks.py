"""Build the specedit benchmark task suite, ``specedit/bench/tasks.jsonl``.

Why this script exists instead of a hand-written task file:

* The inputs are real text that nobody on the team wrote: excerpts of Python
  standard-library modules and the README prose that installed packages ship in
  their metadata. A benchmark built from our own examples would reward prompts
  and drafting heuristics we tuned on exactly those examples.
* Every planted change (bug, typo, rename) is an explicit string replacement that
  is asserted to match exactly once, so when a different Python or package
  version changes the source text the script fails loudly instead of silently
  writing a task whose bug is missing.
* There is no randomness, so the same interpreter and the same installed packages
  give a byte-identical file. The text does depend on those versions (the
  committed file was made with CPython 3.11); regenerate and review the diff
  when they change.

Task kinds:

* ``fix``: stdlib code with one planted bug; ``expected`` is the original source.
* ``rewrite``: README prose with a few transposed letters; ``expected`` is the
  original prose.
* ``edit``: small refactors. Renames have an ``expected`` (whole-word
  replacement); open-ended edits (type hints, docstrings, comprehensions) have
  ``expected = null``.

Usage::

    python tools/make_bench_tasks.py [--output PATH]
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.metadata
import inspect
import json
import re
import textwrap
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["fix", "edit", "rewrite"]

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "specedit" / "bench" / "tasks.jsonl"

# Input sizes that keep one task's output at roughly 150-700 tokens.
CODE_LINES = range(15, 71)
PROSE_LINES = range(8, 26)

TYPO_INSTRUCTION = "Fix the typos."


@dataclass(frozen=True)
class Task:
    """One line of tasks.jsonl; field order is the order written to the file."""

    id: str
    kind: Kind
    instruction: str
    input: str
    language: str
    expected: str | None


# --- reading source text -----------------------------------------------------


def normalize(text: str) -> str:
    """Dedent, strip trailing whitespace and blank edge lines, end with one newline."""
    lines = [line.rstrip() for line in textwrap.dedent(text).splitlines()]
    return "\n".join(lines).strip("\n") + "\n"


def stdlib_source(module_name: str, *qualnames: str) -> str:
    """Return the source of the named top-level functions/classes or methods.

    ``inspect.getsource(func)`` fails for C-accelerated modules (``bisect`` and
    ``heapq`` replace their Python functions with builtins) and for frozen modules
    (``posixpath``), so we take the module's source and slice definitions with
    ``ast``. ``qualnames`` are like ``"indent"`` or ``"Formatter._vformat"``;
    several definitions are joined with two blank lines.
    """
    module_text = inspect.getsource(importlib.import_module(module_name))
    module_lines = module_text.splitlines()
    tree = ast.parse(module_text)
    chunks = []
    for qualname in qualnames:
        node: ast.AST = tree
        for part in qualname.split("."):
            matches = [
                child
                for child in getattr(node, "body", [])
                if isinstance(child, (ast.FunctionDef, ast.ClassDef)) and child.name == part
            ]
            assert len(matches) == 1, f"{module_name}.{qualname}: found {len(matches)} defs"
            node = matches[0]
        assert isinstance(node, (ast.FunctionDef, ast.ClassDef))
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        assert node.end_lineno is not None
        chunks.append(normalize("\n".join(module_lines[start - 1 : node.end_lineno])))
    return "\n\n".join(chunks)


def readme_paragraphs(package: str, *starts: str) -> str:
    """Return the paragraphs of a package's README that begin with ``starts``, in order.

    Paragraphs are separated by blank lines; each prefix must pick exactly one.
    """
    metadata = importlib.metadata.metadata(package)
    description = metadata["Description"] or metadata.get_payload()
    assert isinstance(description, str) and description, f"{package}: no description"
    paragraphs = [p.strip("\n") for p in re.split(r"\n[ \t]*\n", description)]
    picked = []
    for start in starts:
        matches = [p for p in paragraphs if p.startswith(start)]
        assert len(matches) == 1, f"{package}: {len(matches)} paragraphs start with {start!r}"
        picked.append(matches[0])
    return normalize("\n\n".join(picked))


# --- planting changes --------------------------------------------------------


def plant(text: str, old: str, new: str) -> str:
    """Replace ``old`` with ``new``; ``old`` must occur exactly once."""
    count = text.count(old)
    assert count == 1, f"expected 1 occurrence of {old!r}, found {count}"
    return text.replace(old, new)


def rename(text: str, old: str, new: str) -> str:
    """Replace the identifier ``old`` with ``new`` as a whole word everywhere."""
    assert len(re.findall(rf"\b{re.escape(old)}\b", text)) >= 2, f"{old!r} barely used"
    assert not re.search(rf"\b{re.escape(new)}\b", text), f"{new!r} already present"
    return re.sub(rf"\b{re.escape(old)}\b", new, text)


def is_transposition(word: str, typo: str) -> bool:
    """Tell whether ``typo`` is ``word`` with two adjacent letters swapped."""
    return any(
        word[:i] + word[i + 1] + word[i] + word[i + 2 :] == typo
        for i in range(len(word) - 1)
        if word[i] != word[i + 1]
    )


def plant_typos(text: str, typos: dict[str, str]) -> str:
    """Swap letters in each word; every word must occur exactly once as a whole word."""
    assert 2 <= len(typos) <= 4, "rewrite tasks carry 2-4 typos"
    for word, typo in typos.items():
        assert is_transposition(word, typo), f"{typo!r} is not a transposition of {word!r}"
        pattern = rf"\b{re.escape(word)}\b"
        count = len(re.findall(pattern, text))
        assert count == 1, f"expected 1 whole-word {word!r}, found {count}"
        text = re.sub(pattern, typo, text)
    return text


# --- the suite ---------------------------------------------------------------


def fix_task(task_id: str, original: str, bug: tuple[str, str], instruction: str) -> Task:
    """Make a ``fix`` task: plant ``bug = (old, new)`` in ``original``, expect ``original``."""
    old, new = bug
    return Task(task_id, "fix", instruction, plant(original, old, new), "python", original)


def fix_tasks() -> list[Task]:
    """Stdlib code with one planted bug each; the instruction names the symptom."""
    return [
        fix_task(
            "fix-bisect-offbyone",
            stdlib_source("bisect", "insort_right", "bisect_right"),
            bug=(
                "    if key is None:\n        while lo < hi:",
                "    if key is None:\n        while lo <= hi:",
            ),
            instruction="`bisect_right` hangs or raises IndexError when called without a `key`. "
            "Fix the off-by-one error in the loop condition.",
        ),
        fix_task(
            "fix-colorsys-operator",
            stdlib_source("colorsys", "rgb_to_hls", "hls_to_rgb", "_v"),
            bug=("rangec = (maxc-minc)", "rangec = (maxc+minc)"),
            instruction="`rgb_to_hls` returns the wrong hue and saturation when no RGB "
            "component is zero: `hls_to_rgb(*rgb_to_hls(0.8, 0.4, 0.2))` gives about "
            "(1.0, 0.2, 0.0). One arithmetic operator is wrong; fix it.",
        ),
        fix_task(
            "fix-heapq-swapped-args",
            stdlib_source("heapq", "heappush", "heappop", "_siftdown", "_siftup"),
            bug=("_siftdown(heap, 0, len(heap)-1)", "_siftdown(heap, len(heap)-1, 0)"),
            instruction="After `heappush`, `heap[0]` is often not the smallest item. "
            "It looks like two arguments in a call are swapped; fix it.",
        ),
        fix_task(
            "fix-posixpath-commonpath-var",
            stdlib_source("posixpath", "commonpath"),
            bug=("if c != s2[i]:", "if c != s1[i]:"),
            instruction="`commonpath(['/usr/lib', '/usr/local'])` returns '/usr/lib' instead "
            "of '/usr'. The loop that compares path components uses the wrong variable.",
        ),
        fix_task(
            "fix-shlex-quote-return",
            stdlib_source("shlex", "split", "join", "quote"),
            bug=(
                "    if _find_unsafe(s) is None:\n        return s\n",
                "    if _find_unsafe(s) is None:\n        s\n",
            ),
            instruction="`quote('abc')` returns \"'abc'\", but strings without unsafe "
            "characters should come back unchanged. A `return` seems to be missing.",
        ),
    ]


def rewrite_tasks() -> list[Task]:
    """README prose with 2-4 adjacent-letter swaps; ``expected`` is the original."""
    specs = [
        (
            "typo-rich-readme",
            readme_paragraphs(
                "rich",
                "Rich is a Python library",
                "The [Rich API]",
                "## Compatibility",
                "Rich works with Linux",
                "Rich works with [Jupyter",
                "## Rich REPL",
                "Rich can be installed in the Python REPL",
            ),
            {
                "beautiful": "beuatiful",
                "tracebacks": "tracebakcs",
                "configuration": "configuraiton",
            },
        ),
        (
            "typo-click-readme",
            readme_paragraphs(
                "click",
                "# Click",
                "Click is a Python package",
                "It aims to make",
                "Click in three points:",
                "-   Arbitrary nesting",
            ),
            {"composable": "compsoable", "frustration": "frustartion", "Automatic": "Autoamtic"},
        ),
        (
            "typo-jinja-readme",
            readme_paragraphs(
                "Jinja2",
                "# Jinja",
                "Jinja is a fast",
                "It includes:",
                "-   Template inheritance",
                "Jinja's philosophy",
            ),
            {
                "expressive": "epxressive",
                "inheritance": "inhertiance",
                "sandboxed": "sanbdoxed",
                "philosophy": "philsoophy",
            },
        ),
        (
            "typo-flask-readme",
            readme_paragraphs(
                "Flask",
                "# Flask",
                "Flask is a lightweight",
                "Flask offers suggestions",
                "[WSGI]: ",
            ),
            {"lightweight": "lihgtweight", "enforce": "enfroce", "extensions": "extnesions"},
        ),
    ]
    return [
        Task(task_id, "rewrite", TYPO_INSTRUCTION, plant_typos(prose, typos), "markdown", prose)
        for task_id, prose, typos in specs
    ]


def edit_tasks() -> list[Task]:
    """Small refactors; only the renames have a single ground truth."""
    relpath = stdlib_source("posixpath", "relpath")
    iglob = stdlib_source("glob", "_iglob")
    return [
        Task(
            "hints-textwrap-functions",
            "edit",
            "Add type hints to the function signatures.",
            stdlib_source("textwrap", "wrap", "fill", "shorten", "indent"),
            "python",
            None,
        ),
        Task(
            "rename-posixpath-relpath",
            "edit",
            "Rename the variable `rel_list` to `relative_parts`.",
            relpath,
            "python",
            rename(relpath, "rel_list", "relative_parts"),
        ),
        Task(
            "rename-glob-iglob",
            "edit",
            "Rename the variable `glob_in_dir` to `scan_in_dir`.",
            iglob,
            "python",
            rename(iglob, "glob_in_dir", "scan_in_dir"),
        ),
        Task(
            "docstring-string-vformat",
            "edit",
            "Add a docstring to `_vformat` that explains its parameters and what it returns.",
            stdlib_source("string", "Formatter._vformat"),
            "python",
            None,
        ),
        Task(
            "listcomp-fnmatch-filter",
            "edit",
            "Convert the for loops in `filter` to list comprehensions.",
            stdlib_source("fnmatch", "fnmatch", "filter", "fnmatchcase"),
            "python",
            None,
        ),
    ]


def check(task: Task) -> None:
    """Fail loudly on a malformed task."""
    assert re.fullmatch(r"[a-z0-9-]+", task.id), task.id
    for text in (task.input, task.expected):
        if text is not None:
            assert text.endswith("\n") and not text.endswith("\n\n"), task.id
            assert all(line == line.rstrip() for line in text.splitlines()), task.id
    bounds = CODE_LINES if task.language == "python" else PROSE_LINES
    n_lines = len(task.input.splitlines())
    assert n_lines in bounds, f"{task.id}: {n_lines} lines, want {bounds.start}-{bounds.stop - 1}"
    assert task.input != task.expected, f"{task.id}: nothing planted"
    if task.language == "python":
        ast.parse(task.input)  # planted bugs must still be valid Python


def build_tasks() -> list[Task]:
    """Build and check the whole suite, in file order."""
    tasks = fix_tasks() + rewrite_tasks() + edit_tasks()
    assert len({t.id for t in tasks}) == len(tasks), "duplicate task ids"
    for task in tasks:
        check(task)
    return tasks


def main() -> None:
    """Write the suite and print one summary line per task."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()

    tasks = build_tasks()
    lines = [json.dumps(asdict(task), ensure_ascii=False) + "\n" for task in tasks]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(lines), encoding="utf-8")
    for task in tasks:
        print(f"{task.id:32} {task.kind:8} {len(task.input.splitlines()):3} lines")
    print(f"wrote {len(tasks)} tasks to {args.output}")


if __name__ == "__main__":
    main()
