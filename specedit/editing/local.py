"""An edit run in this process: the model's answer, then what is made of it (`execute`), and
`LocalEditor`, the `Editor` that runs edits so.

After the model wrote its answer, one named post-processing pass after another (`PASSES`)
may make something of it: an answer that left out part of the file made to go on there
(editing/resume.py), a document's rewrite proofread (editing/proofread.py) and kept to typos
where only typos were asked for (editing/typos.py), a Python rename finished everywhere
(editing/rename.py). A fix's first answer and its redraws stop once their first change is
made (`rejoining`, editing/first_change.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from specedit.drafting.registry import method_for
from specedit.editing import prompts, safety
from specedit.editing.editor import (
    EditError,
    EditRequest,
    EditResult,
    OnStart,
    PreparedEdit,
    Steering,
    cut_off,
    generate_edit,
    prepare,
)
from specedit.editing.first_change import REJOINED, Change, Rejoin
from specedit.editing.proofread import Correction, log_probabilities, proofread
from specedit.editing.rename import finish_rename
from specedit.editing.resume import RESUMES, resume
from specedit.editing.runaway import RUNAWAY
from specedit.editing.typos import asks_for_typos_only, keep_to_typos
from specedit.editing.verdicts import counts_unchanged, judged_language, unchanged_problem
from specedit.engine.events import Generation, Step, StopCondition
from specedit.models.load import LoadedModel


def either(*stops: StopCondition | None) -> StopCondition | None:
    """A stop condition that stops where the first of `stops` to say so does, with its
    reason (None: there is none)."""
    conditions = [stop for stop in stops if stop is not None]
    if len(conditions) < 2:
        return conditions[0] if conditions else None
    return lambda token: next((said for stop in conditions if (said := stop(token))), None)


def rejoining(request: EditRequest, decode_token: Callable[[int], str]) -> Rejoin | None:
    """The stop of an answer that keeps to its first change (editing/first_change.py): a fix's
    redraw rejoins the answer it branched from (never where that leaves out lines of it, where
    that answer left out lines of the input), a fix's first answer the input once it has
    changed the code (a change after which it would still count as unchanged, or that adds
    or changes imports alone, goes on; one the safety checks refuse, such as lines dropped,
    lets it run to its end)."""
    steering = request.steering
    if steering.rejoin is not None:
        # A redraw of an answer that left out lines of the input puts them back (GapRedraw).
        lost = safety.left_out(request.text, steering.rejoin)
        return Rejoin(steering.rejoin, decode_token, keep_lines=lost)
    if not steering.rejoin_input:
        return None
    around = request.surroundings
    original = around.around(request.text) if around else request.text
    language = judged_language(request)
    unchanged = unchanged_problem(request.mode, language)

    def weigh(text: str) -> Change:
        whole = around.around(text) if around else text
        # imports set aside: one added alone is not the fix yet, the code that uses it is
        asked = (original, whole, request.instruction, language, unchanged)
        if counts_unchanged(*asked, imports=True):
            return Change.NONE
        if safety.problems(original, whole, request.instruction, language):
            return Change.ASTRAY
        return Change.MADE

    return Rejoin(request.text, decode_token, weigh)


def execute(
    lm: LoadedModel,
    prepared: PreparedEdit,
    on_step: Callable[[Step], None] | None = None,
    stop: StopCondition | None = None,
) -> EditResult:
    """Generate the edit; raises EditError when the answer was cut off (nothing to write)."""
    timings = {"prompt": prepared.seconds}
    rejoin = rejoining(prepared.request, lambda token: lm.tokenizer.decode([token]))
    if rejoin is not None:
        for token in prepared.request.steering.forced:
            rejoin(token)
    generation = generate_edit(lm, prepared, on_step, either(stop, rejoin), timings)
    if generation.stop_reason == RUNAWAY:
        lines = lm.tokenizer.decode(generation.tokens, skip_special_tokens=True).count("\n")
        raise EditError(
            f"the answer started repeating itself (stopped at its line {lines}, "
            f"{len(generation.tokens)} tokens); nothing was written; rephrase the instruction "
            "or try a larger --model"
        )
    if rejoin is not None and generation.stop_reason == REJOINED:
        text = rejoin.text(lm.tokenizer.decode(generation.tokens, skip_special_tokens=True))
    else:
        text = prompts.extract(
            lm.tokenizer, generation.tokens, prepared.prompt, prepared.request.surroundings
        )
        if text is None:
            raise cut_off(len(generation.tokens), prepared.request.surroundings)
    answer, at = Answer(generation, text), Generating(lm, prepared, on_step, stop)
    before_passes = {}
    for step in PASSES:
        if step.wanted(prepared.request, answer):
            started, before = time.perf_counter(), answer.text
            answer = step.run(at, answer)
            if answer.text != before:
                before_passes[step.name] = before
            if step.timed:
                elapsed = time.perf_counter() - started
                timings[step.timed] = timings.get(step.timed, 0.0) + elapsed
    prompt = prepared.prompt
    return EditResult(
        prompts.framed(answer.text, prompt),
        answer.generation,
        prompt,
        prepared.statement,
        timings,
        list(answer.corrections),
        list(answer.resumed),
        {name: prompts.framed(text, prompt) for name, text in before_passes.items()},
    )


# Post-processing: what is made of an answer after the model wrote it, one named pass after
# another (`PASSES`, in their order). Each pass says whether the request wants it and returns
# the answer it made; what a pass changed after the model is a Correction (shown and reported).


@dataclass(frozen=True)
class Answer:
    """An answer on its way through the passes: its generation, its text, what the passes
    corrected in it, and the input's lines where it was made to go on."""

    generation: Generation
    text: str
    corrections: tuple[Correction, ...] = ()
    resumed: tuple[int, ...] = ()

    def corrected(self, text: str, corrections: list[Correction]) -> Answer:
        """This answer as a pass left it: `text`, with what the pass changed after the model."""
        return replace(self, text=text, corrections=(*self.corrections, *corrections))


@dataclass(frozen=True)
class Generating:
    """What a pass generates with where it asks the model again: the model, the prepared edit,
    and the caller's step and stop callbacks."""

    lm: LoadedModel
    prepared: PreparedEdit
    on_step: Callable[[Step], None] | None = None
    stop: StopCondition | None = None


class Pass(Protocol):
    """One post-processing pass; `timed` names the timing its seconds are added to."""

    name: str
    timed: str | None

    def wanted(self, request: EditRequest, answer: Answer) -> bool: ...

    def run(self, at: Generating, answer: Answer) -> Answer: ...


class Resume:
    """An answer that left out part of the input made to go on there (editing/resume.py); a
    region's answer ends where the region does, and a rejoined one is whole by design."""

    name, timed = "resume", None

    def wanted(self, request: EditRequest, answer: Answer) -> bool:
        return request.surroundings is None and answer.generation.stop_reason != REJOINED

    def run(self, at: Generating, answer: Answer) -> Answer:
        generation, text, lines = resume_answer(
            at.lm, at.prepared, answer.generation, answer.text, at.on_step, at.stop
        )
        return replace(answer, generation=generation, text=text, resumed=(*answer.resumed, *lines))


class Proofread:
    """A document's rewrite: its copied doubts tried as corrections (editing/proofread.py)."""

    name, timed = "proofread", "proofread"

    def wanted(self, request: EditRequest, answer: Answer) -> bool:
        return request.steering.proofread and bool(answer.generation.probabilities)

    def run(self, at: Generating, answer: Answer) -> Answer:
        text, corrections = proofread_answer(at.lm, at.prepared, answer.generation, answer.text)
        return answer.corrected(text, corrections)


class KeepToTypos(Proofread):
    """A proofread answer to typos alone: what it changed beyond typos put back as it was
    (editing/typos.py)."""

    name = "typos"

    def wanted(self, request: EditRequest, answer: Answer) -> bool:
        return super().wanted(request, answer) and asks_for_typos_only(request.instruction)

    def run(self, at: Generating, answer: Answer) -> Answer:
        return answer.corrected(*keep_to_typos(at.prepared.request.text, answer.text))


class FinishRename:
    """A Python rename made in some places only, finished everywhere (editing/rename.py)."""

    name, timed = "rename", None

    def wanted(self, request: EditRequest, answer: Answer) -> bool:
        return request.language == "python"

    def run(self, at: Generating, answer: Answer) -> Answer:
        request = at.prepared.request
        return answer.corrected(*finish_rename(request.text, answer.text, request.instruction))


PASSES: tuple[Pass, ...] = (Resume(), Proofread(), KeepToTypos(), FinishRename())


def resume_answer(
    lm: LoadedModel,
    prepared: PreparedEdit,
    generation: Generation,
    text: str,
    on_step: Callable[[Step], None] | None = None,
    stop: StopCondition | None = None,
) -> tuple[Generation, str, list[int]]:
    """`text`, the answer `generation` wrote, made to go on where it left out part of the
    input (editing/resume.py), up to RESUMES times: the generation and text it came to, and the
    input's lines it went on at. A resumption that loops or reaches the token limit is dropped,
    and the answer before it stands."""
    request = prepared.request
    decode = LocalEditor(lm).decode
    special = set(lm.tokenizer.all_special_ids)
    lines: list[int] = []
    for _ in range(RESUMES):
        written = len(generation.tokens)
        while written and generation.tokens[written - 1] in special:  # an EOS is not text
            written -= 1
        tokens = generation.tokens[:written]
        where = resume(request.text, text, request.instruction, tokens, decode)
        if where is None:
            break
        given = lm.tokenizer(where.given, add_special_tokens=False)["input_ids"]
        forced = (*generation.tokens[: where.kept], *given)
        if (
            len(forced) >= prepared.max_new_tokens
            or decode(list(forced)) != decode(tokens[: where.kept]) + where.given
        ):  # a tokenizer that writes `given` otherwise on its own (a leading space)
            break
        if on_step:  # what was shown after the kept tokens is taken back
            back = len(generation.tokens) - where.kept
            on_step(Step(given, [None] * len(given), [None] * len(given), 0, rewind=back))
        on = replace(prepared, request=request.steered(forced=forced))
        more = generate_edit(lm, on, on_step, stop, show_forced=False)
        more_text = prompts.extract(lm.tokenizer, more.tokens, prepared.prompt)
        if more.stop_reason == RUNAWAY or more_text is None:
            break
        if request.steering.choices:  # the kept tokens were chosen as the first answer chose them
            kept = where.kept
            more = replace(
                more,
                probabilities=generation.probabilities[:kept] + more.probabilities[kept:],
                runners_up=generation.runners_up[:kept] + more.runners_up[kept:],
            )
        generation = replace(more, stats=generation.stats.then(more.stats))
        text = more_text
        lines.append(where.line)
    return generation, text, lines


def proofread_answer(
    lm: LoadedModel, prepared: PreparedEdit, generation: Generation, text: str
) -> tuple[str, list[Correction]]:
    """`text`, the answer `generation` wrote, proofread (editing/proofread.py): each doubt goes
    on from its runner-up to the end of its line, sharing the answer's cache."""
    request = prepared.request
    decode = LocalEditor(lm).decode

    def go_on(start: list[int], most: int) -> str | None:
        branch = replace(
            request,
            max_new_tokens=len(start) + most,
            # a template that asks for a statement: not asked again
            steering=Steering(forced=tuple(start), statement=prepared.statement),
        )
        line = generate_edit(lm, prepare(lm, branch), stop=lambda t: "\n" in decode([t]))
        written = decode(line.tokens[len(start) - 1 :])
        return written if "\n" in written else None

    return proofread(
        text,
        request.text,
        generation.tokens,
        generation.probabilities,
        generation.runners_up,
        decode,
        go_on,
        lambda texts: log_probabilities(lm, texts),
    )


class LocalEditor:
    """Edits with a model loaded in this process; `startup` holds the seconds it took to be
    ready (imports, model load), reported with each edit's stats."""

    def __init__(self, lm: LoadedModel, startup: dict[str, float] | None = None) -> None:
        self.lm = lm
        self.startup = startup or {}
        self.default_method = method_for(lm)
        self.engine = lm.engine

    def decode(self, tokens: list[int]) -> str:
        return self.lm.tokenizer.decode(tokens, skip_special_tokens=True)

    def edit(
        self,
        request: EditRequest,
        on_start: OnStart | None = None,
        on_step: Callable[[Step], None] | None = None,
        stop: StopCondition | None = None,
    ) -> EditResult:
        """`stop` ends the generation early (a server whose client went away)."""
        prepared = prepare(self.lm, request)
        if on_start:
            on_start(prepared.prompt, prepared.max_new_tokens)
        return execute(self.lm, prepared, on_step, stop)
