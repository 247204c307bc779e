"""A fix's function written afresh from its signature and docstring, its body left out: the
candidate drawn where the file's examples judge a fix (editing/examples.py), once the fixes of
the body have failed them.

Shown a planted bug, a small model keeps it or changes another line; shown the signature and
docstring alone, it writes the function about as often right as its published HumanEval figure
says (docs/quality.md, "Written from its docstring alone"). A function written anew drops what
its body did that the docstring does not say, so it is drawn only where the examples judge it,
after the fixes of the body failed them, and it is delivered only where it passes them and the
safety checks. Only the body is replaced: the signature, the docstring and every other line of
the file are kept, so the lines it drops are not counted against it (a body written anew is
often shorter) where it passes the examples (editing/selection.py).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace

from specedit.editing import stated
from specedit.editing.editor import UNSTEERED, EditRequest, Mode
from specedit.editing.region import parsed
from specedit.editing.snippets import indentation

TEMPLATE = "afresh"
# Room for the function's body beyond its shown head (the answer's limit is sized by the input,
# which here lacks the body): what a function of a hundred lines takes.
BODY_TOKENS = 1024
ASK = (
    "The body of `{name}` was left out of the code above. Write the code with `{name}` "
    "complete, so that it does what its docstring says. The user's report on the body that "
    "was there: {instruction}"
)
WORD = re.compile(r"[A-Za-z_]\w*")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Afresh:
    """The function to write afresh: its name, and the text shown to the model (the text up
    to the end of its docstring)."""

    name: str
    head: str

    def request(self, fix: EditRequest) -> EditRequest:
        """The request that writes the function, asked as `fix` was (model, method, language),
        with `fix`'s instruction as the user's report."""
        return replace(
            fix,
            text=self.head,
            instruction=ASK.format(name=self.name, instruction=fix.instruction.strip()),
            prompt=TEMPLATE,
            mode=Mode.EDIT,
            feedback="",
            surroundings=None,
            max_new_tokens=fix.max_new_tokens or len(self.head.encode()) // 2 + BODY_TOKENS,
            steering=UNSTEERED,
        )

    def put_in(self, text: str, answer: str, imports: bool = True) -> str | None:
        """`text` with the function's body the answer's (`graft`); `imports`: `text` is a
        whole file."""
        return graft(text, self.name, answer, imports)


def function_to_write(text: str, instruction: str) -> Afresh | None:
    """The top-level function of `text` (Python) that `instruction` names, where it names one
    with a docstring and a body after it; None otherwise."""
    tree = parsed(text)
    words = set(WORD.findall(instruction))
    named = [
        node
        for node in (tree.body if tree else ())
        if isinstance(node, FUNCTIONS) and node.name in words and _body_start(node)
    ]
    if len(named) != 1:
        return None
    end = named[0].body[0].end_lineno
    return Afresh(named[0].name, "\n".join(text.split("\n")[:end]) + "\n")


def graft(text: str, name: str, answer: str, imports: bool = True) -> str | None:
    """`text` with the body of its function `name` (the statements after its docstring)
    replaced by the body of the answer's function of that name, indented as the old one was,
    and, with `imports` (`text` is a whole file, not a region of one), the answer's imports of
    names `text` does not bind put after its own; None where the answer has no such function
    with a body of its own lines."""
    written_tree = parsed(answer)
    old, new = _function(parsed(text), name), _function(written_tree, name)
    if old is None or new is None:
        return None
    old_start, new_start = _body_start(old), _body_start(new)
    if not old_start or not new_start:
        return None
    lines, written = text.split("\n"), answer.split("\n")
    indent, written_indent = indentation(lines[old_start - 1]), indentation(written[new_start - 1])
    body = [
        indent + line.removeprefix(written_indent) if line.strip() else line
        for line in written[new_start - 1 : new.end_lineno]
    ]
    lines[old_start - 1 : old.end_lineno] = body
    grafted = "\n".join(lines)
    return _with_imports(grafted, answer, written_tree) if imports else grafted


def _function(tree: ast.Module | None, name: str) -> ast.FunctionDef | None:
    nodes = tree.body if tree else ()
    return next((n for n in nodes if isinstance(n, FUNCTIONS) and n.name == name), None)


def _body_start(function: ast.FunctionDef) -> int | None:
    """The line the function's body starts after its docstring; None where it has no
    docstring (nothing to write it from) or nothing after it."""
    first = function.body[0]
    if ast.get_docstring(function, clean=False) is None or len(function.body) < 2:
        return None
    return first.end_lineno + 1 if function.body[1].lineno > first.end_lineno else None


def _with_imports(text: str, answer: str, written: ast.Module) -> str:
    """`text` with the answer's top-level imports of names it does not bind (an import never
    stands in for what the file defines: a copy of a standard module importing the real one),
    after its own last import (where it has none, before its first statement other than its
    docstring); `written` is the answer parsed."""
    tree = parsed(text)
    if tree is None:
        return text
    bound = stated.bound_names(tree) | {n for node in tree.body for n in _imported(node)}
    missing = [
        ast.get_source_segment(answer, node)
        for node in written.body
        if (names := _imported(node)) and not names & bound
    ]
    if not missing:
        return text
    own = [node.end_lineno for node in tree.body if _imported(node)]
    documented = bool(tree.body) and ast.get_docstring(tree) is not None
    lines = text.split("\n")
    at = own[-1] if own else (tree.body[0].end_lineno if documented else 0)
    lines[at:at] = missing
    return "\n".join(lines)


def _imported(node: ast.stmt) -> set[str]:
    """The names an import statement binds (none for any other statement, nor for a future
    import, which only the top of a file may hold)."""
    future = isinstance(node, ast.ImportFrom) and node.module == "__future__"
    if future or not isinstance(node, ast.Import | ast.ImportFrom):
        return set()
    return {(alias.asname or alias.name).split(".")[0] for alias in node.names}
