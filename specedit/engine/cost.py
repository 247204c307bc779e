"""Drafts sized by what a pass costs on this machine.

A verify pass over n tokens does not cost n times a one-token step, nor the same: on a CPU a
narrow pass is memory-bound and a wide one compute-bound, and where one turns into the other
depends on the model, the engine and the threads (the 1.5B on llama.cpp, 2 cores: 1 token
49 ms, 8 tokens 0.30 s, 64 tokens 1.28 s). So the pass-cost curve is measured once per model
and machine (`measure`), and each draft is cut to the nodes worth their cost:

a pass that verifies the k likeliest nodes yields 1 + sum of their chances of being accepted
tokens, and costs cost(k + 1) seconds. The generation's long-run rate r (tokens per second) is
what is maximised, so the pass that gains most is the one maximising tokens - r * seconds
(Dinkelbach's rule for a ratio): a node is worth drafting while its chance of being accepted
pays for the time it adds at the rate the edit is going. Where the drafter says nothing about
its nodes' chances, the draft is verified whole.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from dataclasses import asdict, dataclass
from pathlib import Path

from specedit.engine.tree import DraftTree

PROBE_SIZES = (1, 2, 4, 8, 16, 32, 64)  # wider passes follow the last segment
PROBE_CONTEXT = 128  # tokens in the cache while the probe runs
RESCALE = 0.2  # weight of the latest pass in the running observed/predicted ratio


@dataclass(frozen=True)
class PassCost:
    """Seconds one verify pass takes, by the number of tokens in it (root included)."""

    sizes: tuple[int, ...]
    seconds: tuple[float, ...]

    def __call__(self, tokens: int) -> float:
        """Piecewise linear between the measured sizes, extended along the last segment."""
        sizes, seconds = self.sizes, self.seconds
        i = min(max(bisect_left(sizes, tokens), 1), len(sizes) - 1)
        slope = (seconds[i] - seconds[i - 1]) / (sizes[i] - sizes[i - 1])
        return max(seconds[i - 1] + slope * (tokens - sizes[i - 1]), seconds[0])

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)))

    @classmethod
    def load(cls, path: Path) -> PassCost:
        data = json.loads(path.read_text())
        return cls(tuple(data["sizes"]), tuple(data["seconds"]))


def measure(model, sizes: tuple[int, ...] = PROBE_SIZES) -> PassCost:
    """Time one verify pass of each size on `model` over a short context, as the engine runs
    them, after a warm-up pass of the widest (it pages the weights in and sizes the buffers).
    A few seconds; one sample each is enough, as a generation rescales the curve to its own
    passes (Sizer)."""
    from specedit.engine.target import open_target

    widest = max(sizes)
    vocabulary = min(int(model.config.vocab_size), 32000)
    tokens = [(7919 * i) % vocabulary for i in range(1, PROBE_CONTEXT + widest + 1)]
    target = open_target(model, PROBE_CONTEXT + widest * 2 + len(sizes) + 1)
    target.prefill(tokens[:PROBE_CONTEXT], False)
    prefix, seconds = PROBE_CONTEXT, []
    for size in (widest, *sizes):
        chain = DraftTree(tokens[PROBE_CONTEXT])
        chain.add_chain(tokens[PROBE_CONTEXT + 1 : PROBE_CONTEXT + size])
        started = target.clock()
        target.forward(chain, prefix, False)
        seconds.append(target.clock() - started)
        target.keep(prefix, [0])  # the root stays, as after a rejected draft
        prefix += 1
    return PassCost(tuple(sizes), tuple(seconds[1:]))


class Sizer:
    """One generation's view of the curve: rescaled by how long its passes really take (the
    context grows, the machine may be busy) and its own rate so far."""

    def __init__(self, cost: PassCost) -> None:
        self.cost = cost
        self.scale = 1.0
        self.tokens = 0
        self.seconds = 0.0

    def rate(self) -> float:
        """Tokens per second so far, and never less than plain decoding's (one token per
        one-token pass), which any draft must beat to be worth verifying."""
        plain = 1.0 / (self.scale * self.cost(1))
        return max(self.tokens / self.seconds, plain) if self.seconds > 0 else plain

    def observe(self, tokens_in_pass: int, verify_seconds: float, step_seconds: float,
                gained: int) -> None:  # fmt: skip
        """A pass over `tokens_in_pass` tokens took `verify_seconds` (of a step's
        `step_seconds`, drafting included) and gained `gained` tokens."""
        self.tokens += gained
        self.seconds += step_seconds
        ratio = verify_seconds / self.cost(tokens_in_pass)
        self.scale += RESCALE * (ratio - self.scale)

    def size(self, tree: DraftTree) -> DraftTree:
        """`tree` cut to the nodes whose chances pay for their time; whole if it has none."""
        chances = tree.path_chances()
        if chances is None:
            return tree
        ranked = sorted(range(1, len(tree)), key=lambda node: (-chances[node], node))
        rate, expected = self.rate(), 1.0
        best_value, best_k = expected - rate * self.scale * self.cost(1), 0
        for k, node in enumerate(ranked, start=1):
            expected += chances[node]
            value = expected - rate * self.scale * self.cost(k + 1)
            if value >= best_value:  # a free node is kept
                best_value, best_k = value, k
        return tree.subtree(ranked[:best_k])
