"""`--lines A-B` (or `--lines NAME`): edit one region of a file.

The model sees the whole file, for context, but writes only the region, so a one-line fix in a
long file costs the file's prompt and the region's answer instead of an answer as long as the
file. A region can be named instead of numbered: a Python function or class (`parse`,
`Parser.parse`), its decorators included, found in the file's syntax tree. With `--context N`
it sees only N lines on each side, so the prompt is short too. The text outside the region is
never generated: it is kept byte for byte.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass

SPEC = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")
LONE_CR = re.compile(r"\r(?!\n)")
TEXT_LINE = re.compile(r"^.*\S.*$", re.MULTILINE)  # a line that is not blank
DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
# A name an instruction writes in backticks, as `name` or `Class.method` (what `--lines` takes).
NAME_IN_BACKTICKS = re.compile(r"`([^\W\d]\w*(?:\.[^\W\d]\w*)*)")

# What `ast.parse` raises for a text that is not Python it can read: a syntax error, a NUL
# byte (ValueError), nesting deeper than its parser's stack (RecursionError, MemoryError).
UNPARSABLE = (SyntaxError, ValueError, RecursionError, MemoryError)


def parsed(source: str) -> ast.Module | None:
    """Python `source`'s syntax tree; None where it does not parse."""
    try:
        return ast.parse(source)
    except UNPARSABLE:
        return None


def documented(tree: ast.AST) -> list[ast.AST]:
    """The nodes of `tree` whose body opens with a docstring: the module, classes, functions."""
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.Module, *DEFINITIONS))
        and ast.get_docstring(node, clean=False) is not None
    ]


@dataclass(frozen=True)
class Surroundings:
    """What lies around the region: shown to the model, put back around its answer."""

    before: str
    after: str
    first: int  # the region's first and last line numbers in the file (1-based, inclusive)
    last: int
    context: int | None = None  # lines shown on each side; None: the whole file
    head: str = ""  # where the region is a function's body: its head, which `before` ends with

    def shown(self) -> tuple[str, str]:
        """The text before and after the region that the model is shown."""
        if self.context is None:
            return self.before, self.after
        before, after = _lines(self.before), _lines(self.after)
        return "".join(before[len(before) - self._before_shown() :]), "".join(after[: self.context])

    def _before_shown(self) -> int:
        """How many lines before the region are shown: `context`, and the whole head where the
        region is a function's body (its signature is part of what the body means)."""
        return min(max(self.context, self.head.count("\n")), self.first - 1)

    def shown_lines(self) -> tuple[int, int] | None:
        """The first and last line numbers of what the model is shown (region included), when
        that is not the whole file."""
        if self.context is None:
            return None
        after = len(_lines(self.after))
        return self.first - self._before_shown(), self.last + min(self.context, after)

    def around(self, region: str) -> str:
        """The whole file with `region` in its place. Where the region is a function's body
        (`head`) and the answer opens with the function's first line, the answer is the whole
        function, its head written again as it was or changed (a fix that needs the
        signature), and it takes the head's place too; one that opens with the head's last
        lines as they are (its docstring) has them once."""
        if not self.head:
            return self.before + region + self.after
        if _opening(region) == _opening(self.head):
            return self.before[: len(self.before) - len(self.head)] + region + self.after
        lines, head = _lines(region), _lines(self.head)
        again = next((k for k in range(len(head), 0, -1) if lines[:k] == head[-k:]), 0)
        return self.before + "".join(lines[again:]) + self.after

    def landmark(self) -> list[str]:
        """The first two non-blank lines after the region: an answer that writes them has gone
        past the region (a model shown the whole file tends to go on copying it)."""
        return [line for line in self.after.split("\n") if line.strip()][:2]

    def overrun(self, answer: str) -> int | None:
        """Where in `answer` the text after the region begins, if the answer wrote it: the
        landmark's first line, less the blank lines that open the text after the region."""
        landmark = self.landmark()
        if len(landmark) < 2:
            return None
        lines = answer.split("\n")
        starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
        written = [(i, line) for i, line in enumerate(lines[:-1]) if line.strip()]  # complete
        for (i, first), (_, second) in itertools.pairwise(written):
            if [first, second] == landmark:
                blank = len(self.after) - len(self.after.lstrip("\n"))
                while blank and i and not lines[i - 1].strip():
                    i, blank = i - 1, blank - 1
                return starts[i]
        return None


@dataclass(frozen=True)
class Region:
    """Lines `first` to `last` of a file, 1-based and inclusive, or the lines of a named Python
    function or class (`symbol`), found when the file is cut."""

    first: int = 0
    last: int = 0
    context: int | None = None  # lines the model sees on each side; None: the whole file
    symbol: str | None = None
    head: int | None = None  # a function's body: the first line of its head (Surroundings.head)

    def __post_init__(self) -> None:
        if self.symbol is None and not 1 <= self.first <= self.last:
            raise ValueError(f"--lines {self}: lines count from 1 and A must not exceed B")

    @classmethod
    def parse(cls, spec: str) -> Region:
        """`A-B`, `A` (one line) or a name; raises ValueError with a message for the user."""
        name = spec.strip()
        if all(part.isidentifier() for part in name.split(".")):
            return cls(symbol=name)
        match = SPEC.fullmatch(spec)
        if not match:
            raise ValueError(
                "--lines takes A-B (line numbers, e.g. 120-140) or the name of a Python function "
                f"or class (e.g. parse or Parser.parse), not {spec!r}"
            )
        return cls(int(match[1]), int(match[2] or match[1]))

    def cut(self, text: str) -> tuple[str, Surroundings]:
        """The region's text and what surrounds it; ValueError when the file is shorter, or
        has no single definition of the name.

        Lines end at "\\n" only (not at the other characters `str.splitlines` breaks on, such
        as a form feed), so that the pieces join back into exactly `text`.
        """
        first, last = (self.first, self.last) if self.symbol is None else self.span(text)
        lines = _lines(text)
        if last > len(lines):
            raise ValueError(f"--lines {self}: the file has {len(lines)} lines")
        before = "".join(lines[: first - 1])
        after = "".join(lines[last:])
        head = "".join(lines[self.head - 1 : first - 1]) if self.head else ""
        return "".join(lines[first - 1 : last]), Surroundings(
            before, after, first, last, self.context, head
        )

    def span(self, text: str) -> tuple[int, int]:
        """The first and last lines of the definition named `symbol` in `text` (`within`)."""
        try:
            tree = parse_lines(text)
        except ValueError as exc:
            raise ValueError(f"--lines {self}: {exc}; give line numbers instead") from None
        found = self.within(tree)
        return first_line(found), found.end_lineno

    def within(self, tree: ast.Module) -> ast.AST:
        """The function or class named `symbol` in a parsed file (`parse_lines`): each dotted
        part is a definition inside the one before (a method, a nested function), the least
        nested one where several have the name (`wrap` is the module's function, not a
        method); ValueError, with a message for the user, where there is none or several."""
        scope: ast.AST = tree
        for part in self.symbol.split("."):
            named = [(depth, node) for depth, node in _definitions(scope) if node.name == part]
            if not named:
                raise ValueError(f"--lines {self}: the file defines no function or class {part!r}")
            shallowest = min(depth for depth, _ in named)
            found = [node for depth, node in named if depth == shallowest]
            if len(found) > 1:
                where = ", ".join(str(node.lineno) for node in found)
                raise ValueError(
                    f"--lines {self}: {part!r} is defined {len(found)} times (lines {where}); "
                    "give line numbers, or a dotted name (Class.method) where they differ in what "
                    "encloses them"
                )
            scope = found[0]
        return scope

    def __str__(self) -> str:
        return self.symbol or f"{self.first}-{self.last}"


def _opening(text: str) -> str:
    """The first line of `text` that is not blank, up to its first parenthesis (a signature
    changed after its name still opens the same function), trailing spaces left out."""
    found = TEXT_LINE.search(text)
    return found.group().split("(", 1)[0].rstrip() if found else ""


def parse_lines(text: str) -> ast.Module:
    """`text` parsed as Python whose line numbers are those `Region` cuts by; ValueError (a
    reason for the user) where it does not parse, or ends lines with a lone CR (a line break
    to Python, not to `_lines`: the numbers would differ)."""
    if LONE_CR.search(text):
        raise ValueError("the file ends lines with a lone CR")
    try:  # a BOM is no character of the source, and moves no line
        return ast.parse(text.removeprefix("\ufeff"))
    except UNPARSABLE as exc:
        where = f"line {exc.lineno}: {exc.msg}" if isinstance(exc, SyntaxError) else str(exc)
        raise ValueError(
            f"a name is looked up in Python source, and this file does not parse as Python "
            f"({where})"
        ) from None


def first_line(statement: ast.AST) -> int:
    """A statement's first line: a function's or class's first decorator's, where it has any."""
    return min([statement.lineno] + [d.lineno for d in getattr(statement, "decorator_list", ())])


def named_lines(instruction: str, text: str) -> set[int]:
    """The lines (1-based) of the Python functions and classes that `instruction` names in
    backticks and `text` defines: where a user who describes a symptom says it shows."""
    lines: set[int] = set()
    for name in NAME_IN_BACKTICKS.findall(instruction):
        try:
            first, last = Region(symbol=name).span(text)
        except ValueError:  # not defined here (a value, a parameter), or not Python
            continue
        lines.update(range(first, last + 1))
    return lines


def _definitions(node: ast.AST, depth: int = 0) -> Iterator[tuple[int, ast.AST]]:
    """The functions and classes inside `node`, each with how many others enclose it. Only
    statements hold definitions, so expressions (however deeply nested) are not walked."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, DEFINITIONS):
            yield depth, child
            yield from _definitions(child, depth + 1)
        elif isinstance(child, ast.stmt | ast.excepthandler | ast.match_case):
            yield from _definitions(child, depth)


def _lines(text: str) -> list[str]:
    """`text`'s lines with their "\\n" (the last one may have none); they join back to `text`."""
    lines = text.split("\n")
    return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
