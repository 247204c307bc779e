"""What the bench measures of the machine before and beside its rows: the weights paged in and
the pass costs measured again (`warm_up`), what a token costs by its position over the
positions the tasks reach (`floor_costs`), and each row's floor and copy bound from those
(`set_floors`)."""

from __future__ import annotations

from specedit.bench.score import Row
from specedit.bench.setups import Setup, costed_on
from specedit.bench.tasks import Task
from specedit.drafting.registry import build_artefacts, make_drafter
from specedit.engine.cost import CONTEXT_PROBE, PROBE_PROMPT, ContextCost, PassCost, measure_context
from specedit.engine.session import generate
from specedit.models.load import LoadedModel

# A prompt's tokens besides the input and the instruction (the template's), with room to spare.
PROMPT_FRAME = 256


def set_floors(
    row: Row,
    setup: Setup,
    floors: dict[str, list[ContextCost]],
    pass_costs: dict[str, PassCost],
) -> None:
    """The least the row's passes could take with the model they ran on, from the lowest
    costs of its engine measured so far: at all (the floor) and with drafts copied from the
    prompt and the answer (the copy bound, never below the floor; only for a row of one
    generation). llama-cpp-python's own decoding runs the GGUF file with the threads the
    llama.cpp engine has: that engine's costs, when it is among the engines. None for a row
    that ran no model (a merge) or whose model was not loaded."""
    engine = costed_on(setup.label)
    costs = floors.get(engine)
    if not costs or not row.prompt_tokens:
        return
    row.floor_seconds = min(cost.floor(row.prompt_tokens, row.new_tokens) for cost in costs)
    if row.prompt_ids:
        passes = pass_costs[engine]
        bound = min(cost.copy_bound(row.prompt_ids, row.tokens, passes) for cost in costs)
        row.copy_bound_seconds = max(bound, row.floor_seconds)


def warm_up(lm: LoadedModel, methods: tuple[str, ...] = ()) -> None:
    """Page the weights in, measure the pass-cost curves again (the draft model's too: the
    machine as it is now sizes the drafts) and build (or read) the methods' artefacts, as
    `models prepare` does, before anything is timed."""
    ids = lm.tokenizer("def warm_up():\n    return 1\n", add_special_tokens=False)["input_ids"]
    generate(lm.model, ids, make_drafter("pld", lm.model), max_new_tokens=8)
    for loaded in (lm, lm.draft):
        if loaded is not None:
            loaded.pass_cost(refresh=True)
    build_artefacts(lm, tuple(dict.fromkeys(methods)) or None)


def reach_of(lm: LoadedModel, tasks: list[Task], max_new_tokens: int | None) -> int:
    """The furthest position the tasks' generations reach: each prompt holds its input once and
    the answer about as much again, unless the answer is capped shorter."""
    furthest = 0
    for task in tasks:
        text = task.input + task.instruction
        input_tokens = len(lm.tokenizer(text, add_special_tokens=False)["input_ids"])
        answer = input_tokens if max_new_tokens is None else min(input_tokens, max_new_tokens)
        furthest = max(furthest, input_tokens + answer + PROMPT_FRAME)
    return furthest


def floor_costs(lm: LoadedModel, reach: int) -> ContextCost:
    """What a token costs by its position on this machine now, which the floors are made of,
    measured over the positions the tasks reach (whole prefill batches, CONTEXT_PROBE at most):
    the probe prefills its length twice, so a bench of short tasks does not pay for long ones."""
    length = min(-(-reach // PROBE_PROMPT) * PROBE_PROMPT, CONTEXT_PROBE, lm.context_length // 2)
    return measure_context(lm.model, length)
