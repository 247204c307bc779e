"""One edit of one text: prompt -> speculative generation -> edited text.

This is what the CLI and the benchmark both call; it knows models, prompts and the engine, and
turns their failures into `EditError`s with a message fit for a user.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from specedit import prompts
from specedit.drafting import DEFAULT_METHOD, DraftSources, make_drafter
from specedit.engine.session import Generation, Step, generate
from specedit.engine.verify import GREEDY, STRICT, Sampling, Verification
from specedit.models import LoadedModel


class EditError(Exception):
    """The edit cannot be done or was cut off; nothing should be written."""


@dataclass(frozen=True)
class EditRequest:
    text: str
    instruction: str
    prompt: str = "edit"  # a template name from prompts/
    language: str = ""
    method: str = DEFAULT_METHOD
    max_new_tokens: int | None = None  # None: enough for the input plus a margin
    sampling: Sampling = GREEDY
    verification: Verification = STRICT  # anything but strict is lossy on purpose
    references: tuple[str, ...] = ()  # texts that feed only the draft pool


@dataclass
class EditResult:
    text: str
    generation: Generation
    prompt: prompts.EditPrompt

    @property
    def changed(self) -> bool:
        return self.text != self.prompt.text


def default_token_limit(input_tokens: int) -> int:
    """Room for the whole input again plus half of it and a margin for additions."""
    return int(input_tokens * 1.5) + 128


@dataclass(frozen=True)
class PreparedEdit:
    """A request turned into a prompt and a token limit, checked against the model's context."""

    request: EditRequest
    prompt: prompts.EditPrompt
    max_new_tokens: int


def prepare(lm: LoadedModel, request: EditRequest) -> PreparedEdit:
    if not request.instruction.strip():
        raise EditError("the instruction is empty")
    if not request.text.strip():
        raise EditError("the input is empty")
    template = prompts.load_template(request.prompt)
    prompt = prompts.build(
        lm.tokenizer, template, request.text, request.instruction, request.language
    )
    input_tokens = prompt.input_end - prompt.input_start
    limit = request.max_new_tokens or default_token_limit(input_tokens)
    room = lm.context_length - len(prompt.ids)
    if room < input_tokens + 16:
        raise EditError(
            f"the input is too long for the model: the prompt takes {len(prompt.ids)} tokens "
            f"({input_tokens} of them the input) and the answer needs about as many again, but "
            f"the model's context holds {lm.context_length}"
        )
    return PreparedEdit(request, prompt, min(limit, room))


def generate_edit(
    lm: LoadedModel, prepared: PreparedEdit, on_step: Callable[[Step], None] | None = None
) -> Generation:
    """Run the engine on a prepared edit with the request's method and verification."""
    request, prompt = prepared.request, prepared.prompt
    sources = DraftSources(
        prompt.input_start,
        prompt.ids[prompt.input_start : prompt.input_end],
        [lm.tokenizer(text, add_special_tokens=False)["input_ids"] for text in request.references],
    )
    return generate(
        lm.model,
        prompt.ids,
        make_drafter(request.method, lm.model, sources),
        max_new_tokens=prepared.max_new_tokens,
        sampling=request.sampling,
        verification=request.verification,
        eos_token_ids=lm.eos_token_ids,
        stop=prompts.FenceStop(lm.tokenizer, prompt.fence),
        on_step=on_step,
    )


def execute(
    lm: LoadedModel, prepared: PreparedEdit, on_step: Callable[[Step], None] | None = None
) -> EditResult:
    """Generate the edit; raises EditError when the answer was cut off (nothing to write)."""
    generation = generate_edit(lm, prepared, on_step)
    text = prompts.extract(lm.tokenizer, generation.tokens, prepared.prompt)
    if text is None:
        raise EditError(
            f"the edit was cut off at the token limit ({len(generation.tokens)} new tokens); "
            "raise --max-new-tokens"
        )
    return EditResult(text, generation, prepared.prompt)


def run_edit(
    lm: LoadedModel, request: EditRequest, on_step: Callable[[Step], None] | None = None
) -> EditResult:
    """Prepare and execute in one call."""
    return execute(lm, prepare(lm, request), on_step)
