"""One edit of one text: the request, its prompt, and the speculative generation of its answer.

This is what the CLI and the benchmark both call; it knows models, prompts and the engine, and
turns their failures into `EditError`s with a message fit for a user. What is made of the
answer after the model wrote it, and the editor that runs edits in this process, are
editing/local.py's.
"""

from __future__ import annotations

import functools
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
)
from specedit.editing import prompts
from specedit.editing.proofread import Correction
from specedit.editing.region import Region, Surroundings
from specedit.editing.runaway import RunawayGuard
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
    # fix's redraw, editing/first_change.py): it stops once that change is made, and the
    # earlier answer gives the rest.
    rejoin: str | None = None
    # A fix's first answer: it stops once it has changed the code and then written the input's
    # lines again, and the input gives the rest (editing/first_change.py); its changes of
    # docstrings, comments, blanks and imports before that do not stop it.
    rejoin_input: bool = False


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

    @property
    def headed_text(self) -> str:
        """The text to edit, after its function's head where it is a function's body (a fix
        narrowed so, `Surroundings.head`): the function whole."""
        return (self.surroundings.head if self.surroundings else "") + self.text


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
    # Each post-processing pass that changed the answer (editing/local.py's PASSES), by name,
    # and the answer's text before it: what the edit would be without that pass.
    before_passes: dict[str, str] = field(default_factory=dict)

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


def context_estimate(
    text: str, max_new_tokens: int | None = None, rewritten: str | None = None
) -> int:
    """A generous guess of the tokens an edit that shows `text` needs (its prompt, its answer's
    limit, a draft), made before any tokenizer has loaded: code and prose run 3-4 bytes a token
    here, two are assumed, and 256 tokens for the system prompt and the instruction. The answer
    is sized by `rewritten` where only that part of `text` is written again (a region)."""
    tokens = len(text.encode()) // 2
    written = tokens if rewritten is None else len(rewritten.encode()) // 2
    return 256 + tokens + (max_new_tokens or default_token_limit(written)) + MAX_DRAFT + 1


def context_needed(request: EditRequest, region: Region | None) -> int:
    """`context_estimate` of what the edit of `request` shows the model: with `region`, the
    region and the surroundings its prompt shows, the region written again. A context sized
    for a long file's whole text takes seconds to open and gigabytes to hold where the edit
    reads a function of it; one that turns out too small is opened again, larger, when a
    generation needs it (the whole file edited after all). A region the text does not have is
    reported by the edit itself: the whole text is estimated here."""
    if region is not None:
        try:
            inside, surroundings = region.cut(request.text)
        except ValueError:
            pass
        else:
            before, after = surroundings.shown()
            return context_estimate(before + inside + after, request.max_new_tokens, inside)
    return context_estimate(request.text, request.max_new_tokens)


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


class LineBreaks:
    """Whether a token holds a line break (DraftSources.line_break), read from its text by
    `tokenizer` (anything with `decode(ids)`), each token decoded once."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer
        self.known: dict[int, bool] = {}

    def __call__(self, token: int) -> bool:
        breaks = self.known.get(token)
        if breaks is None:
            breaks = self.known[token] = "\n" in self.tokenizer.decode([token])
        return breaks


@functools.lru_cache(maxsize=4)
def line_breaks(tokenizer) -> LineBreaks:
    """`tokenizer`'s one LineBreaks, shared by every edit, redraw, request and bench row that
    reads its tokens, so that each token is decoded once a process."""
    return LineBreaks(tokenizer)


def draft_sources(
    lm: LoadedModel, request: EditRequest, prompt: prompts.EditPrompt
) -> DraftSources:
    """What an edit's drafts are made from: the input's tokens in the prompt, the reference
    texts, the draft model, the machine's pass costs, where the instruction lies, where the
    answer starts copying (`first_copy`) and which tokens break lines."""
    return DraftSources(
        prompt.input_start,
        prompt.ids[prompt.input_start : prompt.input_end],
        [lm.tokenizer(text, add_special_tokens=False)["input_ids"] for text in request.references],
        lm.draft,
        lm.pass_cost(),
        prompt.instruction,
        first_copy(request, prompt),
        line_breaks(lm.tokenizer),
    )


def first_copy(request: EditRequest, prompt: prompts.EditPrompt) -> int | None:
    """Where the answer's first copy starts (`DraftSources.first_copy`): the input's first line
    of text, for a generation that starts at the answer's opening fence (not a statement asked
    first, nor an answer resumed after forced tokens)."""
    if prompt.asks_statement or request.steering.forced:
        return None
    return prompt.content_start


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
    """Where edits run: this process (editing/local.py's `LocalEditor`) or a warm `specedit
    serve` (server/client.py). Delivering an edit (cli/deliver.py) and the dashboard work the
    same against either."""

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
