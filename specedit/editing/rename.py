"""Finishing a rename the model began: the occurrences of the old name it left go too.

Asked to rename `possibilities` to `candidates` "everywhere, including the docstring", the
model renames the parameter, its uses and the docstring's first mention, and leaves one
further down ("among the possibilities"). A rename is mechanical once it is decided, and the
model has decided it where it renamed some occurrences. So where a Python edit's instruction
asks to rename `old` to `new` and the answer renamed some of `old`'s names (fewer name tokens
`old`, and `new` where the input had none), the rest are renamed as a refactoring tool would:
every name token `old`, and `old` as a whole word in comments and docstrings, inside the
definitions the instruction names (the whole file where it names none, or only the renamed
one). Other strings are left alone: a message may mean the word, not the name.
"""

from __future__ import annotations

import ast
import builtins
import io
import keyword
import re
import tokenize

from specedit.editing.proofread import Correction, applied
from specedit.editing.region import UNPARSABLE, documented, named_lines

# "Rename `old` ... to `new`": the first name in backticks after "rename", and the first after
# the "to" that follows it.
RENAME = re.compile(
    r"\brename\b[^`]*`(?P<old>[A-Za-z_]\w*)`.*?\bto\b[^`]*`(?P<new>[A-Za-z_]\w*)`",
    re.I | re.S,
)


def _tokens(source: str) -> list[tokenize.TokenInfo]:
    """`source`'s tokens (none where it does not tokenize)."""
    try:
        return list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return []


def _docstrings(source: str) -> set[int]:
    """The first lines (1-based) of `source`'s docstrings."""
    return {node.body[0].lineno for node in documented(ast.parse(source))}


def finish_rename(original: str, text: str, instruction: str) -> tuple[str, list[Correction]]:
    """`text` (Python, an answer to `instruction`) with the rename the instruction asks for
    and the answer began made everywhere in its scope, and the occurrences renamed (as
    Corrections on the lines of `text`). `text` as it is where the instruction asks for no
    rename, the answer began none, the names are builtins or keywords, or either does not
    parse."""
    match = RENAME.search(instruction)
    if match is None:
        return text, []
    old, new = match["old"], match["new"]
    if old == new or any(keyword.iskeyword(n) or hasattr(builtins, n) for n in (old, new)):
        return text, []
    try:  # first: the parser refuses a text far sooner than the tokenizer reads it through
        docstrings = _docstrings(text)
    except UNPARSABLE:
        return text, []
    before, after = _tokens(original), _tokens(text)
    if not before or not after:
        return text, []

    def count(tokens: list[tokenize.TokenInfo], name: str) -> int:
        return sum(t.type == tokenize.NAME and t.string == name for t in tokens)

    if not (count(after, old) < count(before, old) and count(after, new) > count(before, new)):
        return text, []  # the model began no rename
    # the definitions it names besides the renamed one
    others = instruction.replace(f"`{old}`", "").replace(f"`{new}`", "")
    lines = text.split("\n")
    scope = named_lines(others, text) or set(range(1, len(lines) + 1))
    word = re.compile(rf"\b{re.escape(old)}\b")
    renamed: list[Correction] = []
    for token in after:
        if token.start[0] not in scope:
            continue
        if token.type == tokenize.NAME and token.string == old:
            spans = [(token.start[0] - 1, token.start[1], token.end[1])]
        elif token.type == tokenize.COMMENT or (
            token.type == tokenize.STRING and token.start[0] in docstrings
        ):
            spans = _spans(lines, token, word)
        else:
            continue
        renamed += [Correction(n, start, end, old, new) for n, start, end in spans]
    finished = applied(lines, renamed)
    try:
        ast.parse(finished)
    except UNPARSABLE:
        return text, []
    return finished, sorted(renamed, key=lambda c: (c.line, c.start))


def _spans(
    lines: list[str], token: tokenize.TokenInfo, word: re.Pattern[str]
) -> list[tuple[int, int, int]]:
    """Where `word` occurs in `token` (a comment or a docstring, which may span lines), as
    (0-based line, start column, end column) in `lines`, on lines in the token alone."""
    spans = []
    for number in range(token.start[0], token.end[0] + 1):
        line = lines[number - 1]
        first = token.start[1] if number == token.start[0] else 0
        last = token.end[1] if number == token.end[0] else len(line)
        spans += [(number - 1, m.start(), m.end()) for m in word.finditer(line, first, last)]
    return spans
