"""Proofreading a rewritten document: the words its answer copied against the model's own doubt.

Asked to fix a document's typos, a small model copies many of them: at a misspelt word's first
token, the input's token (` sem` of `semnatic`) wins over the whole right word (` semantic`),
its runner-up there, and the rest of the misspelling follows with no doubt at all. The
document in the context pulls the answer towards copying it; the same line read without the
document does not. So each doubt is tried, and kept only where the model prefers it without
the document: a correction is kept where the model, reading the words around it and nothing
else, gives them a log-probability at least `MARGIN` above the answer's.

- a *spelling doubt*: the answer copied a word of the input, and at its first token the
  runner-up starts a longer word than the copied piece. The model goes on from the runner-up
  to the end of the line (a short generation that shares the answer's cache), and what
  differs is one word in place of the copied one;
- a *repeated word* (`to to`) that the answer copied: the model's runner-up never shows these,
  the copy being certain; the correction drops the second.

Code is not proofread: a word in a fenced block (its fence lines too) or an inline code span
is a name or a language (```` ```py ````), not a misspelling. Where the answer changed code
(a line of a fenced block, an inline code span: a link in reStructuredText), the input's is
put back, as the rewrite template asks for code and links exactly as they were.
"""

from __future__ import annotations

import difflib
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

# How much likelier (in nats) the corrected words must be than the answer's, read without the
# document: a misspelling fixed gains far more, a grammatical `that that` far less.
MARGIN = 5.0
# A copied token the model was at least this sure of is not doubted.
DOUBT_BELOW = 0.99
# The words each side of a correction that the judgement reads: enough for the grammar of a
# repeated word, few enough for a short pass.
WINDOW_WORDS = 8
# The most texts and tokens the judgement reads in one pass (a tree of that many branches fits
# llama.cpp's batch and its sequences).
PASS_TEXTS = 32
PASS_TOKENS = 256
# Tokens a doubt's line may take beyond the first answer's line before it is given up.
LINE_SLACK = 8
# The most spelling doubts tried in one answer (the least sure first): each costs a short
# generation.
MOST_DOUBTS = 16

WORD = re.compile(r"[^\W\d_]+")
REPEATED = re.compile(r"(?<![\w'])([^\W\d_]+)( +)\1(?![\w'])")
FENCE = re.compile(r"[ \t]*(```|~~~)")
UNFINISHED = "\ufffd"  # what decoding writes for part of a character
INLINE_CODE = re.compile(r"(`+)[^`\n]+?\1")


@dataclass(frozen=True)
class Correction:
    """A part of the answer replaced (a word, a code span, a line of code): on its line
    `line` (0-based), characters start..end, which read `old`, become `new`."""

    line: int
    start: int
    end: int
    old: str
    new: str

    def applied(self, line: str) -> str:
        return line[: self.start] + self.new + line[self.end :]

    def __str__(self) -> str:
        return f"{_short(self.old) or '(nothing)'} -> {_short(self.new) or '(dropped)'}"


def _short(text: str, most: int = 40) -> str:
    """`text` stripped, its middle left out where it is longer than `most` (a line of code)."""
    text = text.strip()
    return text if len(text) <= most else f"{text[: most // 2]}...{text[-most // 2 :]}"


def fenced_lines(lines: list[str]) -> set[int]:
    """The indexes of `lines` inside fenced code blocks, their fence lines included (an
    unclosed block runs to the end)."""
    inside, opened = set(), None
    for number, line in enumerate(lines):
        if FENCE.match(line):
            if opened is None:
                opened = number
            else:
                inside.update(range(opened, number + 1))
                opened = None
    if opened is not None:
        inside.update(range(opened, len(lines)))
    return inside


def code_spans(text: str) -> list[tuple[int, int]]:
    """The character spans of `text` that are code in Markdown (reStructuredText's double
    backticks too): fenced blocks with their fence lines, and inline code spans."""
    lines = text.split("\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines), initial=0))
    spans = [(starts[n], starts[n + 1]) for n in sorted(fenced_lines(lines))]
    return spans + [match.span() for match in INLINE_CODE.finditer(text)]


def restore_code(original: str, text: str) -> tuple[str, list[Correction]]:
    """`text` with the code of `original` it changed put back, and what was put back: a line
    of a fenced block replaced line for line, or an inline code span (a link in
    reStructuredText) on a line replaced with as many spans. The rewrite template asks for
    code and links exactly as they were; a typo fix has nothing to change there."""
    before, after = original.split("\n"), text.split("\n")
    fenced = fenced_lines(before)
    restored: list[Correction] = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "replace" or i2 - i1 != j2 - j1:
            continue
        for i, j in zip(range(i1, i2), range(j1, j2)):
            if i in fenced:
                restored.append(Correction(j, 0, len(after[j]), after[j], before[i]))
                continue
            theirs = list(INLINE_CODE.finditer(before[i]))
            mine = list(INLINE_CODE.finditer(after[j]))
            if len(theirs) != len(mine):
                continue
            for old, new in reversed(list(zip(mine, theirs))):
                if old.group() != new.group():
                    restored.append(Correction(j, *old.span(), old.group(), new.group()))
    return applied(after, restored), sorted(restored, key=lambda c: (c.line, c.start))


def applied(lines: list[str], corrections: list[Correction]) -> str:
    """The text of `lines` with `corrections` (none overlapping) made, right to left on each
    line, so that the columns of the others stay right."""
    lines = list(lines)
    for correction in sorted(corrections, key=lambda c: (c.line, -c.start)):
        lines[correction.line] = correction.applied(lines[correction.line])
    return "\n".join(lines)


def _in(spans: list[tuple[int, int]], offset: int) -> bool:
    return any(start <= offset < end for start, end in spans)


def spelling_doubts(
    pieces: list[str], others: list[str], probabilities: list[float], original: str
) -> list[int]:
    """The answer tokens where it copied a word of `original` while the model's runner-up
    (`others`) started a longer word with the same letters: the least sure first, at most
    MOST_DOUBTS. `pieces` are the answer's tokens as text."""
    words = set(WORD.findall(original))
    text = "".join(pieces)
    offsets = list(itertools.accumulate(map(len, pieces), initial=0))
    code = code_spans(text)
    found = []
    for position, (mine, other) in enumerate(zip(pieces, others)):
        if probabilities[position] >= DOUBT_BELOW:
            continue
        if not (mine.strip().isalpha() and other.strip().isalpha()):
            continue
        if not (other.startswith(mine) and len(other) > len(mine)):
            continue
        start = offsets[position]
        if start and text[start - 1].isalnum() and not mine[0].isspace():
            continue  # inside a word, not its first token
        copied = WORD.match(text, start + len(mine) - len(mine.lstrip()))
        if copied is None or _in(code, copied.start()):
            continue
        if copied.group() in words and copied.group() != other.strip():
            found.append(position)
    found.sort(key=lambda p: probabilities[p])
    return found[:MOST_DOUBTS]


def repeated_words(text: str, original: str) -> list[Correction]:
    """Corrections that drop the second of a word written twice in a row, outside code, where
    `original` has the same repetition (the answer copied it)."""
    code = code_spans(text)
    corrections, offset = [], 0
    for number, line in enumerate(text.split("\n")):
        for match in REPEATED.finditer(line):
            if match.group() in original and not _in(code, offset + match.start()):
                word = match.group(1)
                corrections.append(
                    Correction(number, match.start(), match.end(), match.group(), word)
                )
        offset += len(line) + 1
    return corrections


def line_change(before: str, after: str, start: int) -> Correction | None:
    """`after` as one word of `before` replaced at or after column `start` (the two agree
    before it), or None where they differ otherwise (more than one word, or spacing)."""
    end = len(before)
    shift = len(after) - len(before)
    while end > start and end + shift > start and before[end - 1] == after[end + shift - 1]:
        end -= 1
    while end < len(before) and before[end].isalpha():
        end += 1  # to the end of the word: the two may end alike ("semnatic", "semantic")
    old, new = before[start:end], after[start : end + shift]
    old_core, new_core = old.strip(), new.strip()
    if not (old_core.isalpha() and new_core.isalpha()) or old_core == new_core:
        return None
    if old.replace(old_core, "", 1) != new.replace(new_core, "", 1):
        return None  # the spaces around the word changed too
    return Correction(-1, start, end, old, new)


def token_texts(tokens: list[int], decode: Callable[[list[int]], str]) -> list[str]:
    """Each token's characters in the text `tokens` write. A character that takes several
    tokens (`╭`, an emoji) belongs to the one that completes it; the others write none."""
    pieces = [decode([token]) for token in tokens]
    if UNFINISHED not in "".join(pieces):
        return pieces
    whole = decode(tokens)
    ends = [len(decode(tokens[: k + 1]).rstrip(UNFINISHED)) for k in range(len(tokens))]
    return [whole[start:end] for start, end in zip([0, *ends], ends)]


def log_probabilities(lm, texts: list[str]) -> list[float]:
    """log p(text) under the model for each of `texts`, each after a line break and nothing
    else: words as the model reads them without the document they were copied from. The
    texts go in as the branches of a tree, sharing the tokens they start with, as many to a
    pass as fit one (PASS_TEXTS, PASS_TOKENS)."""
    ids = [lm.tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    scores: list[float] = []
    while len(scores) < len(ids):
        batch, size = [], 0
        for text in ids[len(scores) :]:
            if batch and (len(batch) == PASS_TEXTS or size + len(text) > PASS_TOKENS):
                break
            batch.append(text)
            size += len(text)
        scores += _tree_scores(lm, batch)
    return scores


def _tree_scores(lm, texts: list[list[int]]) -> list[float]:
    """`log_probabilities` of token lists in one pass."""
    import numpy as np  # here: a remote client (the server proofreads) never loads NumPy

    from specedit.engine.arrays import as_numpy, softmax
    from specedit.engine.target import open_target
    from specedit.engine.tree import DraftTree

    tree = DraftTree(lm.tokenizer("\n", add_special_tokens=False)["input_ids"][-1])
    children: dict[tuple[int, int], int] = {}  # (parent node, token) -> node
    paths = []
    for text in texts:
        node, path = 0, []
        for token in text:
            if (node, token) not in children:
                children[node, token] = tree.add(token, node)
            path.append((node, token))
            node = children[node, token]
        paths.append(path)
    target = open_target(lm.model, len(tree) + 8, reuse=False)
    target.prefill([], False)  # empties a cache a generation left
    logits = as_numpy(target.forward(tree, 0, False).logits).astype(np.float64)
    chances = {parent: np.log(softmax(logits[parent])) for parent in {p for p, _ in children}}
    return [float(sum(chances[parent][token] for parent, token in path)) for path in paths]


def window(line: str, correction: Correction, words: int = WINDOW_WORDS) -> tuple[str, str]:
    """The words around `correction` on its `line`, as the answer wrote them and corrected:
    up to `words` words each side, what the judgement reads."""
    starts = [m.start() for m in re.finditer(r"\S+", line[: correction.start])]
    first = starts[-words] if len(starts) >= words else 0
    ends = [m.end() for m in re.finditer(r"\S+", line[correction.end :])]
    last = correction.end + ends[words - 1] if len(ends) >= words else len(line)
    before = line[first:last]
    return before, line[first : correction.start] + correction.new + line[correction.end : last]


def proofread(
    text: str,
    original: str,
    tokens: list[int],
    probabilities: list[float],
    runners_up: list[int],
    decode: Callable[[list[int]], str],
    go_on: Callable[[list[int], int], str | None],
    score: Callable[[list[str]], list[float]],
) -> tuple[str, list[Correction]]:
    """`text` (the answer, written by `tokens`) with the corrections the model keeps, and
    those corrections. `go_on(start, most)` is the answer's text from the last token of
    `start` to the end of its line, as the model goes on from `start` (None: the line did not
    end within `most` tokens); `score(texts)` their log-probabilities read alone
    (`log_probabilities`)."""
    pieces = token_texts(tokens, decode)
    if not "".join(pieces).startswith(text):
        return restore_code(original, text)  # the tokens do not write this text: no doubts
    lines = text.split("\n")
    offsets = list(itertools.accumulate(map(len, pieces), initial=0))
    proposed = repeated_words(text, original)
    others = [decode([token]) for token in runners_up]
    # The latest first: each goes on from an answer prefix the cache already holds.
    doubts = spelling_doubts(pieces, others, probabilities, original)
    for position in sorted((p for p in doubts if offsets[p] < len(text)), reverse=True):
        line = text.count("\n", 0, offsets[position])
        column = offsets[position] - (text.rfind("\n", 0, offsets[position]) + 1)
        end = next((k for k in range(position, len(pieces)) if "\n" in pieces[k]), len(pieces))
        written = go_on([*tokens[:position], runners_up[position]], end - position + LINE_SLACK)
        if written is None:
            continue
        change = line_change(lines[line], lines[line][:column] + written.split("\n")[0], column)
        if change is not None:
            proposed.append(replace(change, line=line))
    proposed.sort(key=lambda c: (c.line, -c.start))  # right to left on each line
    windows = [window(lines[c.line], c) for c in proposed]
    scores = score([words for pair in windows for words in pair]) if proposed else []
    kept: list[Correction] = []
    for k, correction in enumerate(proposed):
        if kept and kept[-1].line == correction.line and correction.end > kept[-1].start:
            continue  # overlaps one kept already (a doubled word misspelt, say)
        if scores[2 * k + 1] - scores[2 * k] >= MARGIN:
            kept.append(correction)
    text, restored = restore_code(original, applied(lines, kept))
    return text, sorted(kept + restored, key=lambda c: (c.line, c.start))
