"""Names an edit's instruction asks for that its answer never writes, and raises it never adds.

A small model given a request of several parts makes some and leaves the rest: asked for a
`discontinue(sku)` method beside a refactor, it refactors; asked for a `consume()` that raises,
it makes `allow()` raise; asked for a `wrap=False` option, it returns the file as it was. What
it left out often shows in the instruction and the answer alone: a name the instruction writes
as code (in backticks, as a call `name(...)`, as a parameter `name=value`) that the input does
not have and the answer never writes. A dotted name whose first part the input does not have
(`dict.keys()`, `time.monotonic`) is a library's, not one to write. Likewise an exception
the instruction asks to be raised ("dividing by zero should raise `ValueError`", "add a
method ..., raising `KeyError` for an unknown SKU") that no function of the answer raises more
often than the same function of the input did: the file may raise it elsewhere already, so the
name alone tells nothing.

Such an answer is not refused: drawn again, and even told what is missing, the model leaves
it out again. The instruction's sentences that name it, asked for on their own of that answer
(`sentences_naming`, editing/selection.py's `Drawing.rest`), get it written; what is still left
out is warned of (docs/quality.md, "Names asked for that the answer never writes").
"""

from __future__ import annotations

import ast
import builtins
import collections
import functools
import io
import keyword
import re
import tokenize

from specedit.editing.localize import IDENTIFIER_PATH, QUOTED
from specedit.editing.region import parsed

DOTTED = IDENTIFIER_PATH.pattern
# What a pair of backticks holds when it names code: a name, a call, a parameter with its value.
QUOTED_NAME = re.compile(rf"({DOTTED})\s*(?:\(.*\))?\Z|([A-Za-z_]\w*)\s*=[^=]")
# Outside backticks: a call written with no space before its parenthesis ("age (in seconds)"
# is prose), and a parameter with its value.
# "key(s)" is a plural, "--dry-run=true" a flag, "?page=2" a query.
CALL = re.compile(rf"(?<![.\w])({DOTTED})\((?!s\))")
PARAMETER = re.compile(r"(?<![=<>!.\w?&/-])([A-Za-z_]\w*)=(?!=)")
WORD = re.compile(r"[A-Za-z_]\w*")
# Words just before a name that ask for it not to be written: "don't use `eval()`", "rather
# than `sleep()`", "no `print()`". Read in the BEFORE_WORDS words before it.
NOT_WANTED = re.compile(
    r"\b(?:not|no|never|without|instead of|rather than|avoid\w*|remov\w*|delet\w*|drop\w*)\b"
    r"|n't\b",
    re.IGNORECASE,
)
BEFORE_WORDS = 3
# An exception's name: a builtin one, or one named as exceptions are ("InsufficientFunds" is
# not read).
EXCEPTION = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning))\b|\b([A-Z]\w*)\b")
# Asked to raise: the verb's base form ("should raise", "and raise", "Raise"), or any form in a
# sentence that asks for something ("Add a method that raises ..."). "`f(x)` raises TypeError"
# alone tells what the input does now.
RAISE = re.compile(r"\b(?:raise|throw)\b", re.IGNORECASE)
RAISES = re.compile(r"\b(?:rais(?:e|es|ing)|throw(?:s|ing)?)\b", re.IGNORECASE)
# Words before the verb that make the raise a condition of something else ("return {} if
# `json.loads` raises `JSONDecodeError`", "retry when `get` raises TimeoutError").
CONDITION = re.compile(
    r"\b(?:if|when|whenever|unless|until|once|where|catch\w*|handl\w*|retr\w*|would|could"
    r"|might|currently)\b",
    re.IGNORECASE,
)
REQUEST = re.compile(
    r"(?:(?:also|then|and|finally|please)\W+)*"
    r"(?:add|make|change|extend|implement|write|create|refactor|extract|rewrite|update|modify"
    r"|let|allow|give|have|support|introduce|define|replace|move|split|rename|turn|convert)\b",
    re.IGNORECASE,
)
# A sentence that says a raise stays as it is ("Validation stays as before: ... raise
# `ValueError`") asks for nothing new.
RESTATED = re.compile(
    r"\b(?:still|stays?|keeps?|kept|as before|unchanged|continues? to)\b", re.IGNORECASE
)
RAISED = "raise "  # how an exception asked to be raised is listed among the names left out
# Where a sentence ends: not after "e.g." and the like.
SENTENCE_END = re.compile(
    r"(?<!\be\.g\.)(?<!\bi\.e\.)(?<!\betc\.)(?<!\bvs\.)(?<=[.!?])\s+(?=[A-Z`\"'(])"
)
# A sentence that goes on about the one before it ("It returns the item."), asked for with it.
GOES_ON = re.compile(r"(?:It|Its|They|Their|This|These|That|Both|Each)\b")


def asked_for(original: str, answer: str, instruction: str) -> list[str]:
    """The names `instruction` writes as code that neither `original` nor `answer` has as a
    name (Python's tokens: a docstring or a comment that mentions one does not count), in the
    order written; then, as `raise Name` (and no longer as a name), the exceptions it asks to
    be raised that no function of `answer` raises more often than `original`'s did (none
    where either does not parse). A raise Python makes itself (`self.items[sku]`'s
    `KeyError`) or one made by a function the answer calls is not seen."""
    known = names(original)
    written = names(answer)
    left_out = [name for name in _written_as_code(instruction, known) if name not in written]
    to_raise = _asked_to_raise(instruction, original)
    if not to_raise:  # most instructions ask for none: the answer is not parsed for them
        return left_out
    before, after = raises(original), raises(answer)
    if before is None or after is None:
        return left_out
    unraised = [
        name
        for name in to_raise
        if not any(
            count[name] > before.get(where, {}).get(name, 0) for where, count in after.items()
        )
    ]
    return [name for name in left_out if name not in unraised] + [RAISED + n for n in unraised]


@functools.lru_cache(maxsize=4)  # the input's, read again for each candidate of one edit
def names(text: str) -> frozenset[str]:
    """The names a Python text writes: its NAME tokens, and its strings that are a name alone
    (a `"total"` key, a `"DEBUG"` variable; a docstring is not); every word, where it does not
    tokenize."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return frozenset(WORD.findall(text))
    found = {token.string for token in tokens if token.type == tokenize.NAME}
    for token in tokens:
        if token.type == tokenize.STRING:
            content = token.string.lstrip("rRbBuUfF").strip("'\"")
            if WORD.fullmatch(content):
                found.add(content)
    return frozenset(found)


# The input's, read again for each candidate of one edit; its callers only read what it returns.
@functools.lru_cache(maxsize=4)
def raises(text: str) -> dict[str, collections.Counter[str]] | None:
    """How often each function of a Python text (by its dotted name; "" for the module's own
    statements) raises each exception by name, a bare `raise` in an `except Name:` counting as
    raising that name; None where it does not parse."""
    tree = parsed(text)
    if tree is None:
        return None
    counts: dict[str, collections.Counter[str]] = {}

    def visit(node: ast.AST, where: str, handled: tuple[str, ...]) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, f"{where}.{child.name}".lstrip("."), ())
                continue
            if isinstance(child, ast.ExceptHandler) and child.type is not None:
                types = child.type.elts if isinstance(child.type, ast.Tuple) else [child.type]
                visit(child, where, tuple(filter(None, map(_name_of, types))))
                continue
            if isinstance(child, ast.Raise):
                raised = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                named = (_name_of(raised),) if raised is not None else handled
                counts.setdefault(where, collections.Counter()).update(filter(None, named))
            visit(child, where, handled)

    visit(tree, "", ())
    return counts


def sentences_naming(instruction: str, absent: tuple[str, ...]) -> str | None:
    """The sentences of `instruction` that write one of the `absent` names (of an exception
    left unraised, its name), as an instruction of their own; None where that is every
    sentence (the instruction again)."""
    sentences = SENTENCE_END.split(instruction.strip())
    named = [name.removeprefix(RAISED) for name in absent]
    written = re.compile(r"\b(?:" + "|".join(map(re.escape, named)) + r")\b")
    naming = [
        sentence
        for number, sentence in enumerate(sentences)
        if written.search(sentence)
        or (number and GOES_ON.match(sentence) and written.search(sentences[number - 1]))
    ]
    if not naming or len(naming) == len(sentences):
        return None
    return " ".join(naming)


def warning(absent: tuple[str, ...]) -> str:
    """What the user is told of the names a delivered answer left out (`asked_for`)."""
    unwritten = ", ".join(f"`{name}`" for name in absent if not name.startswith(RAISED))
    unraised = ", ".join(f"`{name}`" for name in absent if name.startswith(RAISED))
    told = [f"never writes {unwritten}"] * bool(unwritten)
    told += [f"adds no {unraised}"] * bool(unraised)
    return f"the answer {' and '.join(told)}, which the instruction asks for: it may be incomplete"


def _written_as_code(instruction: str, known: frozenset[str]) -> list[str]:
    """The new names `instruction` writes as code: the last part of each, unless its first part
    is not one of `known` (a library's), it is one of `known` already, or the words just before
    it say not to (`NOT_WANTED`: "instead of `eval()`")."""
    written = []
    for quoted in QUOTED.finditer(instruction):
        if found := QUOTED_NAME.match(quoted.group(1).strip()):
            written.append((quoted.start(), found.group(1) or found.group(2)))
    prose = QUOTED.sub(lambda quoted: " " * len(quoted.group()), instruction)
    for pattern in (CALL, PARAMETER):
        written += [(found.start(), found.group(1)) for found in pattern.finditer(prose)]
    new = []
    owners = known | {"self"}  # what a dotted name of the file's own starts with
    for start, dotted in sorted(written):
        if NOT_WANTED.search(" ".join(instruction[:start].split()[-BEFORE_WORDS:])):
            continue
        first, _, last = dotted.rpartition(".")
        if first and first.split(".")[0] not in owners:
            continue
        if last not in known and len(last) > 1 and not keyword.iskeyword(last):
            new.append(last)
    return list(dict.fromkeys(new))


def _asked_to_raise(instruction: str, original: str) -> list[str]:
    """The exceptions `instruction` asks to be raised (`RAISE`, or `RAISES` in a sentence that
    asks for something, `REQUEST`, among the few words before the name), in the order written,
    unless those words say not to (`NOT_WANTED`) or make it a condition (`CONDITION`), the
    sentence says the raise stays as it is (`RESTATED`), or backticks quote a raise statement
    the `original` has ("replace the `raise KeyError` with ...")."""
    quoting = [
        quoted.span()
        for quoted in QUOTED.finditer(instruction)
        if "raise" in quoted.group(1) and quoted.group(1).strip() in original
    ]
    asked = []
    at = 0
    for sentence in SENTENCE_END.split(instruction.strip()):
        at = instruction.index(sentence, at)
        if RESTATED.search(sentence):
            continue
        verbs = RAISES if REQUEST.match(sentence) else RAISE
        for found in EXCEPTION.finditer(sentence):
            name = found.group(1) or found.group(2)
            if not found.group(1) and not _is_builtin_exception(name):
                continue
            if any(start <= at + found.start() < end for start, end in quoting):
                continue
            # the verb and the word before it ("should raise"), then at most two more ("a
            # new"); backticks and quotes are not words
            words = [word.strip("`'\"") for word in sentence[: found.start()].split()]
            before = " ".join(list(filter(None, words))[-BEFORE_WORDS - 1 :])
            if verbs.search(before) and not (NOT_WANTED.search(before) or CONDITION.search(before)):
                asked.append(name)
    return list(dict.fromkeys(asked))


def _name_of(node: ast.expr) -> str | None:
    """The name an exception is raised or caught by: `ValueError`, `errors.Invalid`'s last."""
    return getattr(node, "id", None) or getattr(node, "attr", None)


def _is_builtin_exception(name: str) -> bool:
    """Whether `name` is one of Python's own exceptions (`StopIteration`, `KeyboardInterrupt`)."""
    value = getattr(builtins, name, None)
    return isinstance(value, type) and issubclass(value, BaseException)
