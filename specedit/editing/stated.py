"""The examples an instruction states: a call and the value it should give, as a bug report
writes them ("`median([1, 3, 5, 7])` gives 5.0, not 4.0", "`dirname('/usr')` returns ''
instead of '/'", "`f(2)` should be 4"). With `--examples` they are run on each candidate
beside the file's own `>>>` examples (editing/examples.py).

Only what leaves no doubt is read: the call in backticks (or a bare `name(...)`), then in the
same clause "instead of", ", not", or "should/must be/return/give", then a Python literal (a
value in words, "purple (0.5, 0.0, 1.0)", is not one). Run as a module, this file is the
check: `python -m specedit.editing.stated FILE CASES` runs FILE's code (not its `__main__`
block) and says which call gave what.
"""

from __future__ import annotations

import ast
import json
import math
import re
import runpy
import sys
from dataclasses import dataclass
from pathlib import Path

CALL = re.compile(r"`([^`\n]+\))`|(?<![\w.`])([^\W\d][\w.]*\()")
WANTED = re.compile(
    r"\s+instead\s+of\s+|,\s*not\s+|\s+(?:should|must)\s+(?:be|return|give)\s+", re.IGNORECASE
)
# Where a value may end: the text's end, or a space or a clause's punctuation after it.
VALUE_END = re.compile(r"\s|[.,;:!?](?:\s|$)|$")
VALUE_CHARS = 400  # the longest value read: each shorter start is parsed in turn


@dataclass(frozen=True)
class Stated:
    call: str  # Python source of the call
    want: str  # the value it should give, as the literal's source

    @property
    def root(self) -> str:
        """The name the call starts from (`Parser` in `Parser().parse(x)`)."""
        return re.split(r"[^\w]", self.call, maxsplit=1)[0]


def top_level_names(text: str) -> set[str]:
    """The names a Python file binds at its top level (definitions, imports, assignments)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return set()
    names = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _closing(text: str, start: int) -> int | None:
    """The index after the parenthesis that closes the one before `start`."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i + 1
    return None


def _literal(text: str) -> str | None:
    """The longest start of `text` (up to VALUE_CHARS) that is a Python literal and ends where
    a value may end."""
    for end in range(min(len(text), VALUE_CHARS), 0, -1):
        piece = text[:end].strip()
        if not piece or piece.endswith(",") or not VALUE_END.match(text, end):
            continue
        try:
            ast.literal_eval(piece)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        return piece
    return None


def stated_examples(instruction: str) -> list[Stated]:
    """The calls `instruction` gives with the value each should give."""
    found, position = [], 0
    while match := CALL.search(instruction, position):
        if match[1] is not None:
            call, end = match[1], match.end()
        else:
            end = _closing(instruction, match.end())
            if end is None:
                break
            call = instruction[match.start() : end]
        position = end
        following = CALL.search(instruction, end)
        clause = instruction[end : following.start() if following else len(instruction)]
        wanted = WANTED.search(clause)
        value = _literal(clause[wanted.end() :]) if wanted else None
        if value is not None and _is_call(call):
            found.append(Stated(call, value))
    return found


def _is_call(source: str) -> bool:
    try:
        return isinstance(ast.parse(source, mode="eval").body, ast.Call)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return False


def same(got: object, want: object) -> bool:
    """Equal, floats within rounding (a report writes 4.0 for 3.9999999999999996)."""
    if isinstance(got, float) and isinstance(want, int | float) and not isinstance(want, bool):
        return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(got, list | tuple) and isinstance(want, list | tuple):
        return (
            type(got) is type(want)
            and len(got) == len(want)
            and all(same(g, w) for g, w in zip(got, want, strict=True))
        )
    return got == want


def encode(cases: list[Stated]) -> str:
    """The cases as the check's command line takes them: JSON, its braces escaped so that no
    `{file}` in an instruction reads as the command's placeholder."""
    return json.dumps([[case.call, case.want] for case in cases]).replace("{", "\\u007b")


def main(path: str, cases: str) -> int:
    """Run the file at `path` (its folder importable, as doctest has it), then each call in
    its namespace; 1 if any gave another value."""
    sys.path.insert(0, str(Path(path).resolve().parent))
    namespace = runpy.run_path(path)
    failed = 0
    for call, want in json.loads(cases):
        expected = ast.literal_eval(want)
        try:
            got = eval(call, namespace)  # the user's own instruction, under --examples
        except Exception as exc:  # what it raised is the report
            print(f"{call} raised {type(exc).__name__}: {exc}; the instruction says {want}")
            failed += 1
            continue
        if not same(got, expected):
            print(f"{call} returned {got!r}; the instruction says {want}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
