"""One generation: prefill, then draft -> verify -> accept -> commit until a stop.

The engine knows nothing about how drafts are made: it asks the drafter for a tree, verifies the
whole tree in one forward pass, walks it with the model's own choices, keeps the accepted path in
the KV cache and memory, and reports each step as an event.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from specedit.engine.arrays import as_numpy
from specedit.engine.cost import PassCost, size
from specedit.engine.drafter import Drafter
from specedit.engine.events import Generation, Stats, Step, StopCondition
from specedit.engine.memory import Memory
from specedit.engine.options import GREEDY, MAX_DRAFT, STRICT, Sampling, Verification
from specedit.engine.target import open_target, without_autograd
from specedit.engine.tree import DraftTree
from specedit.engine.verify import Verifier

if TYPE_CHECKING:
    import torch


@without_autograd
def generate(
    model,
    prompt: list[int],
    drafter: Drafter,
    *,
    max_new_tokens: int,
    sampling: Sampling = GREEDY,
    verification: Verification = STRICT,
    eos_token_ids: set[int] = frozenset(),
    max_draft: int = MAX_DRAFT,
    stop: StopCondition | None = None,
    on_step: Callable[[Step], None] | None = None,
    pass_cost: PassCost | None = None,
    choices: bool = False,
) -> Generation:
    """Generate up to `max_new_tokens` after `prompt` with `model` (a transformers model or a
    GGUF model), exactly as its plain decoding would (unless `verification` is conditional,
    which is lossy on purpose). With the machine's `pass_cost`, each draft is cut to the nodes
    worth verifying (engine/cost.py). With `choices`, each new token comes with its probability
    and the likeliest other token (Generation: what a redraw branches on); a pass over the
    vocabulary per token, so only when asked."""
    if not prompt:
        raise ValueError("the prompt is empty")
    target = open_target(model, len(prompt) + max_new_tokens + max_draft + 1)
    hidden = bool(drafter.hidden_layers)
    if missing := sorted(set(drafter.hidden_layers) - set(target.state_layers)):
        raise ValueError(f"{drafter.name} reads hidden states (layers {missing}) the model lacks")
    started = target.clock()
    stats = Stats(prompt_tokens=len(prompt))
    verifier = Verifier(sampling, verification)
    memory = Memory(prompt, drafter.hidden_layers)

    # Prefill: all prompt tokens but the last, which becomes the first tree's root.
    if len(prompt) > 1:
        states = target.prefill(prompt[:-1], hidden)
        memory.store_hidden(states, list(range(len(prompt) - 1)))
    stats.prefill_seconds = target.clock() - started

    new_tokens: list[int] = []
    probabilities: list[float] = []
    runners_up: list[int] = []
    stop_reason: str | None = "length"
    while len(new_tokens) < max_new_tokens:
        prefix_length = len(memory) - 1
        t0 = target.clock()
        budget = min(max_draft, max_new_tokens - len(new_tokens) - 1)
        tree = drafter.propose(memory, budget) if budget > 0 else DraftTree(memory.tokens[-1])
        if not target.trees:
            tree = tree.main_chain()
        if pass_cost:
            tree = size(tree, pass_cost)
        t1 = target.clock()
        out = target.forward(tree, prefix_length, hidden)
        t2 = target.clock()
        stats.draft_seconds += t1 - t0
        stats.verify_seconds += t2 - t1
        stats.forward_passes += 1
        stats.drafted_tokens += len(tree) - 1

        acceptance = verifier.walk(tree, out.logits, eos_token_ids)
        drafter.observe(tree, acceptance.path)
        kept = [0, *acceptance.path]
        target.keep(prefix_length, kept)
        memory.store_hidden(out.hidden_states, kept)

        step = Step(
            tokens=[tree.token(n) for n in acceptance.path] + [acceptance.next_token],
            sources=[tree.source(n) for n in acceptance.path] + [None],
            kinds=[tree.kind(n) for n in acceptance.path] + [None],
            drafted=len(tree) - 1,
            relaxed=[*acceptance.relaxed, False],
        )
        if choices:
            chances, others = _second_choices(out.logits, kept, step.tokens)
        stop_reason = _commit(step, new_tokens, max_new_tokens, eos_token_ids, stop)
        if choices:
            probabilities += chances[: len(step.tokens)]
            runners_up += others[: len(step.tokens)]
        memory.extend(step.tokens)
        stats.accepted_tokens += min(len(acceptance.path), len(step.tokens))
        stats.relaxed_tokens += sum(step.relaxed[: len(step.tokens)])
        stats.accepted_lengths[len(acceptance.path)] += 1
        stats.accepted_paths[_path_kind(tree, acceptance.path)] += 1
        if on_step:
            on_step(step)
        if stop_reason:
            break

    stats.new_tokens = len(new_tokens)
    stats.drafting = drafter.report()
    stats.total_seconds = target.clock() - started
    return Generation(new_tokens, stop_reason or "length", stats, probabilities, runners_up)


def _second_choices(
    logits: np.ndarray | torch.Tensor, rows: list[int], tokens: list[int]
) -> tuple[list[float], list[int]]:
    """For each token a pass committed (token k follows tree node rows[k]), the probability
    the model gave it and the likeliest other token there. In place on one copy of the rows:
    a vocabulary-wide pass costs about a millisecond a token, and an answer has thousands."""
    scores = as_numpy(logits[rows])  # indexed with a list: a copy of its own
    at = np.arange(len(rows))
    best = scores.argmax(-1)
    top = scores[at, best]
    chosen = scores[at, tokens] - top
    scores[at, best] = -np.inf
    others = np.where(best == np.asarray(tokens), scores.argmax(-1), best)
    scores[at, best] = top
    scores -= top[:, None]
    np.exp(scores, out=scores)
    chances = np.exp(chosen) / scores.sum(-1)
    return chances.tolist(), others.tolist()


def _path_kind(tree: DraftTree, path: list[int]) -> str:
    """Name the accepted path by the kinds along it: "none", "main", "branch+successor", ..."""
    if not path:
        return "none" if len(tree) > 1 else "no draft"
    return "+".join(dict.fromkeys(tree.kind(node) for node in path))


def _commit(
    step: Step,
    new_tokens: list[int],
    max_new_tokens: int,
    eos_token_ids: set[int],
    stop: StopCondition | None,
) -> str | None:
    """Append the step's tokens one at a time, cutting the step at the first stop.

    Returns why generation must stop ("eos", "length", the stop condition's reason), or None.
    """
    for i, token in enumerate(step.tokens):
        new_tokens.append(token)
        reason = None
        if token in eos_token_ids:
            reason = "eos"
        elif stop is not None and (said := stop(token)):
            reason = said if isinstance(said, str) else "stop"
        elif len(new_tokens) >= max_new_tokens:
            reason = "length"
        if reason:
            del step.tokens[i + 1 :], step.sources[i + 1 :], step.kinds[i + 1 :]
            del step.relaxed[i + 1 :]
            return reason
    return None
