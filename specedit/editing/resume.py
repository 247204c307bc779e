"""An answer that leaves out part of the file: the model is made to go on where it left it.

A small model that has made its change sometimes closes the answer right after it, leaving
out the rest of the file (the function after the one it changed, a README's last lines). The
safety checks refuse an answer that drops a large part of a file, but a short tail passes
them and would be lost without a word. Where the answer's last lines are the input's own, the
input goes on past them and what follows is nowhere in the answer, the answer is resumed: the
input's next lines, up to the first that is not blank, are given as the answer's, and the
model goes on from there as it goes on anywhere else (copying, drafted from the input,
changing what the instruction asks for). An answer that leaves out so much that the safety
checks would refuse it (it starts at the function it changes, or jumps from one function to
another) goes on the same way from where it first left the input: what it wrote after that
is drawn again. An instruction that asks to remove something may have asked for exactly
that, and is left as answered.
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from specedit.editing import safety

# How often one answer is resumed: each resume goes on from further down the file.
RESUMES = 3


def dropped_run(original: str, answer: str, instruction: str) -> tuple[int, int] | None:
    """Where `answer` left out a run of `original`'s lines, as (the index of the run's first
    line in `original`, how many of the answer's lines come before it); None where it left
    out none, or on purpose. At the answer's end, the answer's last lines must be the input's
    own (its end is the place to resume from); elsewhere, the answer must drop enough for the
    safety checks to refuse it, and the run be lines it left out with nothing in their place,
    at least DROP_MIN_LINES of them not blank (lines it replaced are its change). Either way
    most of the non-blank lines left out must be nowhere in the answer (not moved
    elsewhere)."""
    if safety.asks_for_removal(instruction):
        return None
    old, new = original.splitlines(), answer.splitlines()
    opcodes = difflib.SequenceMatcher(None, old, new, autojunk=False).get_opcodes()

    written = Counter(line.strip() for line in new if line.strip())

    def moved(first: int, last: int) -> bool:
        """Whether most of old[first:last] is in the answer more often than in the rest of
        the input: a function moved, not one left out beside its near twin."""
        rest = Counter(line.strip() for line in old[:first] + old[last:] if line.strip())
        extra = written - rest
        left_out = [line.strip() for line in old[first:last] if line.strip()]
        return not left_out or 2 * sum(line in extra for line in left_out) >= len(left_out)

    if len(opcodes) >= 2:
        (before, *_), (tag, first, last, at, _) = opcodes[-2], opcodes[-1]
        if tag == "delete" and last == len(old) and before == "equal":
            return None if moved(first, last) else (first, at)
    if safety.drop_problem(original, answer, instruction) is None:
        return None
    for tag, i1, i2, j1, _ in opcodes:
        gone = safety.non_blank(old[i1:i2])
        if tag == "delete" and gone >= safety.DROP_MIN_LINES and not moved(i1, i2):
            return i1, j1
    return None


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
    """How to make the answer `tokens` (whose text is `answer`) go on where it left out part
    of `original` (`dropped_run`), or None where it did not. The answer's tokens are kept up
    to the end of its last line before the part it left out at most (a token that runs past
    it, such as one that starts the closing fence, is given again as text)."""
    run = dropped_run(original, answer, instruction)
    if run is None:
        return None
    first, before = run
    lines = original.splitlines(keepends=True)  # CRLF stays CRLF: the answer copies it
    upto = next(i for i in range(first, len(lines)) if lines[i].strip())
    written = "".join(answer.splitlines(keepends=True)[:before])
    if written and not written.endswith(("\n", "\r")):  # its last line as the input's ends
        written += "\r\n" if lines[max(first - 1, 0)].endswith("\r\n") else "\n"
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
