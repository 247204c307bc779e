"""Choosing among several candidate edits of one request, without tests.

Speculative decoding makes another candidate cheap (the copied part is verified many tokens a
pass; only the changed part costs), so an edit may draw more than one and keep the best; what
each is worth, knowable without running anything, is editing/verdicts.py's.

`draw` is the loop (the first candidate as the request asks, greedy by default; the others
sampled as the editing benchmarks sample); `choose` is the pick by agreement, where all are
drawn (`--vote`). `draw_edits` runs the loop on one request: a `Drawing` holds
what it drew so far, its redraw policies (editing/redraws.py) each say how a candidate after
the first may be drawn, and each `Candidate` carries its result, the attribution of its tokens and
its verdict to the delivery, which reads the safety checks' findings there instead of running
them again. The request's mode (fix, edit, rewrite: the command) says which can be right.

An unchanged answer to a fix is redrawn where it was least sure (editing/branches.py): the model
copied the bug, but the token it copied there often had a close second, and that second is
often the fix. The functions the instruction names come first: a symptom is described where
it shows, and that is mostly where the bug is. An unchanged edit is redrawn the same way,
where the change it asks for would start (in comments and docstrings first where the
instruction speaks of them). The redraw takes that second token and goes on
as the request asks; its prompt and the answer up to the branch are those of the first
candidate, so an engine that keeps its cache (llama.cpp) computes only what follows the
branch. Sampling again rarely helps there: a model that copied the bug at temperature 0
mostly copies it at 0.2 too.

A fix's redraw is delivered with the change it made where it branched and no other
(`first_change`), so it stops once that change is made and the first answer gives the rest
(editing/first_change.py); a fix's first answer stops once it has changed the code, and the
input gives the rest. A fix that changed the file is delivered as it is: a second look
redrawn from its first doubt gained on neither the suite nor HumanEvalFix once unchanged code
counted as unchanged and the examples judged (docs/quality.md, "What each step gains").

An answer that writes what cannot run where the input did not (editing/lint.py: a helper never
written, `Dict` with no import, a variable or method renamed in one place only, a call its
definition does not take) is wrong too, and redrawn from where it was least sure on the line that
first writes it (`CheckRedraw`). So is an edit of Python that no longer defines a function, class
or method of the input its instruction leaves alone (editing/removed.py: a new method written over
the one beside it), redrawn from its branch points as an unchanged edit is.

An edit of Python whose answer never writes a new name its instruction writes as code, or never
adds a raise it asks for (editing/asked.py: a `discontinue(sku)` method asked for beside a
refactor, a `ValueError` for a zero divisor beside a fix of operand order) is not refused for
it (drawn again and told, the model leaves it out again) but has the instruction's sentences
that name it asked for on their own, of that answer (`Drawing.rest`); what it still leaves out
is warned of.

With `--examples` (editing/examples.py), an answer that fails the file's own `>>>` examples is
wrong too, and redrawn from the first candidate's next branch point (`ExamplesRedraw`); where
none passes them, the one a draw without them would have delivered is. The candidates they
ask for past the two a draw makes are drawn for a short text only (SHORT_TEXT_TOKENS): of a
long one, each is a rewrite of the whole, sampled.

An answer that copies a sentence of its prompt's own words (`copied_from_prompt`: "Return the
complete edited file ..." inside a docstring that paraphrased the instruction) is wrong, and
redrawn from where it could have gone otherwise just before that sentence (`leak_start`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from specedit.editing import asked
from specedit.editing import examples as file_examples
from specedit.editing.branches import branch_points
from specedit.editing.checks import CheckResult
from specedit.editing.editor import UNSTEERED, EditError, EditRequest, EditResult, Mode
from specedit.editing.first_change import first_change
from specedit.editing.redraws import Redraw, redraw_policies
from specedit.editing.region import named_lines
from specedit.editing.verdicts import (
    PROMPT_WORDS,
    UNCHANGED_FIX,
    Verdict,
    choose,
    copied_from_prompt,
    judge,
    judged_language,
    prompt_words,
    read_code,
    unchanged_problem,
)

R = TypeVar("R")  # what one edit returns: a local result, a bench row
# An instruction about a file's prose: where its change would start, a comment or a docstring.
PROSE_WORDS = re.compile(r"\b(?:comments?|docstrings?|doc strings?|documentation)\b", re.I)

# Candidates an edit may draw unless told: a second one where the first cannot be right (an
# unchanged fix or edit, an unsafe answer), which wins on the suite (docs/quality.md, "--samples").
DEFAULT_SAMPLES = 2
# ... and where the file's examples judge them: where the first answer fails the examples, a
# redraw from its first doubt, the function written afresh (a fix's), and five more redraws,
# drawn only while every candidate fails them (docs/quality.md, "Eight candidates where the
# examples judge").
EXAMPLES_SAMPLES = 8
# The candidates past `count` that the examples ask for are drawn only where the text an
# answer writes again (a region, a file edited whole) is this short: beyond it each one more is
# a sampled rewrite of a long text, costing far more than the first answer did (docs/quality.md,
# "Extra candidates for short texts only").
SHORT_TEXT_TOKENS = 1024
# The steps of a draw that `Samples.without` may leave out: the redraws of an unchanged answer
# from its branch points (it is sampled and told so instead), a fix's first answer stopping
# once its change is made (it is written to its end instead), and the extra candidates kept
# to short texts (a long one draws them too).
UNCHANGED_REDRAWS = "unchanged"
FIRST_STOP = "stop"
SHORT_ONLY = "short"
# An edit whose delivered answer never writes a new name its instruction writes as code, or
# never adds a raise it asks for (editing/asked.py), has the instruction's sentences that name
# it asked for on their own, of that answer: told the whole again, a small model leaves the
# part out again; asked for that part alone, it writes it (docs/quality.md, "Names asked for
# that the answer never writes").
REST = "rest"
STEPS = (UNCHANGED_REDRAWS, FIRST_STOP, SHORT_ONLY, REST)


@dataclass(frozen=True)
class Samples:
    """`--samples N [--vote]`: how many candidates an edit may draw, and how one is chosen."""

    count: int = 1
    vote: bool = False  # draw all `count` and keep the one the others agree with
    # Whether the file's examples judge each candidate, and how they run (editing/examples.py);
    # where they do, up to `checked` candidates (0: `count`), those past `count` for a short
    # text only (SHORT_TEXT_TOKENS).
    examples: file_examples.Examples = file_examples.Examples.OFF
    checked: int = 0
    # Steps of the draw left out (`STEPS`), so that the bench can set what each gains against
    # the default (docs/quality.md, "What each step gains"); none where an edit runs.
    without: frozenset[str] = frozenset()

    def judged_by_examples(self) -> Samples:
        """These samples where the examples judge the candidates: up to `checked` of them."""
        return replace(self, count=self.checked or self.count)


ONE = Samples()


@dataclass(frozen=True)
class Candidate:
    """One candidate edit: the editor's result with the text it delivers (a fix's branch
    redraw: the first answer with the redraw's first change made), its number among those
    drawn (from 0), the attribution of its tokens where the caller made one (the CLI's, as the
    dashboard showed them: editing knows no view), its verdict once judged, and the function
    it wrote afresh where it is that candidate (editing/afresh.py). Replaced,
    never changed: each carries its own attribution to the delivery."""

    result: EditResult
    number: int = 0
    attribution: Any = None
    verdict: Verdict | None = None
    afresh: str | None = None  # the function it wrote afresh from its docstring, if it did

    @property
    def text(self) -> str:
        return self.result.text


# One edit as the caller makes it: the editor's result alone (the bench), or a Candidate with
# the attribution of its tokens (the CLI).
Make = Callable[[EditRequest], EditResult | Candidate]


def as_candidate(made: EditResult | Candidate, number: int) -> Candidate:
    """What `Make` returned, as candidate `number`."""
    if isinstance(made, Candidate):
        return replace(made, number=number)
    return Candidate(made, number)


def redraw_starts(
    first: EditResult, request: EditRequest, decode: Callable[[list[int]], str], limit: int
) -> list[tuple[int, ...]]:
    """Up to `limit` starts for redraws of `first`, an answer to `request` made with its
    `choices` (`branch_points`, the definitions the instruction names first; the prose first
    for an edit whose instruction speaks of comments or docstrings, never for a fix: a fix
    changes what the code does)."""
    generation = first.generation
    prose = request.mode != Mode.FIX and PROSE_WORDS.search(request.instruction)
    # Counted in the answer's lines: the input it rewrites (a region's, where it has one)
    # without the leading blank lines no answer writes (prompts.framed).
    shown, skipped = first.prompt.text, first.prompt.leading_blank.count("\n")
    return branch_points(
        generation.tokens,
        generation.probabilities,
        generation.runners_up,
        decode,
        limit,
        {line - skipped for line in named_lines(request.instruction, shown)},
        request.language,
        bool(prose),
    )


def draw(
    run: Callable[[int, str | None], R | None],
    verdict_of: Callable[[R], Verdict],
    original: str,
    samples: int,
    vote: bool,
    may_draw: Callable[[int], bool] = lambda number: True,
) -> tuple[R | None, list[Verdict]]:
    """Draw up to `samples` candidates with `run(number, problem)` (None: that edit failed, e.g.
    cut off) while `may_draw(number)`, and pick one. Without `vote`, drawing stops at the first
    acceptable candidate (an unchanged answer to a fix or an edit, or an unsafe one, draws
    another, told of the last one's `problem`); with `vote`, all are drawn independently
    (`problem` None) and `choose` picks by agreement. Where none is acceptable, the first that
    failed the examples alone is delivered, else the first that left out no lines of its input.
    Returns the chosen result (None if every edit failed) and the verdicts of the candidates
    that produced a text, in order."""
    results: list[R] = []
    verdicts: list[Verdict] = []
    for number in range(samples):
        if not may_draw(number):
            break
        last = verdicts[-1].problem if verdicts and not vote else None
        result = run(number, last)
        if result is not None:
            results.append(result)
            verdicts.append(verdict_of(result))
            if not vote and verdicts[-1].acceptable:
                return result, verdicts
    if not results:
        return None, verdicts
    if vote:
        return results[choose(verdicts, original)], verdicts
    # None passed the examples, which then tell nothing: the one delivered is the one the
    # draw without them would have delivered, the first that failed them alone.
    untested = [i for i, verdict in enumerate(verdicts) if verdict.failed_examples]
    if untested:
        return results[untested[0]], verdicts
    # None could be right: the first is delivered with its problem, unless it left out lines
    # of its input and another did not (an unchanged answer loses nothing where it is written).
    whole = [i for i, verdict in enumerate(verdicts) if not verdict.left_out_lines]
    return results[whole[0] if whole else 0], verdicts


class Drawing:
    """One `draw_edits` under way: the candidates drawn so far and the first one's branch
    points, listed once when first asked for. `candidate` is `draw`'s `run`."""

    def __init__(
        self,
        make: Make,
        request: EditRequest,
        whole: Callable[[str], str],
        samples: Samples,
        decode: Callable[[list[int]], str],
        examples: Callable[[str], CheckResult] | None = None,
    ) -> None:
        self.make = make
        self.whole = whole
        self.decode = decode
        self.examples = examples
        self.branch_limit = samples.count - 1
        self.unchanged = unchanged_problem(request.mode, judged_language(request))
        if request.mode == Mode.REWRITE and not samples.vote:
            request = request.steered(proofread=True, choices=True)
        self.request = request
        self.original = whole(request.text)
        # The first keeps what its redraws may branch on: an unchanged answer branches. A fix's
        # first stops once its change is made: a fix changes the line or lines that cause the
        # bug, and the rest of the file is the input's.
        branches = self.unchanged is not None and not samples.vote
        stops = self.unchanged == UNCHANGED_FIX and not samples.vote
        self.opening = request.steered(
            choices=branches or request.steering.choices,
            rejoin_input=stops and FIRST_STOP not in samples.without,
        )
        self.policies = redraw_policies(
            self.unchanged, samples.vote, branches=UNCHANGED_REDRAWS not in samples.without
        )
        self.candidates: list[Candidate] = []  # those that produced a text, judged
        self.failures: list[EditError] = []
        self.branches: list[tuple[int, ...]] | None = None

    @property
    def first(self) -> Candidate | None:
        """The first candidate that produced a text: what redraws branch from."""
        return self.candidates[0] if self.candidates else None

    @property
    def short(self) -> bool:
        """Whether the text an answer writes again is short (SHORT_TEXT_TOKENS), as the first
        candidate's prompt counts it; not known before one produced a text."""
        prompt = self.first.result.prompt if self.first else None
        return prompt is not None and prompt.input_end - prompt.input_start <= SHORT_TEXT_TOKENS

    def next_branch(self) -> tuple[int, ...] | None:
        """The next start for a redraw of the first candidate, its branch points listed once."""
        if self.branches is None:
            self.branches = redraw_starts(
                self.first.result, self.request, self.decode, self.branch_limit
            )
        return self.branches.pop(0) if self.branches else None

    def branched(self, start: tuple[int, ...], rejoin: bool) -> EditRequest:
        """The request of a redraw of the first candidate from `start`: it goes on from the
        first one's statement, and with `rejoin` is delivered with its first change only and
        may stop once that is made (`Redraw.first_change_only`)."""
        first = self.first
        return self.request.steered(
            forced=start,
            statement=first.result.statement,
            rejoin=first.text if rejoin else None,
        )

    def candidate(self, number: int, problem: str | None) -> Candidate | None:
        """Candidate `number`, judged, as the first policy with a say draws it (None: its edit
        failed)."""
        if number == 0:
            redraw = Redraw(self.opening)
        else:
            redraw = next(
                found
                for policy in self.policies
                if (found := policy.redraw(self, number, problem)) is not None
            )
        made = self.made(redraw.request, number)
        if made is None:
            return None
        if redraw.afresh is not None:  # the answer is the function: its body goes in the text
            request = self.request  # a region's imports are the file's, out of its reach
            text = redraw.afresh.put_in(
                request.headed_text, made.text, request.surroundings is None
            )
            if text is None:
                name = redraw.afresh.name
                self.failures.append(EditError(f"the answer written afresh has no {name}()"))
                return None
            result = replace(made.result, text=text, before_passes={})
            made = replace(made, result=result, afresh=redraw.afresh.name)
        if redraw.first_change_only:  # its change where it branched, the first's text elsewhere
            text = first_change(self.first.text, made.text)
            before = {
                name: kept
                for name, earlier in made.result.before_passes.items()
                if (kept := first_change(self.first.text, earlier)) != text
            }
            made = replace(made, result=replace(made.result, text=text, before_passes=before))
        return self.judged(made)

    def made(self, request: EditRequest, number: int) -> Candidate | None:
        """Candidate `number` as `make` makes it for `request`, not judged yet (None: its edit
        failed, and the failure is kept)."""
        try:
            return as_candidate(self.make(request), number)
        except EditError as exc:
            self.failures.append(exc)
            return None

    def judged(self, made: Candidate, instruction: str | None = None) -> Candidate:
        """`made` with its verdict (`judge`), kept among the candidates drawn."""
        judged = replace(made, verdict=self.judge(made, instruction))
        self.candidates.append(judged)
        return judged

    def rest(self, delivered: Candidate) -> Candidate:
        """Where `delivered` never writes a name or adds a raise its instruction asks for (its
        verdict's `absent`), the sentences that name it (`asked.sentences_naming`) asked for
        on their own, of its answer, and that answer judged against the input as every
        candidate is: delivered where it could be right and leaves out fewer, else
        `delivered`."""
        verdict = delivered.verdict
        part = asked.sentences_naming(self.request.instruction, verdict.absent)
        if part is None:
            return delivered
        request = replace(
            self.request, text=delivered.text, instruction=part, feedback="", steering=UNSTEERED
        )
        made = self.made(request, len(self.candidates) + len(self.failures))
        if made is None:
            return delivered
        before = {**made.result.before_passes, REST: delivered.text}
        judged = self.judged(replace(made, result=replace(made.result, before_passes=before)), part)
        fewer = len(judged.verdict.absent) < len(verdict.absent)
        return judged if judged.verdict.acceptable and fewer else delivered

    def judge(self, candidate: Candidate, instruction: str | None = None) -> Verdict:
        """`judge` on the whole text, after the check for the prompt's own words (those of the
        instruction it was asked with, `instruction` where not the request's), then the
        examples where they judge."""
        answer = self.whole(candidate.text)
        if answer != self.original and (sentence := self.leak_of(candidate, instruction)):
            return Verdict(answer, f"{PROMPT_WORDS} ({sentence!r})")
        request = self.request
        judged_with = (self.original, answer, request.instruction, request.language, self.unchanged)
        # A body written afresh replaces one function's body and keeps every other line, so
        # lines it drops are not the answer losing its place: the examples judge it instead.
        shorter = candidate.afresh is not None and self.examples is not None
        if self.examples is None:
            return judge(*judged_with)
        verdict = judge(*judged_with, drops=not shorter, read=False)
        if verdict.acceptable:
            # The answer's code is read on a thread while its examples run in a process of
            # their own, on the other core; their outcome counts only where it reads clean.
            with ThreadPoolExecutor(max_workers=1) as reading:
                read = reading.submit(read_code, verdict, self.original, request.language)
                ran = self.examples(answer)
                verdict = read.result()
        if verdict.acceptable:
            problem = None if ran.passed else f"{file_examples.FAILED} ({ran.summary()})"
            if problem and shorter and not (strict := judge(*judged_with)).acceptable:
                # shorter and failing them: refused, never delivered as the draw's fallback
                return replace(strict, problem=f"{problem}, and {strict.problem}")
            return replace(verdict, problem=problem, examples=ran)
        return verdict

    def leak_of(self, candidate: Candidate, instruction: str | None = None) -> str | None:
        """The sentence of its prompt's own words `candidate` copied (`copied_from_prompt`),
        the instruction it was asked with (`instruction`, else the request's) set aside."""
        asked_with = instruction or self.request.instruction
        words = prompt_words(candidate.result, asked_with, self.decode)
        return copied_from_prompt(self.whole(candidate.text), self.original, words)


@dataclass(frozen=True)
class Drawn:
    """What `draw_edits` drew: the candidate to deliver (None if every edit failed), the
    candidates that produced a text, judged, in order, and the errors of those that did not
    (cut off, runaway)."""

    delivered: Candidate | None
    candidates: tuple[Candidate, ...]
    failures: tuple[EditError, ...]

    @property
    def chosen(self) -> EditResult | None:
        """The delivered candidate's result."""
        return self.delivered.result if self.delivered else None

    @property
    def problems(self) -> list[str]:
        refused = [c.verdict.problem for c in self.candidates if c.verdict.problem]
        return refused + list(map(str, self.failures))


def draw_edits(
    make: Make,
    request: EditRequest,
    whole: Callable[[str], str],
    samples: Samples,
    decode: Callable[[list[int]], str],
    examples: Callable[[str], CheckResult] | None = None,
) -> Drawn:
    """Up to `samples.count` edits of `request` by `make` (`samples.checked` where `examples`
    judges them), one chosen (`draw`); `whole` turns an answer into the whole text as it would
    be written (a region's answer into the file), which `examples`, where given, checks
    (editing/examples.py). An unchanged fix is redrawn from its branch points while it has any
    (`decode` reads them), else sampled and told why. A rewrite's candidates are proofread
    (editing/proofread.py): a second look, word by word. An unchanged edit is redrawn from its
    branch points as an unchanged fix is, and an answer that copied its prompt's own words
    from just before them (`redraw_policies`). Those past `samples.count` that the examples
    ask for are drawn for a short text only (SHORT_TEXT_TOKENS), unless that step is left out.
    An edit whose delivered answer left out a part its instruction names as code, or a raise it
    asks for, has that part asked for alone, of the answer (`Drawing.rest`): one generation
    past `samples.count`."""
    judged = samples.judged_by_examples() if examples is not None else samples
    drawing = Drawing(make, request, whole, judged, decode, examples)
    short_only = SHORT_ONLY not in samples.without

    def may_draw(number: int) -> bool:
        return number < samples.count or not short_only or drawing.short

    delivered, _ = draw(
        drawing.candidate,
        lambda candidate: candidate.verdict,
        drawing.original,
        judged.count,
        samples.vote,
        may_draw,
    )
    acceptable = delivered is not None and delivered.verdict.acceptable
    if acceptable and delivered.verdict.absent and not ({REST} & samples.without or samples.vote):
        delivered = drawing.rest(delivered)
    return Drawn(delivered, tuple(drawing.candidates), tuple(drawing.failures))
