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
be tested on recorded candidates.

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
from pathlib import Path
from typing import TypeVar

from specedit.editing import safety
from specedit.editing.branches import branch_points, leak_start
from specedit.editing.editor import EditError, EditRequest, EditResult
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


ONE = Samples()


@dataclass(frozen=True)
class Verdict:
    """A candidate judged on its text: why it cannot be right (None: it may be)."""

    text: str
    problem: str | None

    @property
    def acceptable(self) -> bool:
        return self.problem is None


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
    (`NO_CODE_WORDS`), which may ask for just that (trailing spaces removed)."""
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
    problems = safety.problems(original, text, instruction, language)
    return Verdict(text, problems[0] if problems else None)


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
    """The index of the candidate to deliver: among the acceptable ones, the one the others
    agree with most, the earliest on a tie (the first is the request's own decoding); with no
    acceptable one, the first (the caller reports its problem, as for a single edit)."""
    acceptable = [i for i, verdict in enumerate(verdicts) if verdict.acceptable]
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
    prose = not asks_for_fix(request.prompt) and PROSE_WORDS.search(request.instruction)
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


def asks_for_fix(prompt: str) -> bool:
    """Whether a request's template (a shipped name or a .toml path) is the fix template."""
    return Path(prompt).stem == "fix"


def unchanged_problem(prompt: str, language: str) -> str | None:
    """What is wrong with an unchanged answer to a request made with the template `prompt` on
    a file in `language`: a fix asks for a change, and so does an edit of code (a language the
    safety checks parse). None where it may be right: a rewrite of a clean document, or an
    edit of prose, where "fix the spelling mistakes" is the everyday instruction and a clean
    file must come back as it was (`--check` in a pre-commit hook)."""
    stem = Path(prompt).stem
    if stem == "edit":
        return UNCHANGED_EDIT if language in safety.PARSERS else None
    return UNCHANGED_FIX if stem == "fix" else None


def asks_for_rewrite(prompt: str) -> bool:
    """Whether a request's template is the rewrite template (prose: a document's typos)."""
    return Path(prompt).stem == "rewrite"


def draw(
    run: Callable[[int, str | None], R | None],
    text_of: Callable[[R], str],
    judge_text: Callable[[str], Verdict],
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
            verdicts.append(judge_text(text_of(result)))
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
    return results[acceptable[-1] if acceptable else 0], verdicts


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


@dataclass
class Drawn:
    """What `draw_edits` drew: the chosen edit (None if every edit failed), the verdicts of the
    candidates that produced a text, and the errors of those that did not (cut off, runaway)."""

    chosen: EditResult | None
    verdicts: list[Verdict]
    failures: list[EditError]
    delivered: int = 0  # the chosen one's number, counting every candidate drawn from 0

    @property
    def problems(self) -> list[str]:
        return [v.problem for v in self.verdicts if v.problem] + list(map(str, self.failures))


def draw_edits(
    run: Callable[[EditRequest], EditResult],
    request: EditRequest,
    whole: Callable[[str], str],
    samples: Samples,
    decode: Callable[[list[int]], str],
) -> Drawn:
    """Up to `samples.count` edits of `request` by `run`, one chosen (`draw`); `whole` turns an
    answer into the whole text as it would be written (a region's answer into the file). An
    unchanged fix is redrawn from its branch points while it has any (`decode` reads them),
    else sampled and told why; an acceptable fix from its first branch point, its second look
    (none where it has no branch point). A rewrite's candidates are proofread
    (editing/proofread.py): its second look, word by word. An unchanged edit is redrawn from
    its branch points as an unchanged fix is, and an answer that copied its prompt's own words
    from just before them."""
    failures: list[EditError] = []
    results: list[EditResult] = []
    numbers: list[int] = []  # each result's candidate number (a failed edit has none)
    branches: list[tuple[int, ...]] | None = None  # the first candidate's, listed when first asked
    unchanged = unchanged_problem(request.prompt, request.language or safety.sniff(request.text))
    second_look = unchanged == UNCHANGED_FIX and not samples.vote
    branches_kept = unchanged is not None and not samples.vote  # an unchanged answer branches
    if asks_for_rewrite(request.prompt) and not samples.vote:
        request = replace(request, proofread=True, choices=True)
    looking = False  # the candidate being judged is the second look
    original = whole(request.text)

    def next_branch() -> tuple[int, ...] | None:
        """The next start for a redraw of the first candidate, its branch points listed once."""
        nonlocal branches
        if branches is None:
            branches = redraw_starts(results[0], request, decode, samples.count - 1)
        return branches.pop(0) if branches else None

    def candidate(number: int, problem: str | None) -> EditResult | None:
        nonlocal looking
        # An unchanged answer is redrawn from a branch point, and so is a changed fix, once.
        branching = bool(results) and (
            (branches_kept and problem in UNCHANGED) or (second_look and problem is None)
        )
        leaked = number == 1 and problem is not None and problem.startswith(PROMPT_WORDS)
        if number == 0:  # keep what its redraws may branch on
            redraw = replace(request, choices=branches_kept or request.choices)
        elif leaked and (start := leak_start(results[0], leak_of(results[0]), decode)):
            redraw = replace(request, forced=start, statement=results[0].statement)
        elif branching and (start := next_branch()):
            looking = problem is None
            # A fix's branch redraw keeps its first change only: it may stop once that is made.
            rejoin = results[0].text if second_look else None
            redraw = replace(request, forced=start, statement=results[0].statement, rejoin=rejoin)
        elif branching and problem is None:
            return None  # a second look goes on from a branch point, and there is none
        else:
            sampling = sampled(request.sampling, number)
            feedback = redraw_feedback(problem) if problem else request.feedback
            redraw = replace(request, sampling=sampling, feedback=feedback)
        try:
            result = run(redraw)
        except EditError as exc:
            failures.append(exc)
            return None
        if number and redraw.forced and second_look and not leaked:
            # A fix's branch redraw: its change where it branched. The result is changed in
            # place: its caller knows it by identity (the attribution of its tokens).
            result.text = first_change(results[0].text, result.text)
        results.append(result)
        numbers.append(number)
        return result

    def leak_of(result: EditResult) -> str | None:
        words = prompt_words(result, request.instruction, decode)
        return copied_from_prompt(whole(result.text), original, words)

    def judge_text(answer: str) -> Verdict:
        if answer != original and (sentence := leak_of(results[-1])):
            return Verdict(answer, f"{PROMPT_WORDS} ({sentence!r})")
        verdict = judge(original, answer, request.instruction, request.language, unchanged)
        if looking and verdict.acceptable:
            first = len(changed_lines(original, whole(results[0].text)))
            extra = len(changed_lines(original, answer)) - first
            if extra > LOOK_EXTRA_LINES:
                return Verdict(answer, f"the second look changes {extra} lines more than the first")
        return verdict

    chosen, verdicts = draw(
        candidate,
        lambda r: whole(r.text),
        judge_text,
        original,
        samples.count,
        samples.vote,
        second_look,
    )
    delivered = next((n for n, result in zip(numbers, results) if result is chosen), 0)
    return Drawn(chosen, verdicts, failures, delivered)
