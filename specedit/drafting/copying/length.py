"""Adaptive draft length for the copy path (Pacer, training-free).

The best draft length changes every step: inside an unchanged stretch a 64-token copy is
accepted whole, right after an edit it is rejected at once, and on this CPU a rejected token is
not free (each drafted token makes the verify pass cost more). So the copy is drafted in blocks of
`block` tokens; a pre-verifier estimates each block's mean acceptance and drafting stops when it
falls under a threshold that grows by `growth` per block, as in Pacer.

The pre-verifier needs no training: it estimates the chance that one more copied token is
accepted from how long the copy's context agrees with the current context (the number of tokens
before the anchor that match the tokens before the current one), learned online on this
document as accepted / tested counts per agreement bucket, with a prior. Every accepted token
lengthens the agreement by one, so draft token i is read from the bucket of the anchor's agreement
+ i - 1: a copy that has held for a while is likelier to go on holding (a run-length hazard; a
single chance for the whole draft cut long copies short while the document was still young).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from itertools import accumulate
from operator import mul
from typing import Protocol

from specedit.engine.memory import Memory

AGREEMENT_EDGES = (1, 2, 4, 8, 16)  # buckets: 0, 1, 2-3, 4-7, 8-15, 16+
# How many of a token's own copies the agreement's estimate weighs as (AgreementLength).
PAST_WEIGHT = 1.0
PRIOR = ((0.70, 4), (0.80, 4), (0.88, 4), (0.93, 4), (0.96, 4), (0.98, 4))  # (mean, weight)
# A copy of the input whose anchor agrees for at most JUMP_AGREEMENT tokens and does not lie
# within NEAR tokens after where the last accepted copy of the input ended is a jump elsewhere
# in the input; jumps are accepted far less often than copies that go on where the answer left
# the input (docs/engines.md, "Copies that jump"), and learn from a prior of their own.
JUMP_AGREEMENT = 1
NEAR = 16
JUMP_PRIOR = ((0.25, 4), (0.45, 4), *PRIOR[2:])
# Copies of the answer's own earlier text (a line like one it wrote above) were accepted less
# often than copies of the input at every agreement, on the suite and on HumanEvalFix
# (docs/engines.md, "Copies of the answer's own text"): they learn from a prior of their own.
ANSWER_PRIOR = ((0.45, 4), (0.55, 4), (0.70, 4), (0.80, 4), (0.85, 4), (0.95, 4))
# A copy of the input into a line the answer began otherwise than the copied line (its anchor
# agrees with fewer tokens than the answer's line holds so far: the model is writing a line of
# its own and met a token the input has mid-line) was accepted at its first token about 4
# times in 10, against 9 in 10 for copies on a line begun alike (docs/engines.md, "Copies into a
# line the answer began otherwise"): they learn from a prior of their own.
UNLIKE_LINE_PRIOR = ((0.40, 4), (0.55, 4), (0.75, 4), (0.90, 4), (0.96, 4), (0.98, 4))


def blockwise_length(survival: list[float], block: int, threshold: float, growth: float) -> int:
    """Pacer's rule: draft a block, pre-verify it, stop after the first block whose mean
    survival estimate falls under the threshold, which grows by `growth` per block.

    `survival[i]` estimates the chance that draft token i+1 and all before it are accepted.
    """
    length = 0
    while length < len(survival):
        start, length = length, min(length + block, len(survival))
        if sum(survival[start:length]) / (length - start) < threshold:
            break
        threshold *= growth
    return length


AGREEMENT_LIMIT = 32  # the most tokens `agreement` counts


def agreement(tokens: list[int], anchor: int, current: int, limit: int = AGREEMENT_LIMIT) -> int:
    """How many tokens before `anchor` equal the tokens before `current` (at most `limit`)."""
    n = 0
    while n < limit and anchor - 1 - n >= 0 and tokens[anchor - 1 - n] == tokens[current - 1 - n]:
        n += 1
    return n


class AdaptiveLength:
    """Chooses how many tokens of a copy to draft, and learns from what was accepted."""

    def __init__(
        self,
        block: int = 8,
        threshold: float = 0.2,
        growth: float = 1.03,
        max_length: int = 64,
        prior: tuple[tuple[float, int], ...] | None = None,
    ) -> None:
        """`prior`: (mean, weight) per agreement bucket; PRIOR where None."""
        self.block, self.threshold, self.growth, self.max_length = (
            block,
            threshold,
            growth,
            max_length,
        )
        prior = prior or PRIOR
        self.accepted = [mean * weight for mean, weight in prior]
        self.tested = [float(weight) for _, weight in prior]

    @staticmethod
    def bucket(agreement_length: int) -> int:
        return bisect_right(AGREEMENT_EDGES, agreement_length)

    def acceptance(self, agreement_length: int) -> float:
        """Estimated chance that the next copied token is accepted, given the previous was."""
        b = self.bucket(agreement_length)
        return self.accepted[b] / self.tested[b]

    def chances(self, agreement_length: int, count: int) -> list[float]:
        """The acceptance chance of each of the first `count` tokens of a copy whose anchor
        agrees for `agreement_length` tokens, each given that the ones before it were accepted."""
        return [self.acceptance(agreement_length + i) for i in range(count)]

    def length(self, agreement_length: int, available: int) -> int:
        """Draft length in whole blocks: draft a block, pre-verify it, and stop after the first
        block whose mean estimated acceptance falls under the (growing) threshold."""
        count = min(available, self.max_length)
        survival = list(accumulate(self.chances(agreement_length, count), mul))
        return blockwise_length(survival, self.block, self.threshold, self.growth)

    def observe(self, agreement_length: int, drafted: int, accepted: int) -> None:
        """Learn from one copy: `accepted` of `drafted` tokens survived in order. Each token
        put to the test (the accepted ones and the first rejected) counts in its own bucket."""
        for i in range(min(accepted + 1, drafted)):
            b = self.bucket(agreement_length + i)
            self.tested[b] += 1
            self.accepted[b] += i < accepted


class CopyLength(Protocol):
    """What AdaPLD asks a pre-verifier: how much of the copy after `anchor` to draft (memory's
    last token is the current position), then how many of the drafted tokens were accepted."""

    def length(self, memory: Memory, anchor: int, available: int) -> int: ...

    def observe(self, drafted: int, accepted: int) -> None: ...


class AgreementLength:
    """The training-free AdaptiveLength behind the CopyLength protocol, and the same estimate as
    a copy's confidences (`chances`): each copied token's chance of being accepted once the one
    before it is, which the engine weighs against the pass's cost (engine/cost.py). Either way
    it learns from the copied tokens that were verified (`observe`).

    The confidences also learn, per document, how often a copy went on past each token (the
    last one matched before a copied token): an edit that repeats, as one does across a file,
    departs from the input after the same tokens again (a parameter's name where type hints
    go in, a signature's colon where docstrings do), and a copy through such a token is drafted
    shorter than its agreement alone says. The token's own record can only lower a chance:
    past a token that copies have got through every time, the agreement's estimate stands.

    Copies of the answer's own earlier text (a docstring like the last one) hold or fail
    otherwise than copies of the input, so they learn in buckets of their own (`from_answer`,
    from ANSWER_PRIOR), and so do jumps (`jumps`, from JUMP_PRIOR): copies of the input that
    barely agree and start elsewhere than where the answer last left the input, which are
    mostly the model's new text meeting a word the input has somewhere else. Where the tokens
    that break lines are known (`line_break`), so do the other copies of the input into a line
    the answer began otherwise than the copied one (`unlike_line`, from UNLIKE_LINE_PRIOR): the
    model writing a line of its own, which a copy from the middle of another seldom goes on."""

    def __init__(
        self,
        inner: AdaptiveLength | None = None,
        line_break: Callable[[int], bool] | None = None,
    ) -> None:
        self.inner = inner or AdaptiveLength()  # copies of the prompt
        self.from_answer = AdaptiveLength(prior=ANSWER_PRIOR)  # the answer's own text
        self.jumps = AdaptiveLength(prior=JUMP_PRIOR)  # copies that jump (`chances`)
        self.unlike_line = AdaptiveLength(prior=UNLIKE_LINE_PRIOR)  # (`chances`)
        self.line_break = line_break  # whether a token holds a line break; None: not known
        self._learner = self.inner  # the buckets the last draft was read from
        self._agreement = 0
        self._anchor = 0
        self._left_input: int | None = None  # the last input token a copy got accepted up to
        self._after: list[int] = []  # the token before each copied token of the last draft
        self.past: dict[int, list[float]] = {}  # token -> [copies accepted past it, tested]

    def _agree(self, memory: Memory, anchor: int) -> int:
        self._anchor = anchor
        self._agreement = agreement(memory.tokens, anchor, len(memory) - 1)
        return self._agreement

    def length(self, memory: Memory, anchor: int, available: int) -> int:
        self._after, self._learner = [], self.inner
        return self.inner.length(self._agree(memory, anchor), available)

    def chances(self, memory: Memory, anchor: int, count: int) -> list[float]:
        self._after = memory.tokens[anchor : anchor + count]
        agreement_length = self._agree(memory, anchor)
        self._learner = self._learner_for(memory, anchor, agreement_length)
        return [
            self._past(token, chance)
            for token, chance in zip(
                self._after, self._learner.chances(agreement_length, count), strict=True
            )
        ]

    def _learner_for(self, memory: Memory, anchor: int, agreement_length: int) -> AdaptiveLength:
        """The buckets a copy from `anchor` that agrees for `agreement_length` tokens is sized
        by and learns in."""
        if anchor >= memory.prompt_length:
            return self.from_answer
        left = self._left_input
        if left is None or agreement_length > JUMP_AGREEMENT or 0 < anchor - left <= NEAR:
            unlike = self._line_begun_otherwise(memory, agreement_length)
            return self.unlike_line if unlike else self.inner
        return self.jumps

    def _line_begun_otherwise(self, memory: Memory, agreement_length: int) -> bool:
        """Whether the answer's current line holds more tokens than the copy's anchor agrees
        with, the anchor included: the copied line began otherwise. So none of the last
        `agreement_length` + 2 tokens breaks a line (a full agreement cannot tell); False
        where line breaks are not known."""
        if self.line_break is None or agreement_length >= AGREEMENT_LIMIT:
            return False
        last = memory.tokens[-(agreement_length + 2) :]
        return len(last) == agreement_length + 2 and not any(map(self.line_break, last))

    def _past(self, token: int, chance: float) -> float:
        """`chance` or, if lower, the share of copies accepted past `token`, with `chance` as
        the prior of one copy's weight (a token never copied past keeps `chance`)."""
        accepted, tested = self.past.get(token, (0.0, 0.0))
        return min(chance, (accepted + chance * PAST_WEIGHT) / (tested + PAST_WEIGHT))

    def observe(self, drafted: int, accepted: int) -> None:
        self._learner.observe(self._agreement, drafted, accepted)
        if accepted and self._learner is not self.from_answer:
            self._left_input = self._anchor + accepted
        for i in range(min(accepted + 1, drafted, len(self._after))):
            counts = self.past.setdefault(self._after[i], [0.0, 0.0])
            counts[0] += i < accepted
            counts[1] += 1
