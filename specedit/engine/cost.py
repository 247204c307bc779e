"""Drafts sized by what a pass costs on this machine.

A verify pass over n tokens does not cost n times a one-token step, nor the same: on a CPU a
narrow pass is memory-bound and a wide one compute-bound, and where one turns into the other
depends on the model, the engine and the threads. So the pass-cost curve is measured once per
model and machine (`measure`), and each draft is cut to the nodes worth their cost (`size`):

a pass that verifies the k likeliest nodes yields 1 + the sum of their chances of being
accepted in tokens and costs cost(k + 1) seconds; the k with the most tokens per second is
verified. Each pass then advances the edit at the best rate open to it (which also minimises
the edit's total time while the chances hold). Nodes whose drafter gave no chance are verified
as drafted.

The same measurement times a prompt's prefill, so that `specedit bench` can set each edit
against its floor: the least its passes could take on this machine (`PassCost.floor`).

A curve measured while other processes held the cores is not the machine's: llama.cpp's
threads, descheduled in turn, wait on each other, and wide passes slow far more than narrow
ones. The measurement notes it (`contended`: the process got much less CPU time than its
threads could use) and such a curve is measured again once the cores look free.
"""

from __future__ import annotations

import json
import os
import time
from bisect import bisect_left
from dataclasses import asdict, dataclass
from pathlib import Path

from specedit.engine.tree import DraftTree

PROBE_SIZES = (1, 2, 4, 8, 16, 32, 64)  # wider passes follow the last segment
PROBE_CONTEXT = 128  # tokens in the cache while the probe runs
PROBE_PROMPT = 512  # tokens of the timed prefill: one of llama.cpp's prefill batches
PROBE_SAMPLES = 3  # passes timed per size; the fastest counts
# Below this share of its threads' CPU time, a measurement shared the cores with other work.
CONTENDED_SHARE = 0.75


@dataclass(frozen=True)
class PassCost:
    """Seconds one verify pass takes, by the number of tokens in it (root included), and
    seconds per token of a prompt's prefill."""

    sizes: tuple[int, ...]
    seconds: tuple[float, ...]
    prefill_per_token: float
    contended: bool = False  # measured while other work held the cores: measure again

    def __call__(self, tokens: int) -> float:
        """Piecewise linear between the measured sizes, extended along the last segment."""
        sizes, seconds = self.sizes, self.seconds
        i = min(max(bisect_left(sizes, tokens), 1), len(sizes) - 1)
        slope = (seconds[i] - seconds[i - 1]) / (sizes[i] - sizes[i - 1])
        return max(seconds[i - 1] + slope * (tokens - sizes[i - 1]), seconds[0])

    @property
    def verify_per_token(self) -> float:
        """Seconds per token of the widest measured pass: a token verified at full batch."""
        return self.seconds[-1] / self.sizes[-1]

    def floor(self, prompt_tokens: int, new_tokens: int) -> float:
        """The least a generation's passes could take here: each prompt token prefilled once
        and each new token verified once in a pass of the widest measured size, no drafted
        token rejected. A generation's seconds over it say how much is left to gain."""
        return prompt_tokens * self.prefill_per_token + new_tokens * self.verify_per_token

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)))

    @classmethod
    def load(cls, path: Path) -> PassCost:
        """The saved cost; KeyError for a file saved before the prefill was timed, which the
        caller measures again like any missing cost."""
        data = json.loads(path.read_text())
        sizes, seconds = tuple(data["sizes"]), tuple(data["seconds"])
        return cls(sizes, seconds, float(data["prefill_per_token"]), bool(data.get("contended")))


def cores_free(threads: int) -> bool:
    """Whether the cores look free for `threads` more: the 1-minute load average leaves room
    (where the system reports none, they are taken to be)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return True
    return load + threads <= (os.cpu_count() or 1) + 0.5


def measure(model, sizes: tuple[int, ...] = PROBE_SIZES, threads: int | None = None) -> PassCost:
    """Time verify passes of each size on `model` over a short context, as the engine runs
    them, after a warm-up pass of the widest (it pages the weights in and sizes the buffers).
    A few seconds. Each size keeps the fastest of PROBE_SAMPLES passes, and no size costs more
    than a wider one: another process taking the cores only ever adds time, and one slow
    sample, kept in the cache for good, would skew every draft sized by it. Only the curve's
    shape matters (the rule compares tokens per second of passes measured alike), so a longer
    context, which slows every pass alike, does not change the choice much. Then a prompt of
    PROBE_PROMPT tokens is prefilled on an empty cache, as an edit's prompt is, for its cost
    per token. With the `threads` a CPU model computes on, the process's CPU time over the
    measurement says whether it had the cores (`contended`)."""
    from specedit.engine.target import open_target

    wall, cpu = time.perf_counter(), time.process_time()
    widest = max(sizes)
    vocabulary = min(int(model.config.vocab_size), 32000)
    length = max(PROBE_CONTEXT + widest, PROBE_PROMPT)
    tokens = [(7919 * i) % vocabulary for i in range(1, length + 1)]
    passes = 1 + len(sizes) * PROBE_SAMPLES
    # A root is kept each pass; the probe's tokens are no prompt to keep for later edits.
    target = open_target(model, PROBE_CONTEXT + passes + widest, reuse=False)
    target.prefill(tokens[:PROBE_CONTEXT], False)
    prefix = PROBE_CONTEXT

    def timed(size: int) -> float:
        nonlocal prefix
        chain = DraftTree(tokens[PROBE_CONTEXT])
        chain.add_chain(tokens[PROBE_CONTEXT + 1 : PROBE_CONTEXT + size])
        started = target.clock()
        target.forward(chain, prefix, False)
        seconds = target.clock() - started
        target.keep(prefix, [0])  # the root stays, as after a rejected draft
        prefix += 1
        return seconds

    timed(widest)
    fastest = [min(timed(size) for _ in range(PROBE_SAMPLES)) for size in sizes]
    curve = [min(fastest[i:]) for i in range(len(fastest))]  # never above a wider pass
    prefill = _prefill_per_token(model, tokens[:PROBE_PROMPT])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    contended = threads is not None and cpu < CONTENDED_SHARE * threads * wall
    return PassCost(tuple(sizes), tuple(curve), prefill, contended)


def _prefill_per_token(model, tokens: list[int]) -> float:
    """Seconds per token of prefilling `tokens` into an empty cache, as an edit's prompt is
    (the weights already paged in by the passes before it)."""
    from specedit.engine.target import open_target

    target = open_target(model, len(tokens), reuse=False)
    started = target.clock()
    target.prefill(tokens, False)
    return (target.clock() - started) / len(tokens)


def size(tree: DraftTree, cost: PassCost) -> DraftTree:
    """`tree` cut to the likeliest nodes that give the most expected tokens per second.

    Nodes are added in order of their chance (a parent's is never below its child's, so a
    kept node's ancestors are kept). A node without a confidence is kept as drafted, with its
    ancestors: it widens the pass but, its chance unknown, adds no expected token. A tree
    whose drafter gave no confidences at all is verified whole.
    """
    chances = tree.path_chances()
    if chances is None:
        return tree
    kept: set[int] = set()
    for node in range(1, len(tree)):
        if tree.confidences[node - 1] is None:
            while node > 0 and node not in kept:
                kept.add(node)
                node = tree.parent(node)
    expected = 1.0 + sum(chances[n] for n in kept if tree.confidences[n - 1] is not None)
    ranked = sorted(set(range(1, len(tree))) - kept, key=lambda node: (-chances[node], node))
    width = 1 + len(kept)
    best_rate, best_k = expected / cost(width), 0
    for k, node in enumerate(ranked, start=1):
        expected += chances[node]
        rate = expected / cost(width + k)
        if rate >= best_rate:  # a free node is kept
            best_rate, best_k = rate, k
    return tree.subtree(sorted(kept) + ranked[:best_k])
