"""How a candidate after the first is drawn: one small policy per way (`RedrawPolicy`), asked
in turn by a `Drawing` (editing/selection.py) until one has its say.

An answer that copied its prompt's own words is redrawn from just before them, one that could
not be right and left out lines of its input from the line it wrote after them, one that writes
what cannot run (a name nothing defines, a call or attribute that does not match) from the line
that writes it, a fix whose first two candidates could not be right, where the examples judge
it, written afresh from its function's docstring, one that fails the examples from a branch
point, an unchanged answer to a fix or an edit, and an edit that removed a definition its
instruction leaves alone, from the first candidate's next branch point, and any other is
sampled as the editing benchmarks sample and told why the last could not be right.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from specedit.editing import examples as file_examples
from specedit.editing.afresh import Afresh, function_to_write
from specedit.editing.branches import check_start, gap_start, leak_start
from specedit.editing.editor import EditRequest
from specedit.editing.safety import asks_for_removal
from specedit.editing.verdicts import PROMPT_WORDS, UNCHANGED, UNCHANGED_EDIT, UNCHANGED_FIX
from specedit.engine.options import Sampling

if TYPE_CHECKING:
    from specedit.editing.selection import Drawing

# How the extra candidates sample: the temperature and nucleus of published editing benchmarks.
SAMPLE_TEMPERATURE = 0.2
SAMPLE_TOP_P = 0.95


def sampled(sampling: Sampling, number: int) -> Sampling:
    """The sampling of candidate `number` (0 is the request's own): low-temperature nucleus
    sampling with a seed of its own, unless the request already samples."""
    if number == 0:
        return sampling
    if sampling.greedy:
        return replace(sampling, temperature=SAMPLE_TEMPERATURE, top_p=SAMPLE_TOP_P, seed=number)
    return replace(sampling, seed=(sampling.seed or 0) + number)


def redraw_feedback(problem: str) -> str:
    """What the model is told when its last candidate could not be right: an unchanged answer
    to a fix or an edit, or one the safety checks refuse."""
    if problem == UNCHANGED_FIX:
        return (
            "Your previous answer returned the file unchanged, but the file does have the "
            "problem described above. Find the line or lines that cause it and change them; "
            "keep every other line exactly as it was."
        )
    if problem == UNCHANGED_EDIT:
        return (
            "Your previous answer returned the file unchanged, but the instruction above asks "
            "for a change. Make it; keep every other line exactly as it was."
        )
    return (
        f"Your previous answer could not be used: {problem}. Return the complete file with "
        "the change applied and every other line exactly as it was."
    )


@dataclass(frozen=True)
class Redraw:
    """A candidate to draw: its request, and the function it writes afresh, whose body its
    answer gives (None: the answer is the text itself)."""

    request: EditRequest
    afresh: Afresh | None = None

    @property
    def first_change_only(self) -> bool:
        """Whether it is a fix's branch redraw, delivered with its first change only
        (`first_change`): the one that may rejoin the first answer once that change is made."""
        return self.request.steering.rejoin is not None


class RedrawPolicy(Protocol):
    """One way to draw the candidate after the first; a `Drawing` asks its policies in turn."""

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw | None:
        """Candidate `number`, after one whose `problem` it is told (None: that one may be
        right, or none produced a text); None where this policy has no say."""


class LeakRedraw:
    """A first answer that copied its prompt's own words, redrawn from where it could have
    gone otherwise just before them (`leak_start`)."""

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw | None:
        if number != 1 or problem is None or not problem.startswith(PROMPT_WORDS):
            return None
        first = drawing.first
        start = leak_start(first.result, drawing.leak_of(first), drawing.decode)
        if not start:
            return None
        return Redraw(drawing.request.steered(forced=start, statement=first.result.statement))


class GapRedraw:
    """A first answer that could not be right and left out lines of its input that its
    instruction does not ask to remove, redrawn from where it was least sure on the line it
    wrote after them (`gap_start`): the model lost its place there, mostly copying on after
    the second of two passages that read alike, and what it left out is often what the rest
    of the file needs (a definition its later lines call). A fix's keeps its first change
    only, the lines put back and what it changed among them, as a branch redraw's does."""

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw | None:
        first = drawing.first
        if number != 1 or first is None or problem is None or problem in UNCHANGED:
            return None
        request = drawing.request
        if first.verdict.failed_examples or asks_for_removal(request.instruction):
            return None
        start = gap_start(first.result, request.text, drawing.decode)
        if not start:
            return None
        return Redraw(drawing.branched(start, drawing.unchanged == UNCHANGED_FIX))


class CheckRedraw:
    """A first answer that writes what cannot run (editing/lint.py), redrawn from where it was
    least sure on the line that first writes it, up to the name, call or attribute found
    (`check_start`). A fix's keeps its first change only, as a branch redraw's does; none is
    drawn where the answer was sure of every token there, and the next policy has its say."""

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw | None:
        first = drawing.first
        if number != 1 or first is None or first.verdict.finding is None:
            return None
        finding = first.verdict.finding
        line = first.verdict.text.splitlines()[finding.line - 1]
        start = check_start(first.result, line, finding.name, drawing.decode)
        if not start:
            return None
        fix = drawing.unchanged == UNCHANGED_FIX
        return Redraw(drawing.branched(start, fix))


class ExamplesRedraw:
    """An answer that fails the examples, redrawn from the first candidate's next branch
    point while it has one, and delivered whole: the examples, not the first answer, say
    what the rest must be."""

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw | None:
        if not drawing.candidates or not drawing.candidates[-1].verdict.failed_examples:
            return None
        start = drawing.next_branch()
        if not start:
            return None
        return Redraw(drawing.branched(start, False))


class AfreshRedraw:
    """A fix with examples to judge it whose first two candidates could not be right (a
    third is drawn only then): the function the instruction names, written afresh from its
    signature and docstring (editing/afresh.py), its body put in place of the old one."""

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw | None:
        if number != 2 or drawing.examples is None or drawing.unchanged != UNCHANGED_FIX:
            return None
        fix = drawing.request
        found = function_to_write(fix.headed_text, fix.instruction)
        if found is None:
            return None
        return Redraw(found.request(fix), afresh=found)


@dataclass(frozen=True)
class BranchRedraw:
    """An unchanged answer to a fix or an edit, or an edit that removed a definition its
    instruction leaves alone (its verdict's `removed`, editing/removed.py; sampled again, a
    small model mostly removes it again), redrawn from the first candidate's next branch point
    while it has one. A fix's keeps its first change only, and so may stop once that is made
    (editing/first_change.py); an edit's is delivered whole: a translation or a rename changes
    many places."""

    fix: bool

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw | None:
        if drawing.first is None:
            return None
        if problem not in UNCHANGED and not drawing.candidates[-1].verdict.removed:
            return None
        start = drawing.next_branch()
        if not start:
            return None
        return Redraw(drawing.branched(start, self.fix))


class SampledRedraw:
    """Sampled as the editing benchmarks sample (`sampled`), told why the last candidate
    could not be right (`redraw_feedback`), or, where one failed the examples, their report
    on the last that did, which says what the code must do: what is left once no branch is."""

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw:
        request = drawing.request
        failed = (c.verdict for c in reversed(drawing.candidates) if c.verdict.failed_examples)
        if problem and (last_failed := next(failed, None)) is not None:
            feedback = file_examples.feedback(last_failed.examples.output)
        else:
            feedback = redraw_feedback(problem) if problem else request.feedback
        return Redraw(
            replace(request, sampling=sampled(request.sampling, number), feedback=feedback)
        )


def redraw_policies(unchanged: str | None, vote: bool, branches: bool = True) -> list[RedrawPolicy]:
    """The policies for the candidates after the first, in the order they are asked: votes
    are independent samples; otherwise a first answer that copied its prompt's words is
    redrawn from just before them, one that could not be right and left out lines of its input
    from the line after them, one that writes what cannot run from the line that writes it, a
    fix with examples whose first two could not be right written afresh from its docstring,
    one that fails the examples from a branch point, an unchanged answer to a fix or
    an edit (`unchanged`: what is wrong with one) or an edit that removed a definition its
    instruction leaves alone from a branch point (unless not `branches`), and any other is
    sampled."""
    if vote:
        return [SampledRedraw()]
    policies: list[RedrawPolicy] = [
        LeakRedraw(),
        GapRedraw(),
        CheckRedraw(),
        AfreshRedraw(),
        ExamplesRedraw(),
    ]
    if unchanged is not None and branches:
        policies.append(BranchRedraw(fix=unchanged == UNCHANGED_FIX))
    return [*policies, SampledRedraw()]
