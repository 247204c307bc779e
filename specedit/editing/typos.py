"""Keeping a typo fix to typos: what a rewrite asked only for typos changed beyond them goes back.

Asked to fix a document's typos, a small model also makes changes nobody asked for: an Oxford
comma, an article it finds missing (`From root` -> `From the root`), lines it leaves out. The
user asked for typos and gets a diff to review line by line, or a pre-commit hook that rewrites
their prose. So where the instruction asks for nothing but typos (`asks_for_typos_only`), each
change of the answer is kept only where it is one a typo fix makes (`is_typo_fix`): a word
respelt (a few letters changed, added, dropped or swapped), a word written twice made once, or
words split or joined; anything else is put back as the input had it (`keep_to_typos`).
"""

from __future__ import annotations

import difflib
import functools
import itertools
import re

from specedit.editing.proofread import Correction

# An instruction that asks for typos only: every word of it is one of these, and one of them
# names typos. Anything else (`and make it shorter`) may ask for a change a typo fix never makes.
TYPO_WORDS = frozenset(
    {"typo", "typos", "spelling", "misspelling", "misspellings", "misspelt", "misspelled"}
    | {"doubled", "repeated"}
)
TYPOS_ONLY_WORDS = TYPO_WORDS | {
    *("fix", "correct", "the", "a", "any", "all", "in", "this", "these", "and", "please", "just"),
    *("readme", "document", "documents", "file", "files", "text", "docs"),
    *("mistake", "mistakes", "error", "errors", "word", "words"),
    *("change", "nothing", "else", "only", "leave", "rest", "as", "is", "it", "keep", "unchanged"),
}
# A document's text as a diff reads it: words (with their apostrophes), runs of white space,
# and each other character alone.
TOKEN = re.compile(r"\w+(?:['’]\w+)*|\s+|[^\w\s]", re.S)
WORD = re.compile(r"\w+(?:['’]\w+)*")
# A change larger than this (its tokens before times after) is judged whole, not realigned: a
# paragraph rewritten, which no typo fix makes.
REALIGN_MOST = 40_000


def asks_for_typos_only(instruction: str) -> bool:
    """Whether `instruction` asks for typo fixes and nothing else (`Fix the typos`, `Correct
    the spelling mistakes, nothing else`)."""
    words = re.findall(r"[a-z]+", instruction.lower())
    return any(w in TYPO_WORDS for w in words) and all(w in TYPOS_ONLY_WORDS for w in words)


def respelling_distance(old: str, new: str) -> int:
    """The letters changed, added, dropped or swapped with their neighbour to turn `old` into
    `new` (the optimal string alignment distance), case aside."""
    old, new = old.lower(), new.lower()
    rows = [list(range(len(new) + 1))]
    for i in range(1, len(old) + 1):
        row = [i] + [0] * len(new)
        for j in range(1, len(new) + 1):
            row[j] = min(
                rows[-1][j] + 1,
                row[j - 1] + 1,
                rows[-1][j - 1] + (old[i - 1] != new[j - 1]),
            )
            if i > 1 and j > 1 and old[i - 1] == new[j - 2] and old[i - 2] == new[j - 1]:
                row[j] = min(row[j], rows[-2][j - 2] + 1)
        rows.append(row)
    return rows[-1][-1]


def is_typo_fix(before: list[str], old: list[str], new: list[str], after: list[str]) -> bool:
    """Whether replacing the tokens `old` by `new` (`before` and `after` are the input's two
    tokens each side of them) is what a typo fix does: on one line, a word respelt by at most
    one letter (two from five letters up; its case aside), a word written twice made once, or
    words split or joined."""
    old_text, new_text = "".join(old), "".join(new)
    if "\n" in old_text or "\n" in new_text:
        return False  # lines added, dropped, joined or split
    old_words, new_words = WORD.findall(old_text), WORD.findall(new_text)
    squeezed_old, squeezed_new = re.sub(r"\s", "", old_text), re.sub(r"\s", "", new_text)
    if squeezed_old != "".join(old_words) or squeezed_new != "".join(new_words):
        return False  # punctuation changed
    if not new_words:  # only the second of a word written twice may go: `the the` -> `the`
        neighbours = [token for token in before + after if WORD.fullmatch(token)]
        return len(old_words) == 1 and old_words[0] in neighbours
    if not old_words or max(len(old_words), len(new_words)) > 2:
        return False  # a word added, or more than a word's change
    return _respelt(squeezed_old, squeezed_new)


@functools.lru_cache(maxsize=4096)
def _respelt(old: str, new: str) -> bool:
    """Whether `old` and `new` are words a typo fix would turn one into the other (the same but
    for their case, or respelt by one letter, two from five letters up)."""
    if abs(len(old) - len(new)) > 2 or not (WORD.fullmatch(old) and WORD.fullmatch(new)):
        return False
    return respelling_distance(old, new) <= (2 if max(len(old), len(new)) >= 5 else 1)


def _matched(old: str, new: str) -> int:
    """What pairing token `old` with `new` is worth to `realigned`: 2 alike, 1 respelt, 0."""
    return 2 if old == new else 1 if _respelt(old, new) else 0


def realigned(old: list[str], new: list[str]) -> list[tuple[str, int, int, int, int]]:
    """The opcodes (as difflib's) of a change that holds a typo fix and more (`tabels.` and the
    lines after it -> `tables.`): the tokens aligned once more, a respelt word pairing with the
    word it respells, so that the fix and the rest are judged apart."""
    # best[i][j]: the most matched tokens of old[i:] and new[j:] (`_matched`).
    best = [[0] * (len(new) + 1) for _ in range(len(old) + 1)]
    for i in range(len(old) - 1, -1, -1):
        for j in range(len(new) - 1, -1, -1):
            pair = _matched(old[i], new[j])
            matched = best[i + 1][j + 1] + pair if pair else 0
            best[i][j] = max(best[i + 1][j], best[i][j + 1], matched)
    opcodes: list[tuple[str, int, int, int, int]] = []
    i = j = i_open = j_open = 0

    def close(i_end: int, j_end: int) -> None:
        if i_open < i_end or j_open < j_end:
            opcodes.append(("replace", i_open, i_end, j_open, j_end))

    while i < len(old) and j < len(new):
        pair = _matched(old[i], new[j])
        if pair and best[i][j] == best[i + 1][j + 1] + pair:
            close(i, j)
            opcodes.append(("equal" if pair == 2 else "replace", i, i + 1, j, j + 1))
            i, j = i + 1, j + 1
            i_open, j_open = i, j
        elif best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    close(len(old), len(new))
    return opcodes


def keep_to_typos(original: str, text: str) -> tuple[str, list[Correction]]:
    """`text` (an answer to an instruction that asked for typos only) with each change from
    `original` that a typo fix would not make put back as `original` had it, and what was
    put back: as Corrections on the lines of `text` (a change that spans lines runs past its
    line's end)."""
    old, new = TOKEN.findall(original), TOKEN.findall(text)
    pieces: list[str] = []
    put_back: list[Correction] = []
    starts = list(itertools.accumulate(map(len, new), initial=0))  # each token's in `text`

    def fixes_a_typo(i1: int, i2: int, j1: int, j2: int) -> bool:
        before, after = old[max(i1 - 2, 0) : i1], old[i2 : i2 + 2]  # what is_typo_fix reads
        return is_typo_fix(before, old[i1:i2], new[j1:j2], after)

    def take(i1: int, i2: int, j1: int, j2: int, kept: bool) -> None:
        offset = starts[j1]  # where in `text` the change starts
        theirs, mine = "".join(old[i1:i2]), "".join(new[j1:j2])
        pieces.append(mine if kept else theirs)
        if not kept:
            line = text.count("\n", 0, offset)
            column = offset - (text.rfind("\n", 0, offset) + 1)
            put_back.append(Correction(line, column, column + len(mine), mine, theirs))

    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal" or fixes_a_typo(i1, i2, j1, j2):
            take(i1, i2, j1, j2, True)
        elif (i2 - i1) * (j2 - j1) > REALIGN_MOST:
            take(i1, i2, j1, j2, False)
        else:
            for part, a1, a2, b1, b2 in realigned(old[i1:i2], new[j1:j2]):
                spans = (i1 + a1, i1 + a2, j1 + b1, j1 + b2)
                take(*spans, part == "equal" or fixes_a_typo(*spans))
    return "".join(pieces), put_back
