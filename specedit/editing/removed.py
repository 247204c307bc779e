"""Definitions an edit's answer removed that its instruction leaves alone.

A small model asked to add a method sometimes writes it over the method beside it (`stats()`
where `keys()` was, `cost` handled where `tokens()` was). That breaks no syntax, names nothing
undefined and drops too few lines for the safety checks, yet it loses the user's code without a
word; it shows in the instruction and the two texts alone: a function, class or method of the
input whose name the answer binds nowhere, where the instruction neither names it as code nor
asks to remove, rename, move, merge, split, convert or extract anything. Such an answer is a
candidate's problem (editing/verdicts.py), redrawn from its branch points, and warned about
where delivered.
"""

from __future__ import annotations

import ast

from specedit.editing.localize import code_names, without_code
from specedit.editing.region import parsed
from specedit.editing.safety import RESHAPING_WORDS, asks_for_removal


def removed_definitions(original: str, answer: str, instruction: str) -> list[str]:
    """The input's top-level functions and classes and its classes' methods (as
    `Class.method`; special methods aside, which a decorator or a base class may provide) whose
    name `answer` binds nowhere (a definition at any depth, an assignment, an import), each
    unless the instruction names it (`mentions`); [] where the instruction asks for something
    that may remove one, or either text does not parse."""
    words = without_code(instruction)
    if asks_for_removal(words) or RESHAPING_WORDS.search(words):
        return []
    before, after = parsed(original), parsed(answer)
    if before is None or after is None:
        return []
    kept = _bound(after) | _named(instruction)
    return [
        qualified
        for qualified in dict.fromkeys(_definitions(before))  # a definition written twice: once
        if qualified.rpartition(".")[2] not in kept
    ]


def mentions(instruction: str, name: str) -> bool:
    """Whether the instruction names the definition `name` as code (`code_names`: in
    backticks, as a call or an attribute, a snake_case or camelCase name), alone or as the
    last part of a dotted name. "a dict with the keys" does not name `keys()`."""
    return name in _named(instruction)


def _named(instruction: str) -> set[str]:
    """The names the instruction writes as code, each dotted one by its last part."""
    return {written.rpartition(".")[2] for written in code_names(instruction)}


def _definitions(tree: ast.Module) -> list[str]:
    """The module's own functions and classes, and its classes' methods but the special ones
    (`__init__`, `__eq__`: a dataclass or a base class writes those), qualified."""
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
                and not (item.name.startswith("__") and item.name.endswith("__"))
            )
    return found


def _bound(tree: ast.Module) -> set[str]:
    """Every name `tree` binds anywhere: functions and classes, assignments (a class field,
    `helper = lambda ...`, `self.width = ...`) and imports."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Name | ast.Attribute) and isinstance(node.ctx, ast.Store):
            bound.add(node.id if isinstance(node, ast.Name) else node.attr)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).partition(".")[0])
    return bound


def problem(gone: list[str]) -> str:
    """The definitions an answer removed (`removed_definitions`), as a candidate's problem."""
    names = ", ".join(f"`{name}`" for name in gone)
    return f"it removes {names}, which the instruction does not ask to remove"
