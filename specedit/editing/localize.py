"""Which part of a long file an instruction is about, so that an edit reads and writes only that.

Rewriting a whole file costs every line of it twice (read, then written), however well it is
drafted: on a CPU a fix in a file of a thousand lines takes minutes. Where the instruction
points at one function (it names it, or its words are that function's words), the edit is made
as `--lines NAME --context N` would make it: the model sees the function and the lines around
it, writes the function (a fix: the code after its docstring, the head shown), and every
other byte is kept. An instruction about the whole file (every, all, each, a rename...) and a
short file are edited whole: there a region saves little and a wrong guess costs the edit.
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from dataclasses import dataclass

from specedit.editing.editor import EditRequest, Mode
from specedit.editing.region import DEFINITIONS, Region, first_line, parse_lines

NARROWED = (Mode.FIX, Mode.EDIT)  # a rewrite or a snippet to apply concerns the whole text
LONG_FILE_LINES = 200  # shorter files are edited whole, but for a fix of a function's body:
BODY_FILE_LINES = 100  # from this many lines a fix narrowed to a function's body is made so
CONTEXT_LINES = 20  # lines shown on each side of a chosen region
MARGIN = 1.5  # a region found by words alone scores this much above the next, or none is chosen
# A fix writes a documented function's body alone, its head (decorators, signature,
# docstring) shown above it, where the head has this many lines or more (a one-line docstring
# saves too little to leave out) and the instruction has none of these words, which may
# concern the head rather than what the body does.
HEAD_LINES = 3
HEAD_WORDS = re.compile(
    r"\b(?:doc\w*|comments?|signatures?|param\w*|arg\w*|keywords?|defaults?|annotat\w*"
    r"|hints?|typ(?:e|ed|ing)|decorat\w*|renam\w*|async|generators?)\b",
    re.IGNORECASE,
)

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Words of an instruction that ask for a change all over the file ("all the functions", not
# "not at all").
WHOLE_FILE = re.compile(
    r"\b(?:every|each|everywhere|throughout|entire|whole (?:file|module)|renam\w*|typos?"
    r"|all (?:the |of the )?\w+s)\b",
    re.IGNORECASE,
)
# A name written as code: name(), obj.name, a_snake_name, camelCase; and anything in backticks.
CODE_NAME = re.compile(
    r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?=\s*\()"  # name( or obj.name(
    r"|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+"  # obj.name
    r"|\b\w*[a-z0-9]_\w+|\b_\w+"  # snake_case, _private
    r"|\b[a-z]+[A-Z]\w*"  # camelCase
)
QUOTED = re.compile(r"`([^`]+)`")
# An attribute of an instance as a report writes one: `Queue(maxsize=2).full()`, `Path('x').suffix`.
INSTANCE_ATTRIBUTE = re.compile(r"\b([A-Za-z_]\w*)\([^()]*\)\.([A-Za-z_]\w*)")
IDENTIFIER_PATH = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
SUBWORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
# Words that say nothing of where: English glue, the words of any bug report, Python's own
# (words of one or two letters are dropped anyway).
GLUE = """and are but can does for from has have into its not than that the then there this too
was when where which while with without would should must instead wrong error bug fix fixes
correct correctly broken function functions method methods class value values return returns
returned result results call calls called gives give get gets none true false self cls def
raise raises make makes use uses used work works file code line lines set one two new old"""
STOPWORDS = frozenset(GLUE.split())


@dataclass(frozen=True)
class Located:
    """The region an edit is narrowed to, and why (for the dashboard and the stats)."""

    region: Region
    name: str
    why: str

    def describe(self) -> str:
        return f"{self.name} (lines {self.region.first}-{self.region.last}): {self.why}"


@dataclass(frozen=True)
class _Unit:
    """A function or method of the file: what a region can be."""

    name: str  # dotted: Class.method
    first: int
    last: int
    words: Counter[str]
    body: int | None = None  # where a fix of it may start: the code after its docstring (`_body`)

    @property
    def short(self) -> str:
        return self.name.rsplit(".", 1)[-1]


def locate(request: EditRequest) -> Located | None:
    """The function of the request's text (Python, LONG_FILE_LINES or longer) that a fix or an
    edit is about, or None where the whole text should be edited: a short file, not Python,
    another mode, an instruction about the whole file, or no function that stands out. A fix
    of a documented function is narrowed to its body (`_body`), and that from BODY_FILE_LINES
    on."""
    text, instruction = request.text, request.instruction
    if request.mode not in NARROWED or request.surroundings is not None:
        return None
    lines = text.count("\n")
    # a fix that may write a function's body alone, which is narrowed in shorter files too
    body_only = request.mode is Mode.FIX and not HEAD_WORDS.search(instruction)
    if request.language != "python" or lines < (BODY_FILE_LINES if body_only else LONG_FILE_LINES):
        return None
    if WHOLE_FILE.search(instruction):
        return None
    units, bases = _units(text)
    if not units:
        return None
    named = _named(units, bases, instruction)
    if len(named) == 1:
        unit, why = named[0], "named in the instruction"
    else:  # several named: told apart by the instruction's other words; none: by its words
        ranked = _ranked(named, CODE_NAME.sub(" ", instruction)) if named else None
        ranked = ranked or _ranked(units, instruction)
        if ranked is None:
            return None
        unit, shared = ranked
        why = f"the instruction's words: {', '.join(shared)}"
    if body_only and unit.body:
        why += "; its body, the signature and docstring shown"
        region = Region(unit.body, unit.last, context=CONTEXT_LINES, head=unit.first)
        return Located(region, unit.name, why)
    if lines < LONG_FILE_LINES:
        return None
    return Located(Region(unit.first, unit.last, context=CONTEXT_LINES), unit.name, why)


def narrowed(
    request: EditRequest, region: Region | None, narrow: bool
) -> tuple[Region | None, Located | None]:
    """The region an edit of `request` rewrites: `region` where one is given (`--lines`), else
    with `narrow` the function the instruction is about (`locate`, which also says why), else
    None: the whole text."""
    located = locate(request) if narrow and not region else None
    return (located.region if located else region), located


def code_names(instruction: str) -> set[str]:
    """The names the instruction writes as code (`name`, name(), obj.name, a_snake_name,
    camelCase), dotted where it writes them so."""
    written = set(CODE_NAME.findall(instruction))
    for quoted in QUOTED.findall(instruction):
        written.update(IDENTIFIER_PATH.findall(quoted))
    return written


def without_code(instruction: str) -> str:
    """The instruction's prose: what it writes in backticks or as a name of code left out."""
    return CODE_NAME.sub(" ", QUOTED.sub(" ", instruction))


def _named(units: list[_Unit], bases: dict[str, list[str]], instruction: str) -> list[_Unit]:
    """The units the instruction names as code (`code_names`): by their dotted name where it
    is written so (a class's own or one it inherits: `Cls.name`, or `Cls(...).name` on an
    instance), else by their own."""
    written = code_names(instruction)
    dotted = written | {f"{cls}.{name}" for cls, name in INSTANCE_ATTRIBUTE.findall(instruction)}
    defined = {u.name for u in units}
    inherited = {_inherited(name, bases, defined) for name in dotted if "." in name}
    found = [u for u in units if u.name in written or u.name in inherited]
    if found:
        return found
    short = {name.rsplit(".", 1)[-1] for name in written}
    return [u for u in units if u.short in short]


def _inherited(name: str, bases: dict[str, list[str]], defined: set[str]) -> str | None:
    """The unit `Cls.attr` stands for: the attribute of the class or of the first of its bases
    the file defines that has it (depth first, left to right); None where none does."""
    cls, _, attr = name.rpartition(".")
    todo, seen = [cls], set()
    while todo:
        current = todo.pop(0)
        if current in seen or current not in bases:
            continue
        seen.add(current)
        if f"{current}.{attr}" in defined:
            return f"{current}.{attr}"
        todo = bases[current] + todo
    return None


def _ranked(units: list[_Unit], instruction: str) -> tuple[_Unit, list[str]] | None:
    """The unit whose words are the instruction's (BM25: rare words count more), with the
    words they share; None where none shares a word or none stands MARGIN above the next."""
    asked = set(_words(instruction))
    if not asked:
        return None
    lengths = [sum(u.words.values()) for u in units]
    average = sum(lengths) / len(units) or 1.0
    holding = Counter(word for u in units for word in set(u.words) & asked)
    scores = []
    for unit, length in zip(units, lengths, strict=True):
        score = 0.0
        for word in asked & set(unit.words):
            idf = math.log(1 + (len(units) - holding[word] + 0.5) / (holding[word] + 0.5))
            tf = unit.words[word]
            score += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / average))
        scores.append((score, unit))
    scores.sort(key=lambda pair: -pair[0])
    (top, unit), runner_up = scores[0], scores[1][0] if len(scores) > 1 else 0.0
    if top <= 0 or top < MARGIN * runner_up:
        return None
    shared = asked & set(unit.words)
    written = [w.lower() for w in IDENTIFIER.findall(instruction)]
    return unit, sorted({w for w in written if set(_words(w)) & shared})


def _units(text: str) -> tuple[list[_Unit], dict[str, list[str]]]:
    """The file's functions and methods, nested ones inside theirs (a method of a nested
    class is its class's), and the names of each class's bases, by the class's dotted name."""
    try:
        tree = parse_lines(text)
    except ValueError:  # not Python, or line numbers a region would cut elsewhere
        return [], {}
    lines = text.split("\n")
    units = []
    bases: dict[str, list[str]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                bases[prefix + child.name] = [
                    base.id if isinstance(base, ast.Name) else base.attr
                    for base in child.bases
                    if isinstance(base, (ast.Name, ast.Attribute))
                ]
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, DEFINITIONS):
                first = first_line(child)
                source = "\n".join(lines[first - 1 : child.end_lineno])
                words = Counter(_words(source))
                units.append(
                    _Unit(prefix + child.name, first, child.end_lineno, words, _body(child))
                )
            elif isinstance(child, ast.stmt):
                visit(child, prefix)

    visit(tree, "")
    return units, bases


def _body(definition: ast.AST) -> int | None:
    """The first line of a function's code after its docstring, where the two take HEAD_LINES
    or more with its signature and decorators, and the code starts on a line of its own; None
    otherwise (a class: its body is its methods)."""
    statements = definition.body
    if isinstance(definition, ast.ClassDef) or ast.get_docstring(definition) is None:
        return None
    if len(statements) < 2 or statements[1].lineno <= statements[0].end_lineno:
        return None
    body = first_line(statements[1])
    return body if body - first_line(definition) >= HEAD_LINES else None


def _words(text: str) -> list[str]:
    """Lower-case words of `text`, identifiers split into theirs (`_wrap_chunks`: wrap,
    chunk; `maxSplit`: max, split), stemmed, glue words dropped."""
    words = []
    for identifier in IDENTIFIER.findall(text):
        for part in SUBWORD.findall(identifier):
            word = part.lower()
            if len(word) > 2 and word not in STOPWORDS:
                words.append(_stem(word))
    return words


def _stem(word: str) -> str:
    """`word` without the ending that inflects it, roughly: splitting, split and splits are
    one word here, and so are matches and match, archiving and archive."""
    for ending in ("ing", "ed", "es", "s"):
        stem = word.removesuffix(ending)
        if stem == word or len(stem) < 3 or (stem.endswith("s") and ending == "s"):
            continue
        if ending == "es" and not stem.endswith(("ch", "sh", "x", "ss")):
            continue
        if ending in ("ing", "ed") and len(stem) > 3 and stem[-1] == stem[-2]:
            stem = stem[:-1]  # wrapping: wrap
        word = stem
        break
    return word.removesuffix("e") if len(word) > 3 else word  # archive: archiv, as archiving
