"""Definitions an edit's answer removed that its instruction leaves alone.

A small model asked to add a method sometimes writes it over the method beside it (`stats()`
where `keys()` was, `cost` handled where `tokens()` was). That breaks no syntax, names nothing
undefined and drops too few lines for the safety checks, yet it loses the user's code without a
word; it shows in the instruction and the two texts alone: a function, class or method of the
input that the answer defines nowhere, where the instruction neither names it as code nor asks
to remove, rename, move, merge or extract anything. Such an answer is a candidate's problem
(editing/verdicts.py), redrawn from its branch points, and warned about where delivered.
"""

from __future__ import annotations

import ast
import re

from specedit.editing.region import parsed
from specedit.editing.safety import asks_for_removal

# Instructions under which a definition may rightly go, besides those that ask for less text
# (`asks_for_removal`): it is renamed, moved, merged, inlined or the code reorganised.
RESHAPING_WORDS = re.compile(
    r"\b(?:renam\w*|replac\w*|merg\w*|mov(?:e|es|ed|ing)|inlin\w*|combin\w*|consolidat\w*"
    r"|rewrit\w*|refactor\w*|restructur\w*|reorganiz\w*|reorganis\w*|unif\w*|extract\w*)\b",
    re.IGNORECASE,
)
REMOVES = "it removes"


def removed_definitions(original: str, answer: str, instruction: str) -> list[str]:
    """The input's top-level functions and classes and its classes' methods (as
    `Class.method`) that `answer` defines nowhere, at any depth, under the same name, where the
    instruction names none of them (`mentions`) and asks for nothing that may remove one; []
    where either text does not parse."""
    if asks_for_removal(instruction) or RESHAPING_WORDS.search(instruction):
        return []
    before, after = parsed(original), parsed(answer)
    if before is None or after is None:
        return []
    defined = {
        node.name
        for node in ast.walk(after)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    }
    gone = []
    for qualified in _definitions(before):
        name = qualified.rpartition(".")[2]
        if name not in defined and not mentions(instruction, name):
            gone.append(qualified)
    return gone


def mentions(instruction: str, name: str) -> bool:
    """Whether the instruction names the definition `name` as code: inside backticks, as a
    call or an attribute (`name(`, `.name`), or anywhere where the name cannot be an English
    word (`_` or a capital inside it, a digit). "a dict with the keys" does not name `keys()`."""
    spans = " ".join(re.findall(r"`([^`]*)`", instruction))
    if re.search(rf"(?<!\w){re.escape(name)}\b", spans):
        return True
    if re.search(rf"\.{re.escape(name)}\b|\b{re.escape(name)}\(", instruction):
        return True
    codelike = "_" in name or any(c.isdigit() for c in name) or not name[1:].islower()
    return codelike and re.search(rf"(?<![\w.]){re.escape(name)}\b", instruction) is not None


def _definitions(tree: ast.Module) -> list[str]:
    """The module's own functions and classes, and its classes' methods, qualified."""
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found.append(node.name)
        elif isinstance(node, ast.ClassDef):
            found.append(node.name)
            found.extend(
                f"{node.name}.{item.name}"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            )
    return found


def problem(gone: list[str]) -> str:
    """The definitions an answer removed (`removed_definitions`), as a candidate's problem."""
    names = ", ".join(f"`{name}`" for name in gone)
    return f"{REMOVES} {names}, which the instruction does not ask to remove"


def is_removal(problem: str | None) -> bool:
    """Whether a candidate's `problem` is one `problem` wrote."""
    return problem is not None and problem.startswith(REMOVES)
