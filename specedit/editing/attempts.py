"""`--test`: edit, check the candidate with the user's command, and try again until one passes.

With a check to judge them, the first answer's runner-ups are worth trying one after the other:
a failed first answer is redrawn from its branch points (`selection.redraw_starts`: the tokens
it was least sure of, taking its likeliest other token there, in the definitions the
instruction names first). Such a redraw shares its prompt and its answer up to the branch with
the first, so an engine that keeps its cache (llama.cpp) computes only what follows the branch.
Once those are spent, the last failure is shown to the model, and from the third attempt on it
samples, so that a retry can differ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from specedit.editing.checks import CheckResult
from specedit.editing.editor import EditError, EditRequest, EditResult
from specedit.editing.selection import Candidate, Make, as_candidate, redraw_starts

FEEDBACK_CHARS = 1500  # of a failed check's output, shown to the model on the next attempt
RETRY_TEMPERATURE = 0.7  # attempts after the second sample, so that they can differ


@dataclass(frozen=True)
class Attempt:
    """One try of a checked edit: its candidate (None if the edit itself failed) and check."""

    candidate: Candidate | None
    check: CheckResult | None
    error: str | None = None  # why the edit itself failed (cut off, runaway)

    @property
    def result(self) -> EditResult | None:
        return self.candidate.result if self.candidate else None

    @property
    def passed(self) -> bool:
        return self.check is not None and self.check.passed


def check_feedback(output: str) -> str:
    """What the model is told after a candidate failed the user's check (or could not be
    made): the end of the check's output."""
    return (
        "An earlier attempt at this edit failed the user's check. The end of the check's "
        f"output:\n```\n{output[-FEEDBACK_CHARS:].strip()}\n```"
    )


def retry_request(request: EditRequest, attempt: int, failure: str) -> EditRequest:
    """The request for attempt number `attempt` (2, 3, ...) once no branch is left: the last
    failure is shown to the model; from the third attempt on it also samples."""
    sampling = request.sampling
    if attempt >= 3 and not sampling.temperature:
        sampling = replace(sampling, temperature=RETRY_TEMPERATURE, seed=attempt)
    return replace(request, feedback=check_feedback(failure), sampling=sampling)


def attempt_edits(
    make: Make,
    request: EditRequest,
    check: Callable[[str], CheckResult],
    attempts: int,
    decode: Callable[[list[int]], str],
) -> list[Attempt]:
    """Edit and check until a candidate passes or `attempts` are spent. `make` makes one edit
    (the CLI wraps its dashboard around it); `decode` reads the first answer's branch points."""
    tries: list[Attempt] = []
    redraws: list[EditRequest] = []  # of the first answer, once it failed
    for number in range(1, attempts + 1):
        if number == 1:  # it keeps what the redraws branch on
            current = request.steered(choices=attempts > 1)
        elif redraws:
            current = redraws.pop(0)
        else:
            last = tries[-1]
            failure = last.check.output if last.check else last.error
            current = retry_request(request, number, failure or "")
        try:
            candidate = as_candidate(make(current), number - 1)
        except EditError as exc:
            tries.append(Attempt(None, None, str(exc)))
            continue
        tries.append(Attempt(candidate, check(candidate.text)))
        if tries[-1].passed:
            break
        if number == 1 and attempts > 1:
            first = candidate.result
            starts = redraw_starts(first, request, decode, attempts - 1)
            redraws = [request.steered(forced=s, statement=first.statement) for s in starts]
    return tries
