"""Names an answer uses that nothing defines: pyflakes' findings on Python, the input's own
set aside.

A small model that changes one function often breaks another part of the file without breaking
its syntax: it calls a helper it never wrote, uses `Dict` with no import, renames a variable in
one place only, or removes an import it still uses. Python finds these only when the line runs
(a NameError in the user's hands); pyflakes finds them by reading the code, without running
anything, in milliseconds. A finding the input had too (a name a framework injects, a fragment
of a larger program) is the user's business, not the edit's, and is set aside: only what the
answer brought in counts.
"""

from __future__ import annotations

import ast
import functools
import warnings
from dataclasses import dataclass

from pyflakes import checker, messages

# The findings that are errors when the line runs. Unused imports or variables, redefinitions
# and the like are style: an answer with one may well be right.
UNDEFINED = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)


@dataclass(frozen=True)
class Finding:
    """A name used at `line` (1-based) that nothing defines there."""

    name: str
    line: int
    message: str

    def problem(self, source: str) -> str:
        """The finding as a candidate's problem: the name, its line number and the line."""
        text = source.splitlines()[self.line - 1].strip() if self.line else ""
        return f"it uses {self.name!r}, which nothing defines (line {self.line}: {text[:80]})"


def findings(source: str) -> list[Finding]:
    """pyflakes' UNDEFINED findings in Python `source`, in line order; none where it does not
    parse (the syntax check reports that)."""
    with warnings.catch_warnings():  # invalid escapes and the like are not our business
        warnings.simplefilter("ignore")
        try:
            tree = ast.parse(source.removeprefix("\ufeff"))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return []
        try:
            found = checker.Checker(tree, filename="<edit>").messages
        except RecursionError:
            return []
    return sorted(
        (
            Finding(message.message_args[0], message.lineno, message.message % message.message_args)
            for message in found
            if isinstance(message, UNDEFINED)
        ),
        key=lambda finding: finding.line,
    )


def new_findings(original: str, edited: str) -> list[Finding]:
    """`edited`'s findings of names `original` did not use undefined anywhere (one it did is
    its own business wherever the answer uses it: a line it edited keeps the name)."""
    known = _undefined_names(original)
    return [finding for finding in findings(edited) if finding.name not in known]


@functools.lru_cache(maxsize=4)
def _undefined_names(original: str) -> frozenset[str]:
    """The names `original` uses undefined, read once for all of an edit's candidates."""
    return frozenset(finding.name for finding in findings(original))


def first_new(original: str, edited: str) -> Finding | None:
    """The first name Python `edited` uses that nothing defines and `original` did not use
    so; None where there is none."""
    new = new_findings(original, edited)
    return new[0] if new else None
