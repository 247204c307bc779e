"""The examples an instruction states: a call and the value it should give, as a bug report
writes them ("`median([1, 3, 5, 7])` gives 5.0, not 4.0", "`dirname('/usr')` returns ''
instead of '/'", "`f(2)` should be 4"); and those a docstring gives outside doctest, a call and
its value on one line ("search([4, 1, 2]) == 2", "eat(5, 6) -> [11, 4]", "can_arrange([1,2,3])
= -1") or in its sentences as a report writes them. With `--examples` they are run on each
candidate beside the file's own `>>>` examples (editing/examples.py).

Only what leaves no doubt is read: the call in backticks (or a bare `name(...)`), then in the
same sentence "instead of", ", not", or "should/must be/return/give", then a Python literal that
ends the clause (a value in words, "purple (0.5, 0.0, 1.0)", "3 words", "4 or more", is not
one). Where the report also says the wrong value ("gives 5.0, not 4.0") and it equals the right
one (1 and True), the call tells nothing and is dropped. Run as a module, this file is the
check: `python -m specedit.editing.stated FILE CASES` runs FILE's code (not its `__main__`
block) and says which call gave what.
"""

from __future__ import annotations

import ast
import json
import math
import re
import reprlib
import runpy
import sys
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from specedit.editing.region import DEFINITIONS, UNPARSABLE, documented

CALL = re.compile(r"`([^`\n]+\))`|(?<![\w.`])([^\W\d][\w.]*\()")
# The words before the right value; a lookbehind, so a long run of spaces is not scanned anew
# from each of its positions.
WANTED = re.compile(
    r"(?<=\s)(?:instead\s+of|(?:should|must)\s+(?:be|return|give))\s+|,\s*not\s+", re.IGNORECASE
)
WRONG = re.compile(r"\b(?:returns?|gives?|is|yields?)\s+", re.IGNORECASE)
SENTENCE_END = re.compile(r"[.;!?](?:\s|$)|\n\s*\n")
# After a value: the text's end, punctuation (not inside a number: `1,000`), or a word that
# starts another clause.
VALUE_END = re.compile(
    r"\s*(?:$|[.,;:!?)](?!\w)|(?:and|but|when|whenever|which|while|since|because|so|instead)\b)",
    re.IGNORECASE,
)
# A docstring's example: a call, then an arrow, `==` or `=` before its value; not on
# doctest's own lines.
DOCSTRING_CALL = re.compile(r"(?<![\w.])[^\W\d][\w.]*\(")
DOCTEST_LINE = re.compile(r"^[ \t]*(?:>>>|\.\.\.).*$", re.MULTILINE)
ARROW = re.compile(r"[ \t]*(?:#[ \t]*)?(?:==>|==|=>|->|➞|→|(?P<equals>=)|returns\b|gives\b)[ \t]*")
# Worked arithmetic between the arrow and the value: "-> 19 - 5 - 6 = 8".
WORKED = re.compile(r"(?:[\d.+\-*/%() \t]+=(?!=)[ \t]*)+")
VALUE_CHARS = 400  # the longest value read: each shorter start is parsed in turn
LINE_CHARS = 4 * VALUE_CHARS  # the longest rest of a line after a docstring's call read
# A function's example given as its parameters' values: "For lst = [1,2,3] the output should be 14".
BOUND = re.compile(
    rf"\bfor[ \t]+(?P<bound>[^\W\d]\w*[ \t]*=[^\n]{{0,{VALUE_CHARS}}}?),?[ \t]+"
    r"the[ \t]+(?:output|result)[ \t]+should[ \t]+be[ \t]+",
    re.IGNORECASE,
)
SHOWN = reprlib.Repr()  # a returned value as the report shows it: cut, not megabytes
SHOWN.maxstring = SHOWN.maxother = 200
SHOWN.maxlist = SHOWN.maxtuple = SHOWN.maxdict = 20


@dataclass(frozen=True)
class Stated:
    call: str  # Python source of the call
    want: str  # the value it should give, as the literal's source
    said_by: str = "the instruction"  # who says so, as the report names it

    @cached_property
    def names(self) -> set[str]:
        """The names the call reads (`Parser` and `x` in `Parser().parse(x)`)."""
        tree = ast.parse(self.call, mode="eval")
        return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def top_level_names(text: str) -> set[str]:
    """The names a Python file binds at its top level that an edit of it can change: its
    definitions, assignments and `from ... import` names (not a module it imports whole, whose
    calls give what they give whatever the edit)."""
    try:
        return bound_names(ast.parse(text))
    except UNPARSABLE:
        return set()


def bound_names(tree: ast.Module) -> set[str]:
    """`top_level_names` of a file already parsed."""
    names = set()
    for node in tree.body:
        if isinstance(node, DEFINITIONS):
            names.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
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


def _literal(text: str) -> tuple[str, object] | None:
    """The longest start of `text` (up to VALUE_CHARS) that is a Python literal and ends its
    clause, and its value; a tuple only in parentheses (`1,000` is not one), a comment after
    it left out."""
    for end in range(min(len(text), VALUE_CHARS), 0, -1):
        piece = text[:end].strip()
        if not piece or piece.endswith(",") or not VALUE_END.match(text, end):
            continue
        try:
            tree = ast.parse(piece, mode="eval")
            value = ast.literal_eval(tree)
        except (*UNPARSABLE, TypeError):
            continue
        if isinstance(value, tuple) and not piece.startswith("("):
            continue
        return ast.get_source_segment(piece, tree.body, padded=True) or piece, value
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
        if sentence_end := SENTENCE_END.search(clause):
            clause = clause[: sentence_end.start()]
        if (case := _case(call, clause)) is not None:
            found.append(case)
    return found


def _case(call: str, clause: str) -> Stated | None:
    """The call with the value its clause says it should give, if the clause says one that
    tells a right answer from the wrong one."""
    wanted = WANTED.search(clause)
    value = _literal(clause[wanted.end() :]) if wanted else None
    if value is None or not parses_as(call, ast.Call):
        return None
    said_wrong = WRONG.search(clause, 0, wanted.start())
    wrong = _literal(clause[said_wrong.end() : wanted.start()]) if said_wrong else None
    if wrong is not None and same(wrong[1], value[1]):
        return None
    return Stated(call, value[0])


def docstring_examples(text: str) -> list[Stated]:
    """The calls a Python file's docstrings give with their values in the forms written
    outside doctest: a call, then `==`, `->`, `=>`, `==>`, `➞`, `=`, "returns" or "gives"
    (after a `#`, if any), then a literal that ends the line, worked arithmetic before it
    allowed ("search([4, 1, 2]) == 2", "* eat(5, 6, 10) -> [11, 4]", "f('a')  # returns 'b'",
    "for pick(7, 34) == 34", "f([1, 3]) == 1 + 9 = 10"); and those its sentences give as an
    instruction's are read ("f(1) should return 15 and f(-1) should return -15"). A call may
    span lines; a `>>>` line is doctest's."""
    try:
        tree = ast.parse(text)
    except UNPARSABLE:
        return []
    found = []
    for node in documented(tree):
        docstring = ast.get_docstring(node)
        found += [*_docstring_cases(docstring), *_bound_cases(node, docstring)]
    return found


def _docstring_cases(docstring: str) -> list[Stated]:
    """The docstring's calls with an arrow before their values, then those its sentences give
    as a report would; a call that a formula defines (`tri(n) = 1 + n / 2`, then `tri(2) = 2`)
    is not read from its `=` lines, which are the formula's values rather than the function's."""
    text = DOCTEST_LINE.sub(lambda line: " " * len(line[0]), docstring)  # doctest's to run
    found, formulas, position = [], set(), 0
    while match := DOCSTRING_CALL.search(text, position):
        end = _closing(text, match.end())
        if end is None:
            break
        call, position = text[match.start() : end], end
        line_end = text.find("\n", end, end + LINE_CHARS)
        if line_end < 0 and (line_end := len(text)) > end + LINE_CHARS:
            continue  # a line no example is that long
        rest = text[end:line_end]
        if not (arrow := ARROW.match(rest)):
            continue
        value = _value(rest[arrow.end() :])
        if arrow["equals"] and value is None:
            formulas.add(match[0])
        elif value is not None and parses_as(call, ast.Call):
            # what an `=` line calls (`tri(`), to leave out if a formula defines it
            found.append((Stated(call, value[0], "the docstring"), arrow["equals"] and match[0]))
    cases = [case for case, equated in found if equated not in formulas]
    prose = [replace(case, said_by="the docstring") for case in stated_examples(docstring)]
    return [*cases, *(case for case in prose if case not in cases)]


def _bound_cases(node: ast.AST, docstring: str) -> list[Stated]:
    """A function's examples written as its parameters' values and the output: "For lst =
    [1,2,3] the output should be 14", "For s = "ab", c = "a" the result should be 'b'"; read
    where the values are literals and name exactly the function's parameters, the call
    written with them in the signature's order."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return []
    parameters = [argument.arg for argument in [*node.args.posonlyargs, *node.args.args]]
    found = []
    for match in BOUND.finditer(docstring):
        line_end = docstring.find("\n", match.end())
        rest = docstring[match.end() : line_end if line_end >= 0 else len(docstring)]
        want = _literal(rest[: end.start()] if (end := SENTENCE_END.search(rest)) else rest)
        given = _bindings(match["bound"])
        if want is not None and given is not None and sorted(given) == sorted(parameters):
            call = f"{node.name}({', '.join(given[name] for name in parameters)})"
            found.append(Stated(call, want[0], "the docstring"))
    return found


def _bindings(text: str) -> dict[str, str] | None:
    """The `name = literal` pairs that `text` is, comma-separated, each literal as source."""
    try:
        call = ast.parse(f"f({text})", mode="eval").body
        if not isinstance(call, ast.Call) or call.args:
            return None
        for keyword in call.keywords:
            ast.literal_eval(keyword.value)
    except (*UNPARSABLE, TypeError):
        return None
    return {str(keyword.arg): ast.unparse(keyword.value) for keyword in call.keywords}


def _value(text: str) -> tuple[str, object] | None:
    """The literal that starts `text`, or that follows its worked arithmetic."""
    if (value := _literal(text)) is None and (worked := WORKED.match(text)):
        value = _literal(text[worked.end() :])
    return value


def parses_as(source: str, kind: type[ast.expr]) -> bool:
    """Whether `source` is one Python expression of `kind` (a call, a comparison)."""
    try:
        return isinstance(ast.parse(source, mode="eval").body, kind)
    except UNPARSABLE:
        return False


def same(got: object, want: object) -> bool:
    """Equal, floats within rounding (a report writes 4.0 for 3.9999999999999996); a bool
    only to a bool (a report that says True is not answered by 1)."""
    if isinstance(got, bool) != isinstance(want, bool):
        return False
    if isinstance(got, float) and isinstance(want, int | float):
        return math.isclose(got, want, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(got, list | tuple) and isinstance(want, list | tuple):
        return (
            isinstance(got, type(want))
            and len(got) == len(want)
            and all(same(g, w) for g, w in zip(got, want, strict=True))
        )
    return bool(got == want)


def encode(cases: list[Stated]) -> str:
    """The cases as the check's command line takes them: JSON, its braces escaped so that no
    `{file}` in an instruction reads as the command's placeholder."""
    encoded = json.dumps([[case.call, case.want, case.said_by] for case in cases])
    return encoded.replace("{", "\\u007b")


def main(path: str, cases: str) -> int:
    """Run the file at `path` (its folder importable and the only argument, as doctest has
    it), then each call in its namespace; 1 unless every call gave its value. A SystemExit is
    a failure too: a candidate that exits cannot pass by exiting 0."""
    sys.path.insert(0, str(Path(path).resolve().parent))
    sys.argv = [path]
    try:
        namespace = runpy.run_path(path)
    except (Exception, SystemExit) as exc:
        print(f"running the file raised {type(exc).__name__}: {exc}")
        return 1
    return 1 if run_calls(namespace, json.loads(cases)) else 0


def run_calls(namespace: dict, cases: list[list[str]]) -> int:
    """Run each [call, want, said_by] in `namespace`, printing what each that fails gave; how
    many failed."""
    failed = 0
    for call, want, said_by in cases:
        try:
            got = eval(call, namespace)  # in a child process: a check's, or the sandbox's
            right = same(got, ast.literal_eval(want))
        except (Exception, SystemExit) as exc:  # what it raised is the report
            print(f"{call} raised {type(exc).__name__}: {exc}; {said_by} says {want}")
            failed += 1
            continue
        if not right:
            print(f"{call} returned {SHOWN.repr(got)}; {said_by} says {want}")
            failed += 1
    return failed


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
