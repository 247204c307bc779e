"""Where a redraw of an answer starts: its tokens up to one it was unsure of, then the likeliest
other token there (`branch_points`), or, where it went on to copy words of its prompt, the
least sure token just before them (`leak_start`), where it wrote what cannot run, the least
sure on that line (`check_start`), and where it left out lines of its input, the least sure on
the line it wrote after them (`gap_start`).

The answer's prompt and its text up to the branch are those of the first candidate, so an
engine that keeps its cache (llama.cpp) computes only what follows the branch. Which
candidates to draw and which to deliver is editing/selection.py's.
"""

from __future__ import annotations

import io
import itertools
import re
import tokenize
from collections.abc import Callable

from specedit.editing.editor import EditResult
from specedit.editing.safety import lost_place


def branch_points(
    tokens: list[int],
    probabilities: list[float],
    runners_up: list[int],
    decode: Callable[[list[int]], str],
    limit: int,
    named: set[int] | frozenset[int] = frozenset(),
    language: str = "",
    prose_first: bool = False,
) -> list[tuple[int, ...]]:
    """Up to `limit` starts for a redraw of an answer: its tokens up to one it was unsure of,
    then the likeliest other token there; the least sure first, those on the `named` lines
    (1-based, the definitions the instruction names) before the others, and those in a
    comment or a docstring, or whose other token starts a comment (Python's), after the
    code's: a redraw there changes nothing the code does (before them, with `prose_first`:
    an edit of the comments or docstrings). An other token that writes the
    same characters (another split of them, or a special token that writes none) or differs
    only in its spaces and line breaks changes nothing a test could see, and is passed over.
    One that writes only the first characters of the answer's token (` <` where ` <=` was
    copied) is kept: the model, which splits text as its tokenizer does, rarely writes the
    rest next, so the line goes on otherwise."""
    text = decode(tokens)
    pieces = [decode([token]) for token in tokens]
    others = [decode([token]) for token in runners_up]
    line = [1 + count for count in itertools.accumulate((p.count("\n") for p in pieces), initial=0)]
    offset = list(itertools.accumulate(map(len, pieces), initial=0))  # where each token starts
    python = language == "python"
    prose = _prose(text) if python else []

    def order(position: int) -> tuple[bool, bool, float]:
        commented = any(start <= offset[position] < end for start, end in prose) or (
            python and others[position].lstrip().startswith("#")
        )
        outside = line[position] not in named if named else False
        return outside, commented != prose_first, probabilities[position]

    points: list[tuple[int, ...]] = []
    for position in sorted(range(len(tokens)), key=order):
        if len(points) == limit:
            break
        mine, other = tokens[position], runners_up[position]
        if other == mine or not pieces[position] or not others[position]:
            continue  # the same token, or a special one: it writes nothing
        if others[position].split() == pieces[position].split():
            continue  # other spaces or line breaks only
        start = (*tokens[:position], other)
        written = decode(list(start))
        if text.startswith(written) and len(written) >= offset[position + 1]:
            continue  # the same characters, split otherwise
        points.append(start)
    return points


def leak_start(
    result: EditResult, sentence: str | None, decode: Callable[[list[int]], str]
) -> tuple[int, ...] | None:
    """A start for a redraw of `result`, whose answer copied `sentence` from its prompt: its
    tokens up to the least sure one from the line before the sentence to the sentence's first
    word, then the likeliest other token there (where the docstring could have ended). An
    other token that differs in spaces alone, or is the same word otherwise ended (` Returns`
    for ` Return`), goes on into the same sentence, and is passed over. None where the answer
    has no choices or no such token."""
    if not sentence:
        return None

    def window(text: str) -> tuple[int, int] | None:
        at = text.find(sentence)
        return None if at < 0 else (text[:at].rstrip().rfind("\n") + 1, at)

    def passed_over(mine: str, other: str) -> bool:
        return mine.isalpha() and other.isalpha() and other.startswith(mine)

    return _least_sure_start(result, decode, window, passed_over)


def check_start(
    result: EditResult, line: str, name: str, decode: Callable[[list[int]], str]
) -> tuple[int, ...] | None:
    """A start for a redraw of `result`, whose answer writes `line` and `name` there (a name
    nothing defines, a call or an attribute that cannot run): its tokens up to the least sure
    one from the line's start to the name's end, then the likeliest other token there (another
    name, other arguments, or a line without it). None where the answer has no choices, does
    not write the line, or has no such token."""

    def window(text: str) -> tuple[int, int] | None:
        at = text.find(line.strip())
        if at < 0 or (within := _word_at(line.strip(), name)) < 0:
            return None
        return text.rfind("\n", 0, at) + 1, at + within + len(name) - 1

    return _least_sure_start(result, decode, window)


def gap_start(
    result: EditResult, original: str, decode: Callable[[list[int]], str]
) -> tuple[int, ...] | None:
    """A start for a redraw of `result`, whose answer to `original` (the text it rewrites) left
    out DROP_MIN_LINES or more of its non-blank lines in one place: its tokens up to the least
    sure one on the line it wrote after them, then the likeliest other token there (where it
    could have gone on with the lines it left out). A model that copies a passage its input
    repeats (two docstrings that end alike) may go on after the second one, and the choice it
    made there is often a near tie. None where there is no such gap in what it wrote itself
    (an answer that ended early lost its tail, not its place), or no choice on that line."""
    lines = result.text.split("\n")
    gap = lost_place(original, result.text)
    if gap is None:
        return None
    after = next((k for k in range(gap, len(lines)) if lines[k].strip()), None)  # blanks aside
    if after is None:
        return None
    # Where it jumped: the line before the gap and the one after, which stand together nowhere
    # in the input, and so are found in the answer where the model wrote them.
    before = lines[after - 1] + "\n" if after else ""
    seam = before + lines[after]

    def window(text: str) -> tuple[int, int] | None:
        at = text.find(seam)
        return None if at < 0 else (at + len(before), at + len(seam) - 1)

    return _least_sure_start(result, decode, window)


def _word_at(text: str, word: str) -> int:
    """Where `word` first stands as a whole word (an identifier) in `text`; -1 if nowhere."""
    found = re.search(rf"(?<![\w.]){re.escape(word)}(?!\w)", text)
    return found.start() if found else -1


def _least_sure_start(
    result: EditResult,
    decode: Callable[[list[int]], str],
    window: Callable[[str], tuple[int, int] | None],
    passed_over: Callable[[str, str], bool] = lambda mine, other: False,
) -> tuple[int, ...] | None:
    """`result`'s tokens up to the least sure one that overlaps the characters `window` gives
    in its answer (its first and last), then the likeliest other token there; an other token
    that is the same, writes nothing, differs in spaces alone or is `passed_over` (its text
    and the answer's stripped) is not a choice. None where there is no choice there."""
    generation = result.generation
    tokens, runners_up = generation.tokens, generation.runners_up
    if not runners_up:
        return None
    pieces = [decode([token]) for token in tokens]
    offsets = list(itertools.accumulate(map(len, pieces), initial=0))
    span = window("".join(pieces))
    if span is None:
        return None
    first, last = span

    def choice(position: int) -> bool:
        mine, other = pieces[position].strip(), decode([runners_up[position]]).strip()
        if runners_up[position] == tokens[position] or not other or other == mine:
            return False
        return not passed_over(mine, other)

    positions = [k for k in range(len(tokens)) if first <= offsets[k + 1] and offsets[k] <= last]
    unsure = [k for k in positions if choice(k)]
    if not unsure:
        return None
    branch = min(unsure, key=lambda k: generation.probabilities[k])
    return (*tokens[:branch], runners_up[branch])


# What comes before and after a string that is a statement of its own (a docstring).
_OPENS = {tokenize.ENCODING, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
_CLOSES = {tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER}


def _prose(source: str) -> list[tuple[int, int]]:
    """The character spans of what Python `source` runs nothing for: its comments and the
    strings that stand alone as statements (docstrings). None where it does not tokenize,
    such as an answer cut short."""
    starts = [0, *(i + 1 for i, character in enumerate(source) if character == "\n")]
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return []
    spans = []
    for k, t in enumerate(tokens):
        before = tokens[k - 1].type if k else tokenize.ENCODING
        after = tokens[k + 1].type if k + 1 < len(tokens) else tokenize.ENDMARKER
        alone = t.type == tokenize.STRING and before in _OPENS and after in _CLOSES
        if t.type == tokenize.COMMENT or alone:
            spans.append((starts[t.start[0] - 1] + t.start[1], starts[t.end[0] - 1] + t.end[1]))
    return spans
