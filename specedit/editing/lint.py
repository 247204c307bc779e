"""What an answer writes that cannot work when its line runs, found by reading it: names
nothing defines (pyflakes), calls whose arguments their definition does not take, attributes
their class or module does not have and variables read where no assignment may have run
(pylint); the input's own set aside.

A small model that changes one function often breaks another part of the file without breaking
its syntax: it calls a helper it never wrote, uses `Dict` with no import, renames a variable or
a method in one place only, removes an import it still uses, or gives a function a parameter
its callers do not pass, or assigns a variable in one branch only and reads it after. Python
finds these only when the line runs (a NameError, TypeError, AttributeError or
UnboundLocalError in the user's hands); pyflakes and pylint find them by reading the code, without
running anything. pyflakes reads names alone, in milliseconds; pylint infers what a call or an
attribute refers to (tens of milliseconds a file, a second or two for a long file's first
read), so it reads only an answer pyflakes found nothing in. A finding the input had too (a
name a framework injects, a fragment of a larger program, an attribute set where inference
cannot see) is the user's business, not the edit's, and is set aside: only what the answer
brought in counts.

Most of pylint's time on a long file goes to inferring what every call in it refers to, which
builds each module the file imports (a second or two for a thousand lines that import
`decimal` and `collections`). Where an answer changed the bodies of some top-level functions
and nothing else, not even their parameters, pylint reads it without what cannot bring in a
finding (`set_aside`): the bodies of functions the changed ones do not reach by any name, that
use no changed function (nor what uses one), and that assign nothing others read, and the
other top-level statements of which the same holds (a module-level `namedtuple(...)` call
builds `collections`). The input's own findings are still read from the whole input, once,
and only where the answer has some.

pylint reads no configuration and loads no plugin (its linter is built with two checkers
and nothing else): a cloned project's `pylintrc` or `pyproject.toml` may name code to run
(`init-hook`, `load-plugins`), and reading an answer is not asking for that.
"""

from __future__ import annotations

import ast
import functools
import re
import tempfile
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pyflakes import checker, messages

from specedit.editing.region import UNPARSABLE, first_line

if TYPE_CHECKING:
    from pylint.message import Message

# pyflakes' findings that are errors when the line runs. Unused imports or variables,
# redefinitions and the like are style: an answer with one may well be right.
UNDEFINED = (messages.UndefinedName, messages.UndefinedLocal, messages.UndefinedExport)

# What a finding is about: a name nothing defines, a call or an attribute that cannot run, a
# variable read before an assignment.
Kind = Literal["undefined", "call", "member", "unbound"]

# pylint's findings that are errors when the line runs and that pyflakes cannot see: a call its
# definition does not take (a TypeError), an attribute its class or module does not have (an
# AttributeError), a local read where no assignment to it may have run, as after an `if` that
# alone assigns it (an UnboundLocalError). As Finding kinds.
PYLINT_KINDS: dict[str, Kind] = {
    "no-value-for-parameter": "call",
    "too-many-function-args": "call",
    "unexpected-keyword-arg": "call",
    "redundant-keyword-arg": "call",
    "no-member": "member",
    "used-before-assignment": "unbound",
    "possibly-used-before-assignment": "unbound",
}


@dataclass(frozen=True)
class Finding:
    """What an answer writes at `line` (1-based) that cannot work there: `kind` "undefined"
    (`name` is a name nothing defines), "call" or "member" (`name` is the call or attribute as
    written), "unbound" (`name` is the variable read), and the checker's `message`."""

    name: str
    line: int
    message: str
    kind: Kind = "undefined"

    def problem(self, source: str) -> str:
        """The finding as a candidate's problem: what it is, its line number and the line."""
        text = python_lines(source)[self.line - 1].strip() if self.line else ""
        where = f"line {self.line}: {text[:80]}"
        if self.kind == "undefined":
            return f"it uses {self.name!r}, which nothing defines ({where})"
        if self.kind == "unbound":
            return f"it reads {self.name!r} where it may not be assigned: {self.message} ({where})"
        return f"it writes {self.name!r}, which cannot run: {self.message} ({where})"

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes it the same finding in the input, wherever its line is: an undefined
        name is the input's own wherever the answer uses it (a line it edited keeps it)."""
        if self.kind == "undefined":
            return self.kind, self.name, ""
        return self.kind, self.name, self.message


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


def inferred_findings(source: str) -> list[Finding]:
    """pylint's PYLINT_KINDS findings in Python `source`, in line order: calls and attributes
    that inference says cannot work, variables read before an assignment. The file is read
    from a private temporary folder, so that no module beside the user's file is resolved (an
    unknown import infers nothing, and finds nothing). The linter is built here with the two
    checkers that find those and no configuration: building pylint's whole command line
    (every checker, its options, a configuration file to look for) costs more than reading
    most answers."""
    from pylint.checkers import typecheck, variables  # imported where needed: most runs
    from pylint.lint import PyLinter  # never read an answer
    from pylint.reporters import CollectingReporter

    source = source.removeprefix("\ufeff")
    reporter = CollectingReporter()
    linter = PyLinter(reporter=reporter)
    typecheck.register(linter)
    variables.register(linter)
    linter.disable("all")
    for symbol in PYLINT_KINDS:
        linter.enable(symbol)
    with tempfile.TemporaryDirectory(prefix="specedit-lint-") as folder:
        path = Path(folder) / "edited.py"
        path.write_text(source, encoding="utf-8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                linter.check([str(path)])
            except (RecursionError, MemoryError):
                return []
    lines = python_lines(source)
    found = [
        Finding(_written(lines, message), message.line, message.msg, PYLINT_KINDS[message.symbol])
        for message in reporter.messages
        if message.symbol in PYLINT_KINDS and 0 < message.line <= len(lines)
    ]
    return sorted(found, key=lambda finding: finding.line)


def _written(lines: list[str], message: Message) -> str:
    """The call or attribute a pylint `message` is about, as its first line writes it (its
    columns count UTF-8 bytes, as Python's own do)."""
    line = lines[message.line - 1]
    end = message.end_column if message.end_line == message.line else None
    written = line.encode()[message.column : end].decode(errors="ignore").strip()
    return written or line.strip()


def new_findings(original: str, edited: str) -> list[Finding]:
    """`edited`'s findings that `original` did not have (`Finding.key`): pyflakes' first, and
    pylint's only where pyflakes found none new, the answer read without the bodies that
    cannot bring in a finding (`set_aside`). The input is read, whole, by a checker only where
    the answer has findings of it."""
    for read in (findings, inferred_findings):
        found = read(edited if read is findings else set_aside(original, edited))
        if found and (new := [f for f in found if f.key not in _keys(original, read)]):
            return new
    return []


def set_aside(original: str, edited: str) -> str:
    """Python `edited` with the bodies of the top-level functions that cannot bring in a
    finding set aside (each a `raise NotImplementedError` on its first line, blank lines for
    the rest, so that every other line keeps its number) and the other top-level statements
    that cannot either read as blank lines (where `_can_leave_out`), where all that differs
    from `original` is the code of top-level functions that keep their names, parameters,
    decorators and return annotations. A statement is read where the changed functions'
    findings may be inferred through it (what they use, directly or through classes, module
    statements and other functions), where its own may differ (it uses a changed function,
    or what uses one), where it assigns what others read (an attribute, a global: pylint
    finds a member or a name wherever it is assigned), and where a statement read shares its
    line or reads what it binds. `edited` as it is otherwise (an import,
    a class, a signature changed; a text that does not parse)."""
    try:
        old, new = (
            ast.parse(original.removeprefix("\ufeff")),
            ast.parse(edited.removeprefix("\ufeff")),
        )
    except UNPARSABLE:
        return edited
    if len(old.body) != len(new.body):
        return edited
    changed: set[int] = set()
    for index, (before, after) in enumerate(zip(old.body, new.body, strict=True)):
        if ast.dump(before) == ast.dump(after):
            continue
        if not (isinstance(before, FUNCTIONS) and isinstance(after, FUNCTIONS)):
            return edited
        if _signature(before) != _signature(after):
            return edited
        changed.add(index)
    statements = [_Statement.of(node) for node in new.body]
    # a statement that cannot be left out is read, and so is what it reads
    kept = {i for i in range(len(new.body)) if not _can_leave_out(new.body, i)}
    read = _reached(statements, _depending(statements, changed) | kept)
    lines = LINE.findall(edited)
    unread = [node for i, node in enumerate(new.body) if i not in read]
    aside = [node for node in unread if isinstance(node, FUNCTIONS) and _body_alone(lines, node)]
    left_out = [node for node in unread if not isinstance(node, FUNCTIONS)]
    if not (aside or left_out):
        return edited
    stubbed = _stubbed(lines, aside, left_out)
    try:  # a body this cannot cut cleanly is read as it is
        ast.parse(stubbed.removeprefix("\ufeff"))
    except UNPARSABLE:
        return edited
    return stubbed


FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
# A line as Python numbers them: ended by \r\n, \r or \n (not by a form feed, as for
# `str.splitlines`), the last one perhaps by nothing.
LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")


def python_lines(source: str) -> list[str]:
    """`source`'s lines as Python and pylint number them, without their ends."""
    return [line.rstrip("\r\n") for line in LINE.findall(source)]


@dataclass(frozen=True)
class _Statement:
    """A top-level statement: the module-level names it binds and those it may read. A name
    whose attribute it assigns (`Config.debug = ...`), or that it declares global, counts as
    one it binds: pylint finds a member or a global wherever it is assigned."""

    binds: frozenset[str]
    reads: frozenset[str]

    @classmethod
    def of(cls, node: ast.stmt) -> _Statement:
        if not isinstance(node, FUNCTIONS):  # every name it stores, and more, is safe here
            stored = {name for n in ast.walk(node) for name in _stores(n)}
            return cls(frozenset(stored | _bound([node]) | _assigned(node)), _loaded([node]))
        arguments = node.args
        parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
        parameters += [a for a in (arguments.vararg, arguments.kwarg) if a]
        local = ({a.arg for a in parameters} | _bound(node.body)) - _declared_global(node)
        outside = [*node.decorator_list, *arguments.defaults, *arguments.kw_defaults]
        outside += [a.annotation for a in parameters] + [node.returns]
        reads = (_loaded(node.body) - local) | _loaded([n for n in outside if n])
        return cls(frozenset({node.name} | _assigned(node)), frozenset(reads))


def _stores(node: ast.AST) -> list[str]:
    """The names `node` itself stores: an assigned name, an `except ... as` name, a pattern's
    capture."""
    if isinstance(node, ast.Name):
        return [] if isinstance(node.ctx, ast.Load) else [node.id]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [node.name] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [node.rest] if node.rest else []
    return []


def _loaded(nodes: list[ast.AST]) -> frozenset[str]:
    """The names read anywhere in `nodes`."""
    return frozenset(
        n.id
        for node in nodes
        for n in ast.walk(node)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    )


def _assigned(node: ast.AST) -> set[str]:
    """The names `node` assigns an attribute of (the first name of `a.b.c = ...`) or declares
    global."""
    names = _declared_global(node)
    for target in ast.walk(node):
        if isinstance(target, ast.Attribute) and not isinstance(target.ctx, ast.Load):
            while isinstance(target, (ast.Attribute, ast.Subscript)):
                target = target.value
            if isinstance(target, ast.Name):
                names.add(target.id)
    return names


# Where names are a scope's own: functions, classes, lambdas and comprehensions.
SCOPES = (
    *FUNCTIONS,
    ast.ClassDef,
    ast.Lambda,
    ast.ListComp,
    ast.SetComp,
    ast.DictComp,
    ast.GeneratorExp,
)


def _bound(body: list[ast.stmt]) -> set[str]:
    """The names `body`'s statements bind in their own scope: assigned, imported, or defined
    (not the names inside a nested function, class, lambda or comprehension)."""
    names: set[str] = set()
    reading: list[ast.AST] = list(body)
    while reading:
        node = reading.pop()
        if isinstance(node, SCOPES):
            if isinstance(node, (*FUNCTIONS, ast.ClassDef)):
                names.add(node.name)
            continue
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
        reading += ast.iter_child_nodes(node)
    return names


def _declared_global(node: ast.AST) -> set[str]:
    """The names `node` (or a function inside it) declares global: not a function's locals."""
    return {name for n in ast.walk(node) if isinstance(n, ast.Global) for name in n.names}


def _depending(statements: list[_Statement], changed: set[int]) -> set[int]:
    """The `changed` statements, those that read what these bind, those that read what those
    bind, and so on."""
    found, names = set(changed), set().union(*(statements[i].binds for i in changed))
    while True:
        more = {i for i, s in enumerate(statements) if i not in found and s.reads & names}
        if not more:
            return found
        found |= more
        names |= set().union(*(statements[i].binds for i in more))


def _reached(statements: list[_Statement], start: set[int]) -> set[int]:
    """`start` and the statements that bind what they read, and so on."""
    binders: dict[str, list[int]] = {}
    for i, statement in enumerate(statements):
        for name in statement.binds:
            binders.setdefault(name, []).append(i)
    found, reading = set(start), list(start)
    while reading:
        for name in statements[reading.pop()].reads:
            for i in binders.get(name, ()):
                if i not in found:
                    found.add(i)
                    reading.append(i)
    return found


def _signature(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """What a caller sees of a function: its kind, name, parameters, decorators and return
    annotation."""
    return (
        type(function).__name__,
        function.name,
        ast.dump(function.args),
        *(ast.dump(decorator) for decorator in function.decorator_list),
        ast.dump(function.returns) if function.returns else "",
    )


def _body_alone(lines: list[str], function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether `function`'s body starts a line of its own (not its signature's: `def f(): ...`),
    so that its lines can be set aside."""
    first = function.body[0]
    line = lines[first_line(first) - 1]
    return len(line.encode()) - len(line.lstrip().encode()) == first.col_offset


def _can_leave_out(body: list[ast.stmt], index: int) -> bool:
    """Whether top-level statement `index` of `body` may be read as blank lines where nothing
    changed reaches it: a function (its body is set aside instead), or a statement that shares
    none of its lines with another (`a = 1; b = 2` do) and is no `from __future__` import,
    which changes how the rest is read."""
    node = body[index]
    if isinstance(node, FUNCTIONS):
        return True
    if isinstance(node, ast.ImportFrom) and node.module == "__future__":
        return False
    before = body[index - 1].end_lineno if index else 0
    after = first_line(body[index + 1]) if index + 1 < len(body) else None
    return before < first_line(node) and (after is None or node.end_lineno < after)


def _stubbed(
    lines: list[str],
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef],
    left_out: list[ast.stmt],
) -> str:
    """The text of `lines` with each of `functions`' bodies a `raise NotImplementedError` on
    its first line and blank lines after it, and each of the `left_out` statements blank
    lines."""
    lines = list(lines)
    for function in functions:
        first, last = first_line(function.body[0]), function.body[-1].end_lineno
        line = lines[first - 1]
        lines[first - 1] = line[: len(line) - len(line.lstrip())] + "raise NotImplementedError\n"
        lines[first:last] = ["\n"] * (last - first)
    for statement in left_out:
        first, last = first_line(statement), statement.end_lineno
        lines[first - 1 : last] = ["\n"] * (last - first + 1)
    return "".join(lines)


@functools.lru_cache(maxsize=8)
def _keys(original: str, read: Callable[[str], list[Finding]]) -> frozenset[tuple[str, str, str]]:
    """The keys of `original`'s findings by `read`, read once for all of an edit's candidates."""
    return frozenset(finding.key for finding in read(original))


def first_new(original: str, edited: str) -> Finding | None:
    """The first thing Python `edited` writes that cannot work and `original` did not;
    None where there is none."""
    new = new_findings(original, edited)
    return new[0] if new else None
