"""Scoring one task's edit: its check (the task's tests, or the expected text), what it changed
against the input and the ground truth, and its speed against plain decoding."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from specedit.bench.setups import reference
from specedit.bench.tasks import Task
from specedit.editing import safety
from specedit.editing.checks import CheckResult, run_program
from specedit.editing.runaway import RUNAWAY
from specedit.editing.safety import dropped_lines
from specedit.editing.verdicts import blanks_only, changed_lines

# Why a checked edit failed, each kind told apart before the next (`failure_of`).
FAILURES = ("cut off", "unchanged", "broken", "wrong line", "wrong logic", "failed")
# What a program that cannot run as written fails with: it does not parse, names what nothing
# defines, or the safety checks refused it.
BROKEN = re.compile(
    r"\b(?:SyntaxError|IndentationError|TabError|NameError|UnboundLocalError|ImportError"
    r"|ModuleNotFoundError)\b|^failed \(exit \d+\): refused: "
)


@dataclass
class Row:
    """One task run by one setup (the fastest of --repeat runs)."""

    task: str
    method: str  # the setup's label: method, ~verification, @prompts, xattempts
    new_tokens: int
    seconds: float  # generation only (prefill included)
    forward_passes: int
    group: str = ""
    stop: str = ""  # why generation ended: stop (the fence), eos, length (cut off), runaway
    wall_seconds: float = 0.0  # the whole edit: prompt, generation, extraction, every attempt
    passed: bool | None = None  # the task's tests (or the expected text); None: uncheckable
    check: str = ""  # the check's one-line summary
    attempts: int = 1
    # Each --attempts try in order: "passed", "failed", "unchanged" (failed, the input as it
    # was) or "error" (no answer: cut off, runaway); which try passed, and what came before.
    tries: list[str] = field(default_factory=list)
    unchanged: bool | None = None  # output == input
    # What the candidates judged without tests (--samples) were refused for, in order.
    problems: list[str] = field(default_factory=list)
    afresh: str | None = None  # the function the delivered candidate wrote afresh, if it did
    # The new names its instruction writes as code that the delivered answer never writes, and
    # the raises it asks for that the answer never adds, of which the CLI warns
    # (editing/asked.py).
    absent: list[str] = field(default_factory=list)
    dropped: int | None = None  # input lines without a counterpart in the output
    identical: bool | None = None  # same tokens as `ar` on the same engine
    speedup: float | None = None  # tokens/s over `ar` on the same engine
    exact_match: bool | None = None  # edited text == ground truth
    similarity: float | None = None
    unrequested: int | None = None  # input lines changed outside the planted edit
    touched: int | None = None  # the planted edit's input lines that the output changed
    failure: str | None = None  # why a checked edit failed: one of FAILURES
    relaxed: int = 0  # tokens accepted only by conditional verification
    reuse: dict | None = None  # the engine's reuse counters (drafted, accepted, paths, ...)
    server: dict | None = None  # a llama-server setup's drafts: drafted, accepted
    # Each post-processing pass that changed the delivered answer, and whether the task's tests
    # pass on the answer without it (the text before that pass): the pass's ablation here.
    without_pass: dict[str, bool] = field(default_factory=dict)
    prompt_tokens: int = 0  # the prompt as fed to the model (every candidate's, summed)
    floor_seconds: float | None = None  # the least its passes could take here (ContextCost.floor)
    # The least a copy drafter's passes could take on its answer (ContextCost.copy_bound)
    copy_bound_seconds: float | None = None
    tokens: list[int] = field(default_factory=list, repr=False)  # compared with `ar`'s
    prompt_ids: list[int] = field(default_factory=list, repr=False)  # of a single generation
    input_span: list[int] = field(default_factory=list, repr=False)  # the input's, in prompt_ids
    instruction_span: list[int] = field(default_factory=list, repr=False)  # the instruction's
    first_copy: int | None = field(default=None, repr=False)  # DraftSources.first_copy
    # Those of its tokens that break a line (DraftSources.line_break), as its drafter knew them
    line_breaks: list[int] = field(default_factory=list, repr=False)

    @property
    def cut_off(self) -> bool:
        """The answer never closed: token limit or a runaway stop."""
        return self.stop in ("length", RUNAWAY)

    @property
    def tokens_per_second(self) -> float:
        return self.new_tokens / self.seconds if self.seconds else 0.0

    @property
    def mean_accepted(self) -> float:
        return self.new_tokens / max(self.forward_passes, 1)

    @property
    def times_floor(self) -> float | None:
        """Its generation's seconds over its floor. Not the wall's: the floor counts the
        model's passes only, the prompt's included, as `seconds` does; the wall adds building
        the prompt and extracting and checking the answer, which no decoding makes shorter."""
        return self.seconds / self.floor_seconds if self.floor_seconds else None

    @property
    def times_copy_bound(self) -> float | None:
        """Its generation's seconds over the least a copy drafter could take on its answer."""
        return self.seconds / self.copy_bound_seconds if self.copy_bound_seconds else None


def check_task(
    task: Task, text: str | None, known: safety.Checked | None = None
) -> CheckResult | None:
    """Whether `text` is a right edit for `task`: the safety checks let it be written (as the
    CLI does without --force: read from `known`, the candidate's, where it answered the same),
    and its tests pass after it (in a child process), or, for a task without tests, it equals
    the expected text. None: nothing to check against."""
    if text is None:
        return CheckResult(False, 1, "no edited text (the answer was cut off)", 0.0)
    refused = safety.problems_of(task.input, text, task.instruction, task.language, known)
    if refused and task.checkable:
        return CheckResult(False, 1, f"refused: {refused[0]}", 0.0)
    if task.tests is not None:
        return run_program(text + "\n" + task.tests)
    if task.expected is not None:
        same = text == task.expected
        return CheckResult(same, 0 if same else 1, "" if same else "differs from expected", 0.0)
    return None


def score_row(row: Row, text: str | None, task: Task, check: CheckResult | None) -> None:
    """Edit quality: the check, and against the input and the ground truth; unrequested =
    input lines changed that the planted edit did not touch."""
    if check is not None:
        row.passed, row.check = check.passed, check.summary()
    if text is not None:
        row.unchanged = text == task.input
        row.dropped = dropped_lines(task.input, text)
        if task.expected is not None:
            row.exact_match = text == task.expected
            row.similarity = round(difflib.SequenceMatcher(None, text, task.expected).ratio(), 4)
            requested = changed_lines(task.input, task.expected)
            changed = changed_lines(task.input, text)
            row.unrequested = len(changed - requested)
            row.touched = len(changed & requested)
    row.failure = failure_of(row, text, task)


def failure_of(row: Row, text: str | None, task: Task) -> str | None:
    """Why a checked edit failed (None: it passed, or nothing checked it), the first of
    FAILURES that holds: it was cut off; its text is the input's, blank lines and spacing
    aside; it is broken (does not parse, uses a name nothing defines, or is refused); it
    changed none of the planted edit's lines (wrong line), or some of them wrongly (wrong
    logic); "failed" where the task has no expected text to tell those two apart."""
    if row.passed is None or row.passed:
        return None
    if text is None or row.cut_off:
        return "cut off"
    if blanks_only(task.input, text):
        return "unchanged"
    if BROKEN.search(row.check):
        return "broken"
    if row.touched is None:
        return "failed"
    return "wrong line" if row.touched == 0 else "wrong logic"


def verdict(row: Row) -> str:
    if row.passed is None:
        return "-"
    return "pass" if row.passed else ("cut off" if row.cut_off else "FAIL")


def compare_with_reference(rows: list[Row]) -> None:
    """Speedup and token identity against `ar` on the same engine, when it ran."""
    for row in rows:
        base = next((r for r in rows if r.method == reference(row.method)), None)
        if base is not None:
            row.speedup = row.tokens_per_second / base.tokens_per_second
            row.identical = row.tokens == base.tokens if row.tokens else None
