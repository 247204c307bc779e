"""An answer that stops before the end of the file: the model is made to go on.

A small model that has made its change sometimes closes the answer right after it, leaving
out the rest of the file (the function after the one it changed, a README's last lines). The
safety checks refuse an answer that drops a large part of a file, but a short tail passes
them and would be lost without a word. Where the answer's last lines are the input's own, the
input goes on past them and what follows is nowhere in the answer, the answer is resumed: the
input's next lines, up to the first that is not blank, are given as the answer's, and the
model goes on from there as it goes on anywhere else (copying, drafted from the input,
changing what the instruction asks for). An instruction that asks to remove something may
have asked for exactly that end, and is left as answered.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass

from specedit.editing import safety

# How often one answer is resumed: each resume goes on from further down the file.
RESUMES = 3


def dropped_tail(original: str, answer: str, instruction: str) -> int | None:
    """The index of the first of `original`'s lines that `answer` left out at its end (None:
    it left out none, or on purpose). The answer's last lines must be the input's own (its end
    is the place to resume from), and most of the non-blank lines it left out must be nowhere
    in it (not moved elsewhere)."""
    if safety.asks_for_removal(instruction):
        return None
    old, new = original.splitlines(), answer.splitlines()
    opcodes = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()
    if len(opcodes) < 2:
        return None
    (before, *_), (tag, first, last, *_) = opcodes[-2], opcodes[-1]
    if tag != "delete" or last != len(old) or before != "equal":
        return None
    left_out = [line.strip() for line in old[first:] if line.strip()]
    kept = {line.strip() for line in new}
    if not left_out or 2 * sum(line in kept for line in left_out) >= len(left_out):
        return None
    return first


@dataclass(frozen=True)
class Resume:
    """Where an answer goes on: its first `kept` tokens, then `given` (the input's next lines)."""

    kept: int
    given: str
    line: int  # the input's line (1-based) the answer goes on at


def resume(
    original: str,
    answer: str,
    instruction: str,
    tokens: list[int],
    decode: Callable[[list[int]], str],
) -> Resume | None:
    """How to make the answer `tokens` (whose text is `answer`) go on where it left out the
    end of `original`, or None where it did not. The answer's tokens are kept up to the end
    of its last line at most (a token that runs past it, such as one that starts the closing
    fence, is given again as text)."""
    first = dropped_tail(original, answer, instruction)
    if first is None:
        return None
    lines = original.splitlines(keepends=True)  # CRLF stays CRLF: the answer copies it
    upto = next(i for i in range(first, len(lines)) if lines[i].strip())
    written = answer
    if not written.endswith(("\n", "\r")):  # its last line as the input's ends
        written += "\r\n" if lines[first - 1].endswith("\r\n") else "\n"
    target = written + "".join(lines[first : upto + 1])
    kept = _longest_prefix(tokens, decode, target)
    return Resume(kept, target[len(decode(tokens[:kept])) :], upto + 1)


def _longest_prefix(tokens: list[int], decode: Callable[[list[int]], str], text: str) -> int:
    """How many of `tokens` write a start of `text`, found by bisection (an answer has
    thousands of tokens; a prefix that runs off `text` stays off it)."""
    low, high = 0, len(tokens)
    while low < high:
        middle = (low + high + 1) // 2
        if text.startswith(decode(tokens[:middle])):
            low = middle
        else:
            high = middle - 1
    return low
