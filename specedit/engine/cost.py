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

The same measurement times a prompt's prefill (what the hybrid weighs a draft model's catch-up
by). `specedit bench` sets each edit against its floor, the least its passes could take on this
machine, from a longer measurement (`ContextCost`): a token's cost grows with the context before
it (attention reads every earlier token), so a floor timed over a short context is one that a
long prompt's own prefill already exceeds. Where the answer holds new text, it also sets each
edit against the least a drafter that copies could take (`ContextCost.copy_bound`).

A curve measured while other processes held the cores is not the machine's: llama.cpp's
threads, descheduled in turn, wait on each other, and wide passes slow far more than narrow
ones. The measurement notes it (`contended`: the process got much less CPU time than its
threads could use) and such a curve is measured again once the cores look free.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from bisect import bisect_left
from dataclasses import asdict, dataclass
from itertools import count, pairwise
from pathlib import Path

from specedit.engine.tree import DraftTree

PROBE_SIZES = (1, 2, 4, 8, 16, 32, 64)  # wider passes follow the last segment
PROBE_CONTEXT = 128  # tokens in the cache while the probe runs
PROBE_PROMPT = 512  # tokens of the timed prefill: one of llama.cpp's prefill batches
PROBE_SAMPLES = 3  # passes timed per size; the fastest counts
CONTEXT_PROBE = 2048  # tokens the floor's costs are measured over (ContextCost)
BATCH_SAMPLES = 2  # times each of its prefill batches is fed; the fastest counts
# Below this share of its threads' CPU time, a measurement shared the cores with other work.
CONTENDED_SHARE = 0.75
# What an edit asks of the model, by which two layouts of the weights are weighed
# (`PassCost.edit_seconds`): a prompt of this many tokens prefilled, this many tokens copied in
# passes of the widest probe, and this many written a pass each (new text).
EDIT_PROMPT, EDIT_COPIED, EDIT_WRITTEN = 1000, 300, 30


@dataclass(frozen=True)
class PassCost:
    """Seconds one verify pass takes, by the number of tokens in it (root included), and
    seconds per token of a prompt's prefill."""

    sizes: tuple[int, ...]
    seconds: tuple[float, ...]
    prefill_per_token: float
    contended: bool = False  # measured while other work held the cores: measure again
    # llama.cpp's weights repacked for the CPU's kernels when this was measured
    # (engine/llamacpp.py `GgufModel.relayout`); None where it does not apply (torch)
    repack: bool | None = None

    def __call__(self, tokens: int) -> float:
        """Piecewise linear between the measured sizes, extended along the last segment."""
        sizes, seconds = self.sizes, self.seconds
        i = min(max(bisect_left(sizes, tokens), 1), len(sizes) - 1)
        slope = (seconds[i] - seconds[i - 1]) / (sizes[i] - sizes[i - 1])
        return max(seconds[i - 1] + slope * (tokens - sizes[i - 1]), seconds[0])

    def edit_seconds(self) -> float:
        """What a typical edit's passes cost on this curve: its prompt prefilled, its copied
        tokens verified in the widest probe's passes, its new ones written a pass each
        (EDIT_PROMPT, EDIT_COPIED, EDIT_WRITTEN). Two curves of the same model compare by it."""
        widest = self.sizes[-1]
        copied = EDIT_COPIED / widest * self(widest)
        return EDIT_PROMPT * self.prefill_per_token + copied + EDIT_WRITTEN * self(1)

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self)))

    @classmethod
    def load(cls, path: Path) -> PassCost:
        """The saved cost; KeyError for a file saved before the prefill was timed, which the
        caller measures again like any missing cost."""
        data = json.loads(path.read_text())
        sizes, seconds = tuple(data["sizes"]), tuple(data["seconds"])
        prefill, contended = float(data["prefill_per_token"]), bool(data.get("contended"))
        repack = data.get("repack")
        return cls(sizes, seconds, prefill, contended, None if repack is None else bool(repack))


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
    prefixes = count(PROBE_CONTEXT)  # one root kept per pass

    def timed(size: int) -> float:
        prefix = next(prefixes)
        chain = DraftTree(tokens[PROBE_CONTEXT])
        chain.add_chain(tokens[PROBE_CONTEXT + 1 : PROBE_CONTEXT + size])
        started = target.clock()
        target.forward(chain, prefix, False)
        seconds = target.clock() - started
        target.keep(prefix, [0])  # the root stays, as after a rejected draft
        return seconds

    timed(widest)
    fastest = [min(timed(size) for _ in range(PROBE_SAMPLES)) for size in sizes]
    curve = [min(fastest[i:]) for i in range(len(fastest))]  # never above a wider pass
    prefill = _prefill_per_token(model, tokens[:PROBE_PROMPT])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    contended = threads is not None and cpu < CONTENDED_SHARE * threads * wall
    return PassCost(tuple(sizes), tuple(curve), prefill, contended, getattr(model, "repack", None))


def _prefill_per_token(model, tokens: list[int]) -> float:
    """Seconds per token of prefilling `tokens` into an empty cache, as an edit's prompt is
    (the weights already paged in by the passes before it)."""
    from specedit.engine.target import open_target

    target = open_target(model, len(tokens), reuse=False)
    started = target.clock()
    target.prefill(tokens, False)
    return (target.clock() - started) / len(tokens)


@dataclass(frozen=True)
class ContextCost:
    """Seconds per token by the context before it, as `base + slope * position`: for a prompt
    prefilled in full batches (`prefill`) and for tokens verified in passes of the widest probe
    size (`verify`). What the bench's floor is made of."""

    prefill: tuple[float, float]  # (seconds per token at position 0, more per earlier token)
    verify: tuple[float, float]

    def floor(self, prompt_tokens: int, new_tokens: int) -> float:
        """The least a generation's passes could take here: each prompt token prefilled once,
        then each new token verified once in a pass of the widest size, no drafted token
        rejected, each at the position where it sits. A generation's seconds over it say how
        much is left to gain."""
        verify, verify_slope = self.verify
        answer_middle = prompt_tokens + (new_tokens - 1) / 2
        return self.prompt_seconds(prompt_tokens) + new_tokens * (
            verify + verify_slope * answer_middle
        )

    def copy_bound(self, prompt: list[int], answer: list[int], passes: PassCost) -> float:
        """The least a generation of `answer` could take here with drafts copied from what came
        before: the floor of any drafter that, like every lookup method, drafts a token only
        after an occurrence of the token before it. A token whose pair with its predecessor
        occurs nowhere earlier in the prompt or the answer cannot be drafted so: it is the
        model's own token, the last of its pass. The passes are laid out as well as knowing the
        answer allows (each pass's drafts chosen for the least total time), each at `passes`'
        cost for its width, scaled from the probe's short context to where it sits. Where the
        floor is out of reach because the answer holds new text, a copy drafter's seconds over
        this bound say what is left to gain by copying better."""
        seen = set(pairwise(prompt))
        copyable = []
        for previous, token in zip([*prompt[-1:], *answer], answer, strict=False):
            copyable.append((previous, token) in seen)
            seen.add((previous, token))
        # least[i]: the least seconds for answer[i:] once answer[:i] is committed; a pass from
        # there drafts answer[i : i + k] (each copyable) and yields answer[i + k] itself
        least = [0.0] * (len(answer) + 1)
        for i in range(len(answer) - 1, -1, -1):
            best, drafted = float("inf"), 0
            while i + drafted < len(answer) and drafted < passes.sizes[-1]:
                pass_seconds = self.pass_seconds(passes, 1 + drafted, len(prompt) + i)
                best = min(best, pass_seconds + least[i + drafted + 1])
                if not copyable[i + drafted]:
                    break
                drafted += 1
            least[i] = best
        return self.prompt_seconds(len(prompt)) + least[0]

    def prompt_seconds(self, prompt_tokens: int) -> float:
        """Each prompt token prefilled once, at the cost of its position."""
        prefill, prefill_slope = self.prefill
        return prompt_tokens * (prefill + prefill_slope * (prompt_tokens - 1) / 2)

    def pass_seconds(self, passes: PassCost, width: int, position: int) -> float:
        """A verify pass of `width` tokens from `position` on: `passes`' cost for its width,
        measured over PROBE_CONTEXT tokens, scaled to what a token costs where it sits."""
        verify, verify_slope = self.verify
        at_probe = verify + verify_slope * PROBE_CONTEXT
        there = verify + verify_slope * (position + (width - 1) / 2)
        return passes(width) * (there / at_probe if at_probe else 1.0)


def measure_context(
    model, length: int = CONTEXT_PROBE, widest: int = PROBE_SIZES[-1], batches: int = 4
) -> ContextCost:
    """Prefill `length` tokens into an empty cache in `batches` equal batches (full ones,
    PROBE_PROMPT tokens, at the default length; each fed BATCH_SAMPLES times, dropped in
    between) and after each time a pass of `widest` tokens (the fastest of PROBE_SAMPLES);
    then fit each cost per token to a line over the middle position of what it fed. Other work
    on the machine only ever adds time, hence the fastest (which also leaves out the paging in
    and sizing that the first feed does for the rest). The first batch counts: a token's cost
    grows faster further on, so a line fitted there and carried back to position 0 can say a
    prompt's first tokens cost far less than they do. About twice as long as prefilling `length`
    tokens takes: the bench measures it once per run, before it times anything."""
    from specedit.engine.target import open_target

    batch = length // batches
    vocabulary = min(int(model.config.vocab_size), 32000)
    capacity = batches * (batch + PROBE_SAMPLES) + widest
    tokens = [(7919 * i) % vocabulary for i in range(1, capacity + 1)]
    target = open_target(model, capacity, reuse=False)
    prefilled: list[tuple[float, float]] = []  # (middle position, seconds per token)
    verified: list[tuple[float, float]] = []
    held = 0  # tokens in the cache: what was prefilled, and the root each pass kept
    for _ in range(batches):
        fastest = float("inf")
        for sample in range(BATCH_SAMPLES):
            if sample:
                target.keep(held, [])  # the batch dropped, to be fed again
            started = target.clock()
            target.prefill(tokens[: held + batch], False)
            fastest = min(fastest, target.clock() - started)
        prefilled.append((held + (batch - 1) / 2, fastest / batch))
        held += batch
        fastest = float("inf")
        for _ in range(PROBE_SAMPLES):
            chain = DraftTree(tokens[held])
            chain.add_chain(tokens[held + 1 : held + widest])
            started = target.clock()
            target.forward(chain, held, False)
            fastest = min(fastest, target.clock() - started)
            target.keep(held, [0])  # the root stays: the next batch goes on after it
            held += 1
        # the middle pass's middle position: whichever was fastest, within a token of it
        verified.append((held - PROBE_SAMPLES + 1 + (widest - 1) / 2, fastest / widest))
    return ContextCost(_line(prefilled), _line(verified))


def _line(points: list[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares (base, slope) through `points`, the slope never below 0 (a later point
    measured faster only by chance) nor the base."""
    if len(points) < 2:
        return (min(y for _, y in points), 0.0)
    xs, ys = zip(*points, strict=True)
    fit = statistics.linear_regression(xs, ys)
    slope = max(fit.slope, 0.0)
    return (max(statistics.fmean(ys) - slope * statistics.fmean(xs), 0.0), slope)


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
