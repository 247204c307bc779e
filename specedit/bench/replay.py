"""`specedit bench --replay`: the answers a bench run recorded, drafted again without the model.

On a machine whose speed drifts (docs/benchmarks.md), a difference of a few percent between two
ways of drafting is lost in the noise of timed runs. But a greedy answer is a fact that no strict
method changes, so a drafter that reads only tokens can be replayed against it pass by pass: it
proposes from the prompt and the answer so far, the engine's sizing cuts the draft with the
pass-cost curve the run measured (engine/cost.py's `size`), and the recorded answer says how
much of it is accepted. Each pass is costed with that curve, where it sits in the context
(`ContextCost.pass_seconds`), and the prompt's prefill as the floor counts it. The same answers
and the same costs for every method: only the drafting differs, and the result is the same on
every run.

Near the end of an answer a draft is limited by the tokens left in it, where the engine is
limited by the token limit; drafters that read the model (hidden states, a draft model) or the
edit's input apart from the prompt (`pool`) cannot be replayed.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from rich.console import Console
from rich.table import Table

from specedit.bench.ablations import ABLATIONS, needs_draft_model
from specedit.bench.report import show
from specedit.bench.setups import costed_on
from specedit.drafting.registry import METHODS, DraftSources, make_drafter
from specedit.engine.cost import ContextCost, PassCost, size
from specedit.engine.memory import Memory
from specedit.engine.options import MAX_DRAFT
from specedit.engine.tree import DraftTree

# What a token-only drafter reads of its model: the engine (llama.cpp's keeps AdaPLD to its
# token-only parts) and the depth it would compare states at, which it then does not.
TOKENS_ONLY_MODEL = SimpleNamespace(engine="llama.cpp", config=SimpleNamespace(num_hidden_layers=1))


class ReplayError(Exception):
    """A recording that cannot be replayed, or no method that can."""


@dataclass
class Replayed:
    """One answer drafted again by one method."""

    task: str
    method: str
    seconds: float  # the prompt's prefill and every pass, at the recorded costs
    passes: int
    drafted: int
    accepted: int
    copy_bound: float  # the least a copy drafter could take on this answer (ContextCost)

    @property
    def times_copy_bound(self) -> float:
        return self.seconds / self.copy_bound if self.copy_bound else 0.0


def replayable(method: str) -> bool:
    """Whether `method` drafts from tokens alone (on the llama.cpp engine, where AdaPLD does)."""
    if method not in METHODS and method not in ABLATIONS:
        return False
    if needs_draft_model(method) or method == "pool":
        return False
    try:
        drafter = make_drafter(method, TOKENS_ONLY_MODEL)
    except Exception:  # one that needs more of the model than the stub has: not replayable
        return False
    return not drafter.hidden_layers and getattr(drafter, "vocabulary", None) is None


@dataclass
class Passes:
    """The verify passes of one replayed answer."""

    widths: list[int]  # tokens in each pass, its root included
    starts: list[int]  # the position of each pass's first drafted token (its root's + 1)
    drafted: int
    accepted: int

    def seconds(self, prompt_length: int, passes: PassCost, context: ContextCost) -> float:
        """The prompt's prefill and every pass, at `passes`' costs scaled to where each sits."""
        return context.prompt_seconds(prompt_length) + sum(
            context.pass_seconds(passes, width, start)
            for width, start in zip(self.widths, self.starts, strict=True)
        )


def replay_answer(
    method: str,
    prompt: list[int],
    answer: list[int],
    passes: PassCost,
    input_span: tuple[int, int] | None = None,
    instruction_span: tuple[int, int] | None = None,
    first_copy: int | None = None,
    line_breaks: list[int] | None = None,
) -> Passes:
    """The passes of `method` drafting `answer` after `prompt`, as the engine's loop would
    (engine/session.py's `generate`; tests/bench/test_replay.py holds the two to the same passes on
    a real model) with the model choosing `answer`'s tokens, its drafts sized by `passes`;
    where the input and the instruction lie in the prompt (`input_span`, `instruction_span`),
    where the answer's first copy starts (`first_copy`) and which of their tokens break lines
    (`line_breaks`; None: not recorded) as the edit told its drafter."""
    start, end = input_span or (0, 0)
    instruction = tuple(instruction_span) if instruction_span else None
    breaks = None if line_breaks is None else frozenset(line_breaks).__contains__
    sources = DraftSources(
        start,
        prompt[start:end],
        instruction=instruction,
        first_copy=first_copy,
        line_break=breaks,
    )
    drafter = make_drafter(method, TOKENS_ONLY_MODEL, sources)
    memory = Memory(prompt)
    replayed = Passes([], [], 0, 0)
    done = 0
    while done < len(answer):
        budget = min(MAX_DRAFT, len(answer) - done - 1)
        tree = drafter.propose(memory, budget) if budget > 0 else DraftTree(memory.tokens[-1])
        tree = size(tree, passes)
        children, node, path = tree.children(), 0, []
        while done + len(path) < len(answer) - 1:
            wanted = answer[done + len(path)]
            node = next((c for c in children[node] if tree.token(c) == wanted), None)
            if node is None:
                break
            path.append(node)
        drafter.observe(tree, path)
        replayed.widths.append(len(tree))
        replayed.starts.append(len(prompt) + done)
        replayed.drafted += len(tree) - 1
        replayed.accepted += len(path)
        memory.extend(answer[done : done + len(path) + 1])
        done += len(path) + 1
    return replayed


def replay_run(recording: Path, methods: list[str]) -> list[Replayed]:
    """Every task of a bench run's JSON (`--json`) drafted again by each of `methods`, with the
    answer its first strict row recorded and its engine's costs (the measurement that costs
    the replay least, as the floor takes the lowest)."""
    try:
        data = json.loads(recording.read_text())
        rows, pass_costs, floor_costs = data["rows"], data["pass_costs"], data["floor_costs"]
    except (OSError, ValueError, KeyError) as exc:
        raise ReplayError(f"{recording} is no bench run recorded with its answers: {exc}") from None
    if refused := [m for m in methods if not replayable(m)]:
        raise ReplayError(
            f"cannot replay {', '.join(refused)}: a replay drafts from tokens alone "
            "(ar, pld, adapld and their ablations do)"
        )
    results: list[Replayed] = []
    seen: set[str] = set()
    for row in rows:
        engine = costed_on(row["method"])
        lossy = any(f"~{mode}" in row["method"] for mode in ("conditional", "mixed"))
        answered = row.get("tokens") and row.get("prompt_ids")  # one generation's
        if row["task"] in seen or lossy or not answered or engine not in pass_costs:
            continue
        seen.add(row["task"])
        curve = pass_costs[engine]
        passes = PassCost(tuple(curve["sizes"]), tuple(curve["seconds"]), 0.0)
        contexts = [
            ContextCost(tuple(c["prefill"]), tuple(c["verify"])) for c in floor_costs[engine]
        ]
        prompt, answer = row["prompt_ids"], row["tokens"]
        bound = min(c.copy_bound(prompt, answer, passes) for c in contexts)
        for method in methods:
            marks = (
                row.get("input_span"),
                row.get("instruction_span"),
                row.get("first_copy"),
                row.get("line_breaks"),
            )
            replayed = replay_answer(method, prompt, answer, passes, *marks)
            seconds = min(replayed.seconds(len(prompt), passes, c) for c in contexts)
            results.append(
                Replayed(
                    row["task"],
                    method,
                    seconds,
                    len(replayed.widths),
                    replayed.drafted,
                    replayed.accepted,
                    copy_bound=bound,
                )
            )
    if not results:
        raise ReplayError(f"{recording} holds no strict answers with their tokens to replay")
    return results


def print_replay(console: Console, results: list[Replayed], methods: list[str]) -> None:
    table = Table(
        title="replayed (seconds at the recorded costs; x copy = over the least a drafter "
        "copying from the input could take)"
    )
    for column in ("task", "method", "seconds", "passes", "drafted", "accepted", "x copy"):
        table.add_column(column, justify="left" if column in ("task", "method") else "right")
    for r in results:
        table.add_row(
            r.task,
            r.method,
            f"{r.seconds:.1f}",
            str(r.passes),
            str(r.drafted),
            str(r.accepted),
            f"{r.times_copy_bound:.2f}x",
        )
    show(console, table)
    first = methods[0]
    totals = Table(title=f"summary over tasks (vs {first}: its total seconds over each's)")
    for column in ("method", "total s", f"vs {first}", "median x copy", "passes", "drafted"):
        totals.add_column(column, justify="left" if column == "method" else "right")
    total = {m: sum(r.seconds for r in results if r.method == m) for m in methods}
    for method in methods:
        mine = [r for r in results if r.method == method]
        totals.add_row(
            method,
            f"{total[method]:.1f}",
            f"{total[first] / total[method]:.3f}x",
            f"{statistics.median(r.times_copy_bound for r in mine):.2f}x",
            str(sum(r.passes for r in mine)),
            str(sum(r.drafted for r in mine)),
        )
    show(console, totals)
