"""Editing files the way a Unix tool does: read, edit, then print, diff, check or write in place.

One `edit_file` call per file; the model is loaded once by the caller. Errors of one file are
reported on stderr and turn into its exit code, so a batch goes on with the next file. Here the
candidates are drawn (with --test, until one passes the user's command) and one is chosen;
cli/output.py delivers it: refused unless it passes `safety.problems` (it still parses, no large
part of it vanished), in the input's line endings and byte order mark, an in-place write
refused when the file changed on disk since it was read (exit 6); a write that fails exits 7,
and so does a --stats-file or --attribution that cannot be written.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path
from typing import NamedTuple

from rich.console import Console

from specedit.cli.exits import Exit
from specedit.cli.output import Delivery, Report, deliver_text, save_records, summary_wanted
from specedit.console import error, say, warning
from specedit.drafting import DrafterUnavailable
from specedit.editing import asked, snippets
from specedit.editing.attempts import Attempt, attempt_edits
from specedit.editing.checks import CheckRefused, CheckResult, command_check, run_command
from specedit.editing.editor import (
    CutOff,
    EditError,
    Editor,
    EditorUnavailable,
    EditRequest,
    EditResult,
    Mode,
    in_region,
)
from specedit.editing.examples import Examples, examples_check, judging, reported
from specedit.editing.localize import Located, narrowed
from specedit.editing.prompts import EditPrompt, PromptError, language_for
from specedit.editing.region import Region
from specedit.editing.selection import ONE, REST, Candidate, Samples, draw_edits
from specedit.engine.events import Step
from specedit.files import (
    Fingerprint,
    InputError,
    keep_conventions,
    read_input,
)
from specedit.view.attribution import Attribution, merged_attribution
from specedit.view.dashboard import Dashboard, dashboard_enabled


@dataclass(frozen=True)
class CheckCommand:
    """--test: a shell command every candidate must pass, tried up to `attempts` times."""

    command: str
    attempts: int = 3
    timeout: float = 120.0


class Watch:
    """One generation as the CLI runs it: with the dashboard around it on a terminal, or a
    plain attribution of its tokens otherwise (`on_start` and `on_step` are the editor's
    callbacks)."""

    def __init__(self, editor: Editor, title: str, console: Console, live: bool) -> None:
        self.editor, self.title, self.console, self.live = editor, title, console, live
        self.view: Dashboard | None = None
        self.attribution: Attribution | None = None
        self.stack = ExitStack()

    def on_start(self, prompt: EditPrompt, max_new_tokens: int) -> None:
        if self.live:
            view = Dashboard(prompt, self.editor.decode, max_new_tokens, self.title, self.console)
            self.view = self.stack.enter_context(view)
            self.attribution = self.view.attribution
        else:
            self.attribution = Attribution(prompt, self.editor.decode)

    def on_step(self, event: Step) -> None:
        if self.view is not None:
            self.view.on_step(event)
        else:
            self.attribution.add(event)

    def run(self, request: EditRequest) -> Candidate:
        """The edit, as a candidate carrying the attribution of its tokens."""
        with self.stack:
            result = self.editor.edit(request, self.on_start, self.on_step)
            if self.view is not None:
                self.view.finish(result.generation.stats)
        return Candidate(result, attribution=self.attribution)


@dataclass(frozen=True)
class Watcher:
    """Runs each generation of one file's edit under a `Watch` of its own."""

    editor: Editor
    title: str  # the dashboard's: the file's name, and the region's where one was chosen
    console: Console
    live: bool

    def __call__(self, request: EditRequest) -> Candidate:
        return Watch(self.editor, self.title, self.console, self.live).run(request)


@dataclass(frozen=True)
class Written:
    """The file as it would be written, given the model's answer: what --samples judges and
    --test checks. `whole` turns a region's answer into the whole text."""

    original: str
    whole: Callable[[str], str] = str

    def __call__(self, answer: str) -> str:
        return keep_conventions(self.original, self.whole(answer))


def edit_file(
    editor: Editor,
    path: str,
    template: EditRequest,
    delivery: Delivery,
    console: Console,
    test: CheckCommand | None = None,
    text: str | None = None,
    region: Region | None = None,
    read: Fingerprint | None = None,
    samples: Samples = ONE,
    narrow: bool = False,
) -> int:
    """Edit one file (or stdin for '-') and deliver the result; returns the exit code. `text` is
    the file's text when the caller has read it already, and `read` the file's fingerprint then
    (`files.read_input`): an in-place write checks the file still matches it. Without `text` the
    file is read here, fingerprint included. With `region`, the model rewrites only those lines
    and everything else is kept as it was; checks and tests see the whole file. With `narrow`
    (and no `region`), the edit of a long file is narrowed to the function the instruction is
    about, where one stands out (`localize.locate`).

    With `test`, candidates are edited and checked until one passes (`attempts.attempt_edits`); the
    first that passes is delivered, and if none does nothing is written (exit 5). Without it,
    `samples` may draw more candidates, chosen without tests (`selection.draw`).
    """
    name = "stdin" if path == "-" else path
    live = dashboard_enabled(console, delivery.quiet)
    try:
        if text is None:
            source = read_input(path)
            text, read = source.text, source.fingerprint
        request = replace(template, text=text, language=language_for(path))
        region, located = narrowed(request, region, narrow)
        title = name
        if located:
            title = f"{name}: {located.name}"
            if not delivery.quiet:
                say(f"{name}: editing {located.describe()}; --whole edits all of it")
        run = Watcher(editor, title, console, live)
        draw = Drawer(run, name, Path(path), delivery.quiet, editor.decode, test, samples)
        try:
            drawn = draw(request, region)
        except CutOff:
            if located is None:
                raise
            # the model went on past the functions chosen for it: what it would change lies
            # elsewhere, so the whole file is edited, as --whole would
            if not delivery.quiet:
                say(f"{name}: the answer went on past {located.name}; editing the whole file")
            located = None
            drawn = replace(draw, run=Watcher(editor, name, console, live))(request, None)
        request, candidate, tries = drawn.request, drawn.candidate, drawn.tries
    except (InputError, EditError, PromptError, DrafterUnavailable, CheckRefused) as exc:
        error(str(exc))
        return Exit.INPUT
    except EditorUnavailable as exc:
        error(str(exc))
        return Exit.MODEL
    region_record = _region_record(request, located)
    report = Report(
        name, delivery, request.method, editor.engine, live, tries, editor.startup, region_record
    )
    if tries is not None:
        for number, attempt in enumerate(tries, 1):
            if not attempt.passed and (not tries[-1].passed or not delivery.quiet):
                why = attempt.check.summary() if attempt.check else f"edit failed: {attempt.error}"
                say(f"attempt {number}/{test.attempts}: {why}")
        if not tries[-1].passed:
            code = Exit.OK
            if candidate is not None:
                code = report.stats(candidate)
            error(f"nothing was written to {name}: none of {len(tries)} attempts passed --test")
            # an edit that never reached the check is an edit error, not a failed test
            ran = any(attempt.check is not None for attempt in tries)
            return max(code, Exit.TEST_FAILED if ran else Exit.INPUT)
    checked = candidate.verdict.checked if candidate.verdict else None
    code = deliver_text(
        path, name, text, drawn.whole(candidate.text), delivery, request, read, checked
    )
    return max(code, report.stats(candidate, code == Exit.UNSAFE))


class Drawn(NamedTuple):
    request: EditRequest  # as the model was asked: for a region, the region's text
    whole: Callable[[str], str]  # the whole file, given the model's answer
    candidate: Candidate | None  # the one to deliver: with --test, the last drawn
    tries: list[Attempt] | None  # the --test attempts, None without --test


@dataclass(frozen=True)
class Drawer:
    """Draws an edit's candidates, for the whole file or a region of it: with --test until one
    passes (`attempts.attempt_edits`), else as `samples` says (`choose_candidate`)."""

    run: Callable[[EditRequest], Candidate]
    name: str
    path: Path
    quiet: bool
    decode: Callable[[list[int]], str]
    test: CheckCommand | None
    samples: Samples

    def __call__(self, request: EditRequest, region: Region | None) -> Drawn:
        original, whole = request.text, str
        if region:
            try:
                request, whole = in_region(request, region)
            except ValueError as exc:
                raise InputError(f"{self.name}: {exc}") from None
        written = Written(original, whole)
        if self.test is None:
            stated = reported(request.instruction, request.mode)
            run = judging(self.samples.examples, request.mode)
            examples = examples_check(self.path, original, request.language, run, stated)
            with examples as check:
                if self.samples.examples is Examples.ASKED and check is None and not self.quiet:
                    say(
                        f"{self.name}: no >>> examples and no call with its value in a "
                        "docstring or the instruction to run; --examples changes nothing here"
                    )
                chosen = choose_candidate(
                    self.run,
                    request,
                    written,
                    self.samples,
                    self.name,
                    self.quiet,
                    self.decode,
                    check,
                )
            return Drawn(request, whole, chosen, None)
        with command_check(self.test.command, self.path, self.test.timeout) as check:
            tries = attempt_edits(
                self.run,
                request,
                lambda answer: check(written(answer)),
                self.test.attempts,
                self.decode,
            )
        # the delivered candidate is the last one: the one that passed, if any did
        candidate = next((t.candidate for t in reversed(tries) if t.candidate is not None), None)
        if candidate is not None and not self.quiet:
            say_what_was_mended(self.name, candidate.result)
        return Drawn(request, whole, candidate, tries)


def _region_record(request: EditRequest, located: Located | None) -> dict | None:
    """The stats' record of the lines an edit wrote, where not the whole file: given by
    --lines, or chosen, and why."""
    around = request.surroundings
    if around is None:
        return None
    record = {"lines": [around.first, around.last], "shown": around.shown_lines()}
    if located:
        return record | {"name": located.name, "why": located.why}
    return record | {"why": "--lines"}


def choose_candidate(
    run: Callable[[EditRequest], Candidate],
    request: EditRequest,
    whole: Callable[[str], str],
    samples: Samples,
    name: str,
    quiet: bool,
    decode: Callable[[list[int]], str],
    examples: Callable[[str], CheckResult] | None = None,
) -> Candidate:
    """One edit, or the candidate `samples` chooses (`examples`: the check of the file's
    examples, where it has some and they were asked for); EditError when every candidate
    failed."""
    if samples.count == 1:
        chosen = run(request)
    else:
        drawn = draw_edits(run, request, whole, samples, decode, examples)
        if drawn.delivered is None:
            raise drawn.failures[-1]
        chosen = drawn.delivered
        count = len(drawn.candidates) + len(drawn.failures)
        if count > 1 and not quiet:
            refused = f" (refused: {'; '.join(drawn.problems)})" if drawn.problems else ""
            number = chosen.number + 1
            say(f"{name}: {count} candidates drawn, number {number} delivered{refused}")
    verdict = chosen.verdict
    if verdict and (verdict.finding or verdict.removed):  # no candidate without one was drawn
        warning(f"{name}: {verdict.problem}")
    if REST in chosen.result.before_passes and not (quiet or (verdict and verdict.absent)):
        say(f"{name}: the answer left out part of the instruction; asked for alone, it was made")
    if verdict and verdict.absent:
        warning(f"{name}: {asked.warning(verdict.absent)}")
    if verdict and verdict.failed_examples:  # none passed them
        warning(f"{name}: no candidate passes the examples; delivering one as without them")
    elif chosen.afresh and not quiet:
        say(
            f"{name}: {chosen.afresh}() written afresh from its signature and docstring passes "
            "the examples; its body replaces the old one"
        )
    if not quiet:
        say_what_was_mended(name, chosen.result)
    return chosen


def say_what_was_mended(name: str, result: EditResult) -> None:
    """What was done to the model's answer beyond decoding it: where it was made to go on,
    and what was corrected after it (proofreading, changes beyond typos put back, a rename
    finished)."""
    if result.resumed:
        lines = ", ".join(map(str, result.resumed))
        say(f"{name}: the answer left out part of the file; the model went on at line {lines}")
    if result.corrections:
        words = ", ".join(map(str, result.corrections))
        say(f"{name}: corrected after the model ({len(result.corrections)}): {words}")


def merge_file(
    path: str,
    text: str,
    snippet: str,
    instruction: str,
    delivery: Delivery,
    test: CheckCommand | None = None,
    read: Fingerprint | None = None,
) -> int | None:
    """`specedit apply` without the model: merge the snippet where it says exactly where each
    part goes (snippets.py) and deliver the result as an edit is delivered (safety checks, -i,
    --diff, --check, --test, stats; `read` as in `edit_file`). Returns the exit code, or None
    when the model should merge it instead: the snippet leaves a doubt, or the merge fails
    --test."""
    started = time.perf_counter()
    name = "stdin" if path == "-" else path
    language = language_for(path)
    merged = snippets.merge(text, snippet, language)
    if merged is None:
        return None
    merged = keep_conventions(text, merged)  # as it would be written, for --test and stats
    if test is not None:
        try:
            check = run_command(test.command, Path(path), merged, test.timeout)
        except CheckRefused as exc:
            error(str(exc))
            return Exit.INPUT
        if not check.passed:
            if not delivery.quiet:
                say(
                    f"{name}: the merge without the model {check.summary()} on --test; "
                    "the model merges the snippet"
                )
            return None
    request = EditRequest(text, instruction, prompt="apply", language=language, mode=Mode.APPLY)
    code = deliver_text(path, name, text, merged, delivery, request, read)
    stats = {
        "file": name,
        "method": "merge",  # no model: the snippet said where each part goes
        "changed": merged != text,
        "refused": code == Exit.UNSAFE,
        "wall_seconds": {"merge": round(time.perf_counter() - started, 4)},
    }
    if test is not None:
        stats |= {"attempts": 1, "test": "passed"}
    saved = save_records(delivery, stats, lambda: merged_attribution(text, merged))
    if summary_wanted(delivery, stats):
        say(
            f"{name}: merged without the model: each part of the snippet has one place in the "
            f"file"
            + ("" if merged != text else ", no change")
            + (", --test passed" if test is not None else "")
        )
    return max(code, saved)
