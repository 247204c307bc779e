"""One edit of one text: prompt -> speculative generation -> edited text.

This is what the CLI and the benchmark both call; it knows models, prompts and the engine, and
turns their failures into `EditError`s with a message fit for a user.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from typing import Protocol

from specedit.drafting.registry import (
    DEFAULT_METHOD,
    DraftSources,
    make_drafter,
    method_for,
)
from specedit.editing import prompts
from specedit.editing.proofread import Correction, log_probabilities, proofread
from specedit.editing.region import Region, Surroundings
from specedit.editing.rename import finish_rename
from specedit.editing.resume import RESUMES, resume
from specedit.editing.runaway import RUNAWAY, RunawayGuard
from specedit.editing.second_look import REJOINED, Rejoin
from specedit.editing.typos import asks_for_typos_only, keep_to_typos
from specedit.engine.events import Generation, Step, StopCondition
from specedit.engine.options import GREEDY, MAX_DRAFT, STRICT, Sampling, Verification
from specedit.models.load import LoadedModel


class EditError(Exception):
    """The edit cannot be done or was cut off; nothing should be written."""


class CutOff(EditError):
    """The answer reached its token limit: for a region, most often because the model went on
    past it (`cut_off`)."""


class EditorUnavailable(Exception):
    """Where edits run cannot be reached or failed (a server that is down); like a model that
    cannot load, it ends the run with the model error code."""


class Mode(StrEnum):
    """What the user asks for, named by the command (`specedit fix`): it decides which
    candidates are drawn and which can be right (editing/selection.py); each mode has the
    shipped template of its name."""

    FIX = "fix"
    EDIT = "edit"
    REWRITE = "rewrite"
    APPLY = "apply"

    @classmethod
    def of_template(cls, prompt: str) -> Mode | None:
        """The mode a template is written for, where a request names only that: a shipped
        template has the mode's name, and so has a prompt variant's file (the bench's
        `--prompts` folders of <kind>.toml); None for any other template."""
        try:
            return cls(Path(prompt).stem)
        except ValueError:
            return None


@dataclass(frozen=True)
class Steering:
    """How one generation of a request is steered by the candidate machinery, apart from what
    the user asked: set by redraws, proofreading and the --test loop, never by an option."""

    # The answer's first tokens, given: a redraw that takes another token where the last answer
    # was least sure (editing/selection.py) goes on from there.
    forced: tuple[int, ...] = ()
    # The model's statement of the change, given (a redraw keeps its first candidate's): a
    # template that asks for one does not ask again.
    statement: str | None = None
    choices: bool = False  # report each answer token's probability and runner-up (Generation)
    # Try the words the answer copied against the model's doubt, and its repeated words, as
    # corrections, and put back code it changed (editing/proofread.py), and what an answer to
    # typos alone changed beyond typos (editing/typos.py): a document's rewrite.
    proofread: bool = False
    # An earlier answer this one branched from, of which it will keep its first change only (a
    # fix's redraw, editing/second_look.py): it stops once that change is made, and the
    # earlier answer gives the rest.
    rejoin: str | None = None


UNSTEERED = Steering()


@dataclass(frozen=True)
class EditRequest:
    """One edit as the user asks it (the text, the instruction, the options), and how its
    generation is steered (`steering`)."""

    text: str
    instruction: str
    prompt: str = "edit"  # a template name from templates/, or a .toml file's path
    language: str = ""
    method: str = DEFAULT_METHOD
    max_new_tokens: int | None = None  # None: enough for the input plus a margin
    sampling: Sampling = GREEDY
    verification: Verification = STRICT  # anything but strict is lossy on purpose
    references: tuple[str, ...] = ()  # texts that feed only the draft pool
    feedback: str = ""  # what the model is told of an earlier attempt, after the instruction
    surroundings: Surroundings | None = None  # a region edit: `text` is the region (--lines)
    # What the user asked for, given by the command; where a request names only its template
    # (the bench's prompt variants, a request off the wire), the mode that template is for.
    mode: Mode | None = None
    steering: Steering = UNSTEERED

    def __post_init__(self) -> None:
        mode = Mode(self.mode) if self.mode is not None else Mode.of_template(self.prompt)
        object.__setattr__(self, "mode", mode)

    def steered(self, **controls: object) -> EditRequest:
        """This request with its generation steered otherwise (`Steering`'s fields)."""
        return replace(self, steering=replace(self.steering, **controls))


@dataclass
class EditResult:
    text: str
    generation: Generation
    prompt: prompts.EditPrompt
    statement: str | None = None  # the model's statement of the change, when the prompt asks
    # Seconds spent around the engine's own: building the prompt, making the drafter (loading
    # its indexes), proofreading; the engine's stages are in generation.stats.
    timings: dict[str, float] = field(default_factory=dict)
    # Made after the model: by proofreading, by keeping to typos, by finishing a rename.
    corrections: list[Correction] = field(default_factory=list)
    # The input's lines (1-based) where the model was made to go on, the answer having left
    # out part of the file (editing/resume.py).
    resumed: list[int] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.text != self.prompt.text


def in_region(request: EditRequest, region: Region) -> tuple[EditRequest, Callable[[str], str]]:
    """The request for `region` of its text (`--lines`), and what turns the answer back into
    the whole text; ValueError (a message for the user) where the region is not in the text."""
    inside, surroundings = region.cut(request.text)
    return replace(request, text=inside, surroundings=surroundings), surroundings.around


def default_token_limit(input_tokens: int) -> int:
    """Room for the whole input again plus half of it and a margin for additions."""
    return int(input_tokens * 1.5) + 128


def context_estimate(text: str, max_new_tokens: int | None = None) -> int:
    """A generous guess of the tokens an edit of `text` needs (its prompt, its answer's limit,
    a draft), made before any tokenizer has loaded: code and prose run 3-4 bytes a token here,
    two are assumed, and 256 tokens for the system prompt and the instruction."""
    tokens = len(text.encode()) // 2
    return 256 + tokens + (max_new_tokens or default_token_limit(tokens)) + MAX_DRAFT + 1


@dataclass(frozen=True)
class PreparedEdit:
    """A request turned into a prompt and a token limit, checked against the model's context."""

    request: EditRequest
    prompt: prompts.EditPrompt
    max_new_tokens: int
    statement: str | None = None  # the model's statement of the change, if asked
    seconds: float = 0.0  # building the prompt (and the statement, if asked)


STATEMENT_TOKENS = 256


def state_the_change(lm: LoadedModel, request: EditRequest, prompt: prompts.EditPrompt) -> str:
    """Let the model say what it will change before it writes the file (a template with `then`
    words): its answer to the user's turn, up to the end of that turn or a code block, which is
    where the file would start. Drafted as the edit is: a statement quotes the lines it means."""
    from specedit.engine.session import generate  # here: a remote client never loads torch

    lines = prompts.Lines(lambda token: lm.tokenizer.decode([token]))
    sources = draft_sources(lm, request, prompt)
    generation = generate(
        lm.model,
        prompt.ids,
        make_drafter(request.method, lm.model, sources),
        max_new_tokens=STATEMENT_TOKENS,
        eos_token_ids=lm.eos_token_ids,
        stop=lambda token: any(prompts.FENCE_LINE.match(line) for line in lines.feed(token)),
        pass_cost=sources.pass_cost,
    )
    return prompts.statement_of(lm.tokenizer.decode(generation.tokens, skip_special_tokens=True))


def draft_sources(
    lm: LoadedModel, request: EditRequest, prompt: prompts.EditPrompt
) -> DraftSources:
    """What an edit's drafts are made from: the input's tokens in the prompt, the reference
    texts, the draft model, the machine's pass costs."""
    return DraftSources(
        prompt.input_start,
        prompt.ids[prompt.input_start : prompt.input_end],
        [lm.tokenizer(text, add_special_tokens=False)["input_ids"] for text in request.references],
        lm.draft,
        lm.pass_cost(),
    )


def prepare(lm: LoadedModel, request: EditRequest) -> PreparedEdit:
    started = time.perf_counter()
    if not request.instruction.strip():
        raise EditError("the instruction is empty")
    if not request.text.strip():
        raise EditError("the input is empty")
    vocabulary = int(getattr(lm.model.config, "vocab_size", 0) or 0)
    if any(not 0 <= token < vocabulary for token in request.steering.forced):
        raise EditError("a forced answer token is not in the model's vocabulary")
    template = prompts.load_template(request.prompt)
    instruction = request.instruction.strip()
    if request.feedback:
        instruction += "\n\n" + request.feedback.strip()
    prompt = prompts.build(
        lm.tokenizer,
        template,
        request.text,
        instruction,
        request.language,
        surroundings=request.surroundings,
    )
    input_tokens = prompt.input_end - prompt.input_start
    needed = (
        len(prompt.ids) + input_tokens + 16 + (STATEMENT_TOKENS if prompt.asks_statement else 0)
    )
    if needed > lm.context_length:
        raise EditError(
            f"the input is too long for the model: the prompt takes {len(prompt.ids)} tokens "
            f"({input_tokens} of them the input) and the answer needs about as many again, but "
            f"the model's context holds {lm.context_length}"
        )
    statement = None
    if prompt.asks_statement:
        statement = request.steering.statement
        if statement is None:
            statement = state_the_change(lm, request, prompt)
        prompt = prompts.build(
            lm.tokenizer,
            template,
            request.text,
            instruction,
            request.language,
            statement,
            request.surroundings,
        )
    limit = min(
        request.max_new_tokens or default_token_limit(input_tokens),
        lm.context_length - len(prompt.ids),
    )
    if len(request.steering.forced) >= limit:
        raise EditError(f"the forced answer start is over the token limit ({limit})")
    return PreparedEdit(request, prompt, limit, statement, time.perf_counter() - started)


def generate_edit(
    lm: LoadedModel,
    prepared: PreparedEdit,
    on_step: Callable[[Step], None] | None = None,
    stop: StopCondition | None = None,
    timings: dict[str, float] | None = None,
    show_forced: bool = True,
) -> Generation:
    """Run the engine on a prepared edit with the request's method and verification; it stops
    at the closing fence, early when the answer loops (stop reason RUNAWAY), or when `stop`
    says so (a server whose client went away). `timings` gets the drafter's set-up seconds;
    `show_forced` False: the forced tokens were shown to `on_step` already (a resumed answer's)."""
    from specedit.engine.session import generate  # here: a remote client never loads torch

    request, prompt = prepared.request, prepared.prompt
    fence = prompts.FenceStop(lm.tokenizer, prompt, request.surroundings)
    guard = RunawayGuard(lambda token: lm.tokenizer.decode([token]), prompt.text)
    sources = draft_sources(lm, request, prompt)
    started = time.perf_counter()
    drafter = make_drafter(request.method, lm.model, sources)
    if timings is not None:
        timings["drafter"] = time.perf_counter() - started
    forced = list(request.steering.forced)
    for token in forced:  # the stops read the answer from its first token
        fence(token)
        guard(token)
    if forced and on_step and show_forced:
        on_step(Step(forced, [None] * len(forced), [None] * len(forced), 0, [False] * len(forced)))
    generation = generate(
        lm.model,
        prompt.ids + forced,
        drafter,
        max_new_tokens=prepared.max_new_tokens - len(forced),
        sampling=request.sampling,
        verification=request.verification,
        eos_token_ids=lm.eos_token_ids,
        stop=lambda token: fence(token) or guard(token) or (stop(token) if stop else None),
        on_step=on_step,
        pass_cost=sources.pass_cost,
        choices=request.steering.choices,
    )
    if not forced:
        return generation
    if not request.steering.choices:
        return replace(generation, tokens=forced + generation.tokens)
    return replace(  # the forced tokens are given, not chosen: certain, with no other token
        generation,
        tokens=forced + generation.tokens,
        probabilities=[1.0] * len(forced) + generation.probabilities,
        runners_up=forced + generation.runners_up,
    )


def either(*stops: StopCondition | None) -> StopCondition | None:
    """A stop condition that stops where the first of `stops` to say so does, with its
    reason (None: there is none)."""
    conditions = [stop for stop in stops if stop is not None]
    if len(conditions) < 2:
        return conditions[0] if conditions else None
    return lambda token: next((said for stop in conditions if (said := stop(token))), None)


def execute(
    lm: LoadedModel,
    prepared: PreparedEdit,
    on_step: Callable[[Step], None] | None = None,
    stop: StopCondition | None = None,
) -> EditResult:
    """Generate the edit; raises EditError when the answer was cut off (nothing to write)."""
    timings = {"prompt": prepared.seconds}
    rejoin = None
    steering = prepared.request.steering
    if steering.rejoin is not None:
        rejoin = Rejoin(steering.rejoin, lambda token: lm.tokenizer.decode([token]))
        for token in steering.forced:
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
    for step in PASSES:
        if step.wanted(prepared.request, answer):
            started = time.perf_counter()
            answer = step.run(at, answer)
            if step.timed:
                elapsed = time.perf_counter() - started
                timings[step.timed] = timings.get(step.timed, 0.0) + elapsed
    return EditResult(
        answer.text,
        answer.generation,
        prepared.prompt,
        prepared.statement,
        timings,
        list(answer.corrections),
        list(answer.resumed),
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


def cut_off(tokens: int, surroundings: Surroundings | None) -> CutOff:
    """The error of an answer that reached its token limit. A region's limit is sized by the
    region, so an answer that reaches it has written more than the region: most often the
    model rewrites the file, because what it would change lies outside the region."""
    if surroundings is None:
        return CutOff(
            f"the edit was cut off at the token limit ({tokens} new tokens); raise --max-new-tokens"
        )
    return CutOff(
        f"the answer for lines {surroundings.first}-{surroundings.last} ran to its token limit "
        f"({tokens} new tokens) without ending the region: the model wrote more than the region, "
        "often because what it would change lies outside it; widen --lines or leave it out "
        "(or raise --max-new-tokens)"
    )


# Called once an edit's prompt is known: the prompt and the answer's token limit.
OnStart = Callable[[prompts.EditPrompt, int], None]


class Editor(Protocol):
    """Where edits run: this process (`LocalEditor`) or a warm `specedit serve` (server/client.py).
    Delivering an edit (cli/deliver.py) and the dashboard work the same against either."""

    startup: dict[str, float]  # seconds it took to be ready, by stage
    default_method: str  # what an edit drafts with unless told (it depends on the engine)
    engine: str  # where the model's passes run (a server's, when edits go to one)

    def decode(self, tokens: list[int]) -> str: ...

    def edit(
        self,
        request: EditRequest,
        on_start: OnStart | None = None,
        on_step: Callable[[Step], None] | None = None,
    ) -> EditResult: ...


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
