"""Choosing among several candidate edits of one request, without tests.

Speculative decoding makes another candidate cheap (the copied part is verified many tokens a
pass; only the changed part costs), so an edit may draw more than one and keep the best. What
can be known without running anything:

- a candidate the safety checks refuse (the syntax breaks, much of the file vanished) is wrong;
- an unchanged answer to a fix or an edit is wrong: the user says there is a bug, or asks for
  a change;
- among the rest, the candidate whose change the others agree with most is the likeliest right
  (self-consistency): independent samples that make the same change back each other up.

`draw` is the loop (the first candidate as the request asks, greedy by default; the others
sampled as the editing benchmarks sample); `choose` is the pick, on texts alone, so that it can
be tested on recorded candidates. `draw_edits` runs the loop on one request: a `Drawing` holds
what it drew so far, its redraw policies (`redraw_policies`) each say how a candidate after the
first may be drawn, and each `Candidate` carries its result, the attribution of its tokens and
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

A fix that changed the file gets the same redraw once, its second look, delivered when it is
acceptable too. Where the first answer's change is the fix, the model's closest doubt was
whether to make it, and the redraw copies the bug back (an unchanged answer, refused): the
first stands. Where its closest doubt lies elsewhere, the first answer is often wrong there:
a second change it should not have made, the wrong one of two near-equal fixes, or a
docstring edited where the code is at fault; the redraw makes the other choice
(docs/quality.md, "A second look at a changed fix"). A fix's redraw is delivered with the
change it made where it branched and no other (`first_change`), so it stops once that change
is made and the first answer gives the rest (editing/second_look.py).

An answer that uses a name nothing defines where the input did not (editing/lint.py: a helper
never written, `Dict` with no import, a variable renamed in one place only) is wrong too, and
redrawn from where it was least sure on the line that first writes the name (`CheckRedraw`).

With `--examples` (editing/examples.py), an answer that fails the file's own `>>>` examples is
wrong too, and redrawn from the first candidate's next branch point (`ExamplesRedraw`); where
none passes them, the one a draw without them would have delivered is.

An answer that copies a sentence of its prompt's own words (`copied_from_prompt`: "Return the
complete edited file ..." inside a docstring that paraphrased the instruction) is wrong, and
redrawn from where it could have gone otherwise just before that sentence (`leak_start`).
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar

from specedit.editing import examples as file_examples
from specedit.editing import lint, safety
from specedit.editing.branches import branch_points, check_start, leak_start
from specedit.editing.checks import CheckResult
from specedit.editing.editor import EditError, EditRequest, EditResult, Mode
from specedit.editing.region import UNPARSABLE, named_lines
from specedit.editing.second_look import first_change
from specedit.engine.options import Sampling

# How the extra candidates sample: the temperature and nucleus of published editing benchmarks.
SAMPLE_TEMPERATURE = 0.2
SAMPLE_TOP_P = 0.95

R = TypeVar("R")  # what one edit returns: a local result, a bench row
UNCHANGED_FIX = "unchanged, but a fix was asked for"
UNCHANGED_EDIT = "unchanged, but a change was asked for"
UNCHANGED = (UNCHANGED_FIX, UNCHANGED_EDIT)
# An instruction about a file's prose: where its change would start, a comment or a docstring.
PROSE_WORDS = re.compile(r"\b(?:comments?|docstrings?|doc strings?|documentation)\b", re.I)
# An instruction that may ask for no change to what Python code does: its prose, its typos, its
# layout. Elsewhere an answer that changes the code's prose or layout alone changed nothing.
NO_CODE_WORDS = re.compile(
    r"\b(?:comments?|docstrings?|doc strings?|documentation|typos?|spelling|(?:re)?format\w*"
    r"|indent\w*|white ?space|spac(?:e|es|ing)|wrap\w*|long lines?|line length|style|quotes?"
    r"|pep ?8|blank lines?)\b",
    re.I,
)
# A second look that changes more input lines than this beyond the first answer's has rewritten
# what followed its branch rather than corrected the first answer, which then stands.
LOOK_EXTRA_LINES = 2
# An answer line this long or longer that the prompt's own words hold, and the input does not,
# was copied from the prompt ("Return the complete edited file in a single code block ..."),
# not written for the file.
LEAK_CHARS = 24
PROMPT_WORDS = "it copied the prompt's own words"


@dataclass(frozen=True)
class Samples:
    """`--samples N [--vote]`: how many candidates an edit may draw, and how one is chosen."""

    count: int = 1
    vote: bool = False  # draw all `count` and keep the one the others agree with
    examples: bool = False  # run the file's `>>>` examples on each (editing/examples.py)


ONE = Samples()


@dataclass(frozen=True)
class Verdict:
    """A candidate judged on its text: why it cannot be right (None: it may be), what the
    safety checks found where they ran, which the delivery reads instead of checking again,
    the name it uses that nothing defines where that is its problem (editing/lint.py), and how
    the file's examples went where they ran (editing/examples.py)."""

    text: str
    problem: str | None
    checked: safety.Checked | None = None
    undefined: lint.Finding | None = None
    examples: CheckResult | None = None

    @property
    def acceptable(self) -> bool:
        return self.problem is None

    @property
    def failed_examples(self) -> bool:
        """Its one problem is the file's examples (they run only on an answer that is right
        in every other way)."""
        return self.examples is not None and not self.examples.passed


@dataclass(frozen=True)
class Candidate:
    """One candidate edit: the editor's result with the text it delivers (a fix's branch
    redraw: the first answer with the redraw's first change made), its number among those
    drawn (from 0), the attribution of its tokens where the caller made one (the CLI's, as the
    dashboard showed them: editing knows no view), and its verdict once judged. Replaced,
    never changed: each carries its own attribution to the delivery."""

    result: EditResult
    number: int = 0
    attribution: Any = None
    verdict: Verdict | None = None

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


def judge(
    original: str, text: str, instruction: str, language: str, unchanged: str | None
) -> Verdict:
    """What is wrong with `text` as an answer, knowable without tests; `unchanged` is what is
    wrong with an unchanged one (None: it may be right, as a clean document's rewrite). For a
    fix, an answer that changed only blanks (spaces inside a line, blank lines) is as
    unchanged as the input: a redraw that took a space for the runner-up at its branch point
    fixed nothing. So, for a fix or an edit of code, is Python whose code is the input's
    (`same_code`: a docstring, a comment or the layout changed, and nothing the code does;
    the first answer to "make `commonprefix` accept any iterable" changed a docstring's
    quotes alone), unless the instruction speaks of the prose, the typos or the layout
    (`NO_CODE_WORDS`), which may ask for just that (trailing spaces removed). Python that
    uses a name nothing defines, where the input did not, is wrong too (editing/lint.py)."""
    if (
        text == original
        or (unchanged == UNCHANGED_FIX and _blanks_only(original, text))
        or (
            unchanged is not None
            and language == "python"
            and not NO_CODE_WORDS.search(instruction)
            and same_code(original, text)
        )
    ):
        return Verdict(text, unchanged)
    checked = safety.check(original, text, instruction, language)
    if checked.problems:
        return Verdict(text, checked.problems[0], checked)
    if language == "python" and (undefined := lint.first_new(original, text)):
        return Verdict(text, undefined.problem(text), checked, undefined)
    return Verdict(text, None, checked)


def _blanks_only(original: str, text: str) -> bool:
    """Whether `text` differs from `original` in blank lines and runs of spaces inside lines
    alone (indentation counts: in Python it is code)."""

    def lines(of: str) -> list[str]:
        return [
            line[: len(line) - len(line.lstrip())] + " ".join(line.split())
            for line in of.splitlines()
            if line.strip()
        ]

    return lines(original) == lines(text)


_DOCUMENTED = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def same_code(original: str, text: str) -> bool:
    """Whether Python `text` does what `original` does: the same syntax tree once docstrings
    are set aside (comments and layout are not in it). False where either does not parse."""
    trees = []
    for source in (original, text):
        try:
            tree = ast.parse(source)
        except UNPARSABLE:
            return False
        for node in ast.walk(tree):
            if isinstance(node, _DOCUMENTED) and ast.get_docstring(node, clean=False) is not None:
                node.body = node.body[1:]
        trees.append(ast.dump(tree))
    return trees[0] == trees[1]


def change_of(original: str, text: str) -> frozenset[tuple[str, str]]:
    """The change a candidate makes, as the set of lines it removes ('-') and adds ('+'), with
    runs of blanks counted as one: two candidates that make the same edit, spaced alike or not,
    have the same set."""
    diff = difflib.unified_diff(original.splitlines(), text.splitlines(), lineterm="", n=0)
    return frozenset(
        (line[0], " ".join(line[1:].split()))
        for line in diff
        if line[:1] in "+-" and not line.startswith(("+++", "---")) and line[1:].strip()
    )


def changed_lines(before: str, after: str) -> set[int]:
    """Indices of `before`'s lines that a line diff replaces, deletes or inserts at."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines())
    changed: set[int] = set()
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag != "equal":
            changed.update(range(i1, max(i2, i1 + 1)))
    return changed


def agreement(changes: list[frozenset]) -> list[float]:
    """Each change's summed similarity (Jaccard) with every other candidate's change."""

    def similarity(a: frozenset, b: frozenset) -> float:
        return len(a & b) / len(a | b) if a | b else 1.0

    return [
        sum(similarity(mine, other) for j, other in enumerate(changes) if j != i)
        for i, mine in enumerate(changes)
    ]


def choose(verdicts: list[Verdict], original: str) -> int:
    """The index of the candidate to deliver: among the acceptable ones (else those that fail
    only the file's examples), the one the others agree with most, the earliest on a tie (the
    first is the request's own decoding); with neither, the first (the caller reports its
    problem, as for a single edit)."""
    acceptable = [i for i, verdict in enumerate(verdicts) if verdict.acceptable] or [
        i for i, verdict in enumerate(verdicts) if verdict.failed_examples
    ]
    if not acceptable:
        return 0
    changes = [change_of(original, verdicts[i].text) for i in acceptable]
    scores = agreement(changes)
    best = max(range(len(acceptable)), key=lambda k: (scores[k], -k))
    return acceptable[best]


def sampled(sampling: Sampling, number: int) -> Sampling:
    """The sampling of candidate `number` (0 is the request's own): low-temperature nucleus
    sampling with a seed of its own, unless the request already samples."""
    if number == 0:
        return sampling
    if sampling.greedy:
        return replace(sampling, temperature=SAMPLE_TEMPERATURE, top_p=SAMPLE_TOP_P, seed=number)
    return replace(sampling, seed=(sampling.seed or 0) + number)


def prompt_words(result: EditResult, instruction: str, decode: Callable[[list[int]], str]) -> str:
    """What `result`'s prompt says after the file, the instruction left out: the template's own
    words ("Return the complete edited file ..."), which an answer has no reason to write."""
    tail = decode(result.prompt.ids[result.prompt.input_end :])
    return tail.replace(instruction, "")


def copied_from_prompt(answer: str, original: str, words: str) -> str | None:
    """The first line of `answer` (its comment marks and quotes aside) that copies a sentence
    of the prompt's own `words` found nowhere in `original`. A docstring that paraphrases the
    instruction ends in a blank line and goes on with the sentence that followed the
    instruction in the prompt; the model then ends the code block as the prompt did, and the
    answer ends inside its docstring."""
    for line in answer.splitlines():
        sentence = line.strip().strip("#/*-'\" ")
        if len(sentence) >= LEAK_CHARS and sentence in words and sentence not in original:
            return sentence
    return None


def redraw_starts(
    first: EditResult, request: EditRequest, decode: Callable[[list[int]], str], limit: int
) -> list[tuple[int, ...]]:
    """Up to `limit` starts for redraws of `first`, an answer to `request` made with its
    `choices` (`branch_points`, the definitions the instruction names first; the prose first
    for an edit whose instruction speaks of comments or docstrings, never for a fix: a fix
    changes what the code does)."""
    generation = first.generation
    prose = request.mode != Mode.FIX and PROSE_WORDS.search(request.instruction)
    return branch_points(
        generation.tokens,
        generation.probabilities,
        generation.runners_up,
        decode,
        limit,
        named_lines(request.instruction, request.text),
        request.language,
        bool(prose),
    )


def unchanged_problem(mode: Mode | None, language: str) -> str | None:
    """What is wrong with an unchanged answer to a request in `mode` on a file in `language`:
    a fix asks for a change, and so does an edit of code (a language the safety checks parse).
    None where it may be right: a rewrite of a clean document, or an edit of prose, where "fix
    the spelling mistakes" is the everyday instruction and a clean file must come back as it
    was (`--check` in a pre-commit hook)."""
    if mode == Mode.EDIT:
        return UNCHANGED_EDIT if language in safety.PARSERS else None
    return UNCHANGED_FIX if mode == Mode.FIX else None


def draw(
    run: Callable[[int, str | None], R | None],
    verdict_of: Callable[[R], Verdict],
    original: str,
    samples: int,
    vote: bool,
    second_look: bool = False,
) -> tuple[R | None, list[Verdict]]:
    """Draw up to `samples` candidates with `run(number, problem)` (None: that edit failed, e.g.
    cut off) and pick one. Without `vote`, drawing stops at the first acceptable candidate (an
    unchanged answer to a fix or an edit, or an unsafe one, draws another, told of the last
    one's `problem`), or, with `second_look`, at the one after an acceptable first (`problem`
    None), which is delivered if it is acceptable too; with `vote`, all are drawn independently
    (`problem` None) and `choose` picks by agreement. Returns the chosen result (None if every
    edit failed) and the verdicts of the candidates that produced a text, in order."""
    results: list[R] = []
    verdicts: list[Verdict] = []
    looking = False  # the first was acceptable: one more, then no other
    for number in range(samples):
        last = verdicts[-1].problem if verdicts and not vote else None
        result = run(number, last)
        if result is not None:
            results.append(result)
            verdicts.append(verdict_of(result))
        if vote:
            continue
        if looking:
            break
        if result is not None and verdicts[-1].acceptable:
            looking = second_look and number == 0
            if not looking:
                break
    if not results:
        return None, verdicts
    if vote:
        return results[choose(verdicts, original)], verdicts
    # Drawing stopped at what it needed: the last acceptable candidate is the one to deliver.
    acceptable = [i for i, verdict in enumerate(verdicts) if verdict.acceptable]
    if acceptable:
        return results[acceptable[-1]], verdicts
    # None passed the file's examples, which then tell nothing: the one delivered is the one the
    # draw without them would have delivered, the first that failed them alone, or its second
    # look (the next candidate) where that failed them alone too.
    untested = [i for i, verdict in enumerate(verdicts) if verdict.failed_examples]
    if second_look and untested[:2] == [0, 1]:
        return results[1], verdicts
    return results[untested[0] if untested else 0], verdicts


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
    """A candidate to draw: its request (None: none is drawn), whether it is a fix's branch
    redraw, delivered with its first change only (`first_change`), and whether it is the
    second look, which is judged against the first answer's reach too."""

    request: EditRequest | None
    first_change_only: bool = False
    look: bool = False


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


class CheckRedraw:
    """A first answer that uses a name nothing defines, redrawn from where it was least sure
    on the line that first writes the name, up to the name (`check_start`). A fix's keeps its
    first change only, as a branch redraw's does; none is drawn where the answer was sure of
    every token there, and the next policy has its say."""

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw | None:
        first = drawing.first
        if number != 1 or first is None or first.verdict.undefined is None:
            return None
        undefined = first.verdict.undefined
        line = first.verdict.text.splitlines()[undefined.line - 1]
        start = check_start(first.result, line, undefined.name, drawing.decode)
        if not start:
            return None
        fix = drawing.unchanged == UNCHANGED_FIX
        return Redraw(drawing.branched(start, fix), first_change_only=fix)


class ExamplesRedraw:
    """An answer that fails the file's examples, redrawn from the first candidate's next branch
    point while it has one. A fix's first redraw is its second look (its first change only,
    judged against the first's reach), so that where no candidate passes the examples, the one
    delivered is the one the draw without them would have delivered (`draw`)."""

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw | None:
        if not drawing.candidates or not drawing.candidates[-1].verdict.failed_examples:
            return None
        start = drawing.next_branch()
        if not start:
            return None
        look = drawing.second_look and number == 1 and drawing.first.verdict.failed_examples
        return Redraw(drawing.branched(start, look), first_change_only=look, look=look)


@dataclass(frozen=True)
class BranchRedraw:
    """An unchanged answer to a fix or an edit, redrawn from the first candidate's next branch
    point while it has one. A fix's keeps its first change only, and so may stop once that is
    made (editing/second_look.py); an edit's is delivered whole: a translation or a rename
    changes many places."""

    fix: bool

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw | None:
        if drawing.first is None or problem not in UNCHANGED:
            return None
        start = drawing.next_branch()
        if not start:
            return None
        return Redraw(drawing.branched(start, self.fix), first_change_only=self.fix)


class SecondLook:
    """A fix that may be right, redrawn once from its first branch point, its first change
    only; none is drawn where it has no branch point."""

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw | None:
        if drawing.first is None or problem is not None:
            return None
        start = drawing.next_branch()
        if not start:
            return Redraw(None)
        return Redraw(drawing.branched(start, True), first_change_only=True, look=True)


class SampledRedraw:
    """Sampled as the editing benchmarks sample (`sampled`), told why the last candidate
    could not be right (`redraw_feedback`; doctest's report where it failed the file's
    examples): what is left once no branch is."""

    def redraw(self, drawing: Drawing, number: int, problem: str | None) -> Redraw:
        request = drawing.request
        last = drawing.candidates[-1].verdict if drawing.candidates else None
        if problem and last is not None and last.failed_examples:
            feedback = file_examples.feedback(last.examples.output)
        else:
            feedback = redraw_feedback(problem) if problem else request.feedback
        return Redraw(
            replace(request, sampling=sampled(request.sampling, number), feedback=feedback)
        )


def redraw_policies(unchanged: str | None, vote: bool) -> list[RedrawPolicy]:
    """The policies for the candidates after the first, in the order they are asked: votes
    are independent samples; otherwise a first answer that copied its prompt's words is
    redrawn from just before them, one that uses a name nothing defines from the line that
    writes it, one that fails the file's examples from a branch point, an unchanged answer to
    a fix or an edit (`unchanged`: what is wrong with one) from a branch point, a fix that may
    be right gets its second look, and any other is sampled."""
    if vote:
        return [SampledRedraw()]
    policies: list[RedrawPolicy] = [LeakRedraw(), CheckRedraw(), ExamplesRedraw()]
    if unchanged is not None:
        policies.append(BranchRedraw(fix=unchanged == UNCHANGED_FIX))
    if unchanged == UNCHANGED_FIX:
        policies.append(SecondLook())
    return [*policies, SampledRedraw()]


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
        self.unchanged = unchanged_problem(
            request.mode, request.language or safety.sniff(request.text)
        )
        self.second_look = self.unchanged == UNCHANGED_FIX and not samples.vote
        if request.mode == Mode.REWRITE and not samples.vote:
            request = request.steered(proofread=True, choices=True)
        self.request = request
        self.original = whole(request.text)
        # The first keeps what its redraws may branch on: an unchanged answer branches.
        branches = self.unchanged is not None and not samples.vote
        self.opening = request.steered(choices=branches or request.steering.choices)
        self.policies = redraw_policies(self.unchanged, samples.vote)
        self.candidates: list[Candidate] = []  # those that produced a text, judged
        self.failures: list[EditError] = []
        self.branches: list[tuple[int, ...]] | None = None

    @property
    def first(self) -> Candidate | None:
        """The first candidate that produced a text: what redraws branch from."""
        return self.candidates[0] if self.candidates else None

    def next_branch(self) -> tuple[int, ...] | None:
        """The next start for a redraw of the first candidate, its branch points listed once."""
        if self.branches is None:
            self.branches = redraw_starts(
                self.first.result, self.request, self.decode, self.branch_limit
            )
        return self.branches.pop(0) if self.branches else None

    def branched(self, start: tuple[int, ...], rejoin: bool) -> EditRequest:
        """The request of a redraw of the first candidate from `start`: it goes on from the
        first one's statement, and with `rejoin` may stop once its first change is made."""
        first = self.first
        return self.request.steered(
            forced=start,
            statement=first.result.statement,
            rejoin=first.text if rejoin else None,
        )

    def candidate(self, number: int, problem: str | None) -> Candidate | None:
        """Candidate `number`, judged, as the first policy with a say draws it (None: none was
        drawn, or its edit failed)."""
        if number == 0:
            redraw = Redraw(self.opening)
        else:
            redraw = next(
                found
                for policy in self.policies
                if (found := policy.redraw(self, number, problem)) is not None
            )
        if redraw.request is None:
            return None
        try:
            made = as_candidate(self.make(redraw.request), number)
        except EditError as exc:
            self.failures.append(exc)
            return None
        if redraw.first_change_only:  # its change where it branched, the first's text elsewhere
            text = first_change(self.first.text, made.text)
            made = replace(made, result=replace(made.result, text=text))
        judged = replace(made, verdict=self.judge(made, redraw.look))
        self.candidates.append(judged)
        return judged

    def judge(self, candidate: Candidate, look: bool) -> Verdict:
        """`judge` on the whole text, after the check for the prompt's own words; a second
        look that changes more than LOOK_EXTRA_LINES input lines beyond the first answer's
        has rewritten what followed its branch."""
        answer = self.whole(candidate.text)
        if answer != self.original and (sentence := self.leak_of(candidate)):
            return Verdict(answer, f"{PROMPT_WORDS} ({sentence!r})")
        request = self.request
        verdict = judge(
            self.original, answer, request.instruction, request.language, self.unchanged
        )
        if look and verdict.acceptable:
            first = len(changed_lines(self.original, self.whole(self.first.text)))
            extra = len(changed_lines(self.original, answer)) - first
            if extra > LOOK_EXTRA_LINES:
                problem = f"the second look changes {extra} lines more than the first"
                return replace(verdict, problem=problem)
        if verdict.acceptable and self.examples is not None:
            ran = self.examples(answer)
            problem = None if ran.passed else f"{file_examples.FAILED} ({ran.summary()})"
            return replace(verdict, problem=problem, examples=ran)
        return verdict

    def leak_of(self, candidate: Candidate) -> str | None:
        """The sentence of its prompt's own words `candidate` copied (`copied_from_prompt`)."""
        words = prompt_words(candidate.result, self.request.instruction, self.decode)
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
    """Up to `samples.count` edits of `request` by `make`, one chosen (`draw`); `whole` turns an
    answer into the whole text as it would be written (a region's answer into the file), which
    `examples`, where given, checks (editing/examples.py). An
    unchanged fix is redrawn from its branch points while it has any (`decode` reads them),
    else sampled and told why; an acceptable fix from its first branch point, its second look
    (none where it has no branch point). A rewrite's candidates are proofread
    (editing/proofread.py): its second look, word by word. An unchanged edit is redrawn from
    its branch points as an unchanged fix is, and an answer that copied its prompt's own words
    from just before them (`redraw_policies`)."""
    drawing = Drawing(make, request, whole, samples, decode, examples)
    delivered, _ = draw(
        drawing.candidate,
        lambda candidate: candidate.verdict,
        drawing.original,
        samples.count,
        samples.vote,
        drawing.second_look,
    )
    return Drawn(delivered, tuple(drawing.candidates), tuple(drawing.failures))
