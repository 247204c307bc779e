"""A fix's branch redraw keeps its first change only, and so it can stop once that is made.

A fix's redraw goes on from a branch point of its first answer (editing/selection.py: the
redraw of an unchanged fix, or of one that writes what cannot run). From its branch the model
is in the middle of changing the file and often changes more (the same call elsewhere, the
definition it calls renamed to match), while a fix changes "the line or lines that cause it":
what is delivered is the first answer with the redraw's first change made, and no other
(`first_change`).

Whatever the redraw writes once that change is over is thrown away, and on a long file that
is most of it: the rest of the file, copied again. `Rejoin` stops it there: once the answer
has changed a line of the first answer and then written more than CHANGE_GAP of its lines in
a row again, its first change is complete, and the first answer's lines that follow are what
`first_change` would deliver after it.

A redraw of a first answer that left out lines of the input puts them back, and they stand
nowhere in the answer it rejoins; their last few may stand later in it all the same, a passage
the file repeats (docstrings that end alike). Such a redraw never rejoins where that would
leave out lines of the earlier answer (`keep_lines`), but goes on until it rejoins where it
leaves none out.

A fix's first answer stops the same way against the input, once its change is one of code
(`Change`): changes to docstrings, comments, blanks and imports before it are kept and do
not stop it, and an answer that lost its place (it skipped lines) is written to its end, as
without the stop.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from enum import Enum

from specedit.editing.prompts import Lines
from specedit.editing.safety import DROP_MIN_LINES, non_blank

# Changes of a fix's branch redraw this many unchanged lines apart, or fewer, are one change
# (an even number: the diff's context on either side of a change is half of it).
CHANGE_GAP = 4
REJOINED = "rejoined"  # the stop reason of an answer that `Rejoin` ended


class Change(Enum):
    """What a change the answer completed is, for the stop of a fix's first answer."""

    MADE = "made"  # a change of what the code does: the stop ends the answer there
    NONE = "none"  # nothing the request counts (a docstring, a comment, an import): goes on
    # The answer lost its place (it dropped lines, broke the file): the stop lets it run to
    # its end, as without it, where what follows can put it right (editing/resume.py).
    ASTRAY = "astray"


def first_change(first: str, redraw: str) -> str:
    """`first` with the first of `redraw`'s changes to it made, and no other: the change a
    fix's branch redraw made where it branched (it shares the first answer's text up to
    there). Changed lines up to CHANGE_GAP unchanged ones apart count as one change (a loop's
    header and its body)."""
    old, new = first.splitlines(keepends=True), redraw.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    groups = matcher.get_grouped_opcodes(CHANGE_GAP // 2)
    change = next(iter(groups), [])
    kept: list[str] = []
    at = 0  # where `old` goes on after the change's last piece
    for _, i1, i2, j1, j2 in change:
        kept += old[at:i1] + new[j1:j2]
        at = i2
    return "".join(kept + old[at:]) if change else redraw


class Rejoin:
    """Stop condition of a redraw that keeps its first change only (`Steering.rejoin`): it
    returns REJOINED once the answer, from the first line that differs from the `earlier`
    answer's line there on, has written CHANGE_GAP + 1 lines that follow one another in
    `earlier`, from that line on. `text` then gives the answer's text: its lines so far and
    `earlier`'s after the ones it rejoined. It reads the answer from its first token, forced
    ones included. Where `weigh` is given (a fix's first answer, `Steering.rejoin_input`), it
    says what each change so completed is: only a MADE one ends the answer. With `keep_lines`
    (a redraw that puts back lines `earlier` left out) it never rejoins where that would leave
    out DROP_MIN_LINES or more non-blank lines of `earlier`; elsewhere a rejoin that leaves
    lines out is the answer's own change, shorter, as the model wrote it."""

    def __init__(
        self,
        earlier: str,
        decode_token: Callable[[int], str],
        weigh: Callable[[str], Change] | None = None,
        keep_lines: bool = False,
    ) -> None:
        self.earlier = earlier.split("\n")
        self.keep_lines = keep_lines
        # A file's leading blank lines come in one token with the input fence's line break, so
        # an answer starts at its first line of text (prompts.framed): the two are read
        # against each other from their first lines that are not blank.
        self.blank = next((at for at, line in enumerate(self.earlier) if line.strip()), 0)
        self.started = False
        # What the text the answer has come to makes of its change (a fix's first answer that
        # changed a docstring goes on: its change of code is still to come); None: every
        # change is MADE.
        self.weigh = weigh
        self.shift = 0  # `earlier`'s line number less the answer's, where they agree
        self.astray = False  # the answer lost its place: no stop
        self.starts: dict[str, list[int]] = {}  # each line of `earlier`: where it stands
        for at, line in enumerate(self.earlier):
            self.starts.setdefault(line, []).append(at)
        self.reader = Lines(decode_token)
        self.lines: list[str] = []  # the answer's complete lines
        self.changed: int | None = None  # the first of them that differs from `earlier`'s
        self.rest: int | None = None  # where `earlier` goes on once rejoined

    def __call__(self, token: int) -> str | None:
        if self.astray:
            return None
        for line in self.reader.feed(token):
            self.lines.append(line)
            at = len(self.lines) - 1
            if not self.started:
                if not line.strip():
                    continue
                self.started, self.shift = True, self.blank - at
            if self.changed is None:
                there = at + self.shift
                if there >= len(self.earlier) or line != self.earlier[there]:
                    self.changed = at
            elif (rest := self._rejoined()) is not None:
                change = self.weigh(self._joined(rest)) if self.weigh else Change.MADE
                if change is Change.MADE:
                    self.rest = rest
                    return REJOINED
                if change is Change.ASTRAY:
                    self.astray = True
                    return None
                self.changed, self.shift = None, rest - len(self.lines)
        return None

    def _joined(self, rest: int) -> str:
        """The answer's lines so far, and `earlier`'s from `rest` on."""
        return "\n".join(self.lines + self.earlier[rest:])

    def _rejoined(self) -> int | None:
        """Where `earlier` goes on after the answer's last CHANGE_GAP + 1 lines, if they start
        at its changed line or later and stand in a row in `earlier` from that line on (the
        changed line itself is one of them where the change removed lines)."""
        run = CHANGE_GAP + 1
        if self.changed is None or len(self.lines) - run < self.changed:
            return None
        window = self.lines[-run:]
        since = self.changed + self.shift  # where `earlier` stood at the answer's change
        for start in self.starts.get(window[0], ()):
            if start >= since and self.earlier[start : start + run] == window:
                if self.keep_lines and self._left_out(since, start) >= DROP_MIN_LINES:
                    return None  # any later start leaves out as many or more
                return start + run
        return None

    def _left_out(self, since: int, start: int) -> int:
        """How many more non-blank lines `earlier` has from `since` to `start` than the answer
        wrote from its change to its last CHANGE_GAP + 1 lines: what a rejoin there leaves out."""
        written = self.lines[self.changed : len(self.lines) - (CHANGE_GAP + 1)]
        return non_blank(self.earlier[since:start]) - non_blank(written)

    def text(self, answer: str) -> str:
        """The whole answer's text, given the `answer` decoded where this stop ended it."""
        if self.rest is None:
            raise ValueError("the answer has not rejoined the earlier one")
        return "\n".join(answer.split("\n")[: len(self.lines)] + self.earlier[self.rest :])
