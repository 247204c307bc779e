"""Drafts sized by the machine's pass cost: the curve, the rule, and exactness with it."""

from __future__ import annotations

from dataclasses import replace

import pytest
from helpers import ChainsOnly, OracleDrafter, greedy_reference, repeating_prompt

from specedit.drafting.copying.length import (
    ANSWER_PRIOR,
    JUMP_PRIOR,
    PRIOR,
    UNLIKE_LINE_PRIOR,
    AdaptiveLength,
    AgreementLength,
)
from specedit.drafting.registry import make_drafter
from specedit.engine import cost
from specedit.engine.cost import PROBE_SIZES, ContextCost, PassCost, measure, measure_context, size
from specedit.engine.memory import Memory
from specedit.engine.session import generate
from specedit.engine.tree import DraftTree
from specedit.models.load import LoadedModel

STEEP = PassCost((1, 8, 64), (0.05, 0.3, 1.3), 0.014)  # llama.cpp's 1.5B on 2 cores, roughly
LINEAR = PassCost((1, 65), (0.05, 1.33), 0.01)  # 30 ms + 20 ms a token
FLAT = PassCost((1, 64), (0.1, 0.1), 0.01)


def chain(length: int, confidence: float | None) -> DraftTree:
    tree = DraftTree(root=1)
    tree.add_chain(list(range(2, 2 + length)), confidences=[confidence] * length)
    return tree


def test_the_curve_interpolates_between_sizes_and_follows_the_last_segment():
    assert STEEP(1) == pytest.approx(0.05)
    assert STEEP(4) == pytest.approx(0.05 + 3 * 0.25 / 7)
    assert STEEP(64) == pytest.approx(1.3)
    assert STEEP(65) == pytest.approx(1.3 + 1 / 56)  # wider than measured: the last slope
    assert STEEP(0) == pytest.approx(0.05)  # never below the narrowest pass


def test_the_curve_round_trips_through_its_file(tmp_path):
    STEEP.save(tmp_path / "cost.json")
    assert PassCost.load(tmp_path / "cost.json") == STEEP


def test_the_floor_is_the_prompt_prefilled_and_the_output_verified_each_where_it_sits():
    flat = ContextCost(prefill=(0.014, 0.0), verify=(0.02, 0.0))
    assert flat.floor(500, 300) == pytest.approx(500 * 0.014 + 300 * 0.02)
    # 1 us more a token for each token before it: the prompt's tokens sit at 0-499 (249.5 on
    # average), the answer's at 500-799 (649.5).
    grows = ContextCost(prefill=(0.014, 1e-6), verify=(0.02, 1e-6))
    assert grows.floor(500, 300) == pytest.approx(
        500 * (0.014 + 249.5e-6) + 300 * (0.02 + 649.5e-6)
    )
    assert grows.floor(0, 0) == 0


def _linear_passes(fixed: float, per_token: float) -> PassCost:
    """A pass of w tokens costs fixed + per_token * w."""
    return PassCost(PROBE_SIZES, tuple(fixed + per_token * w for w in PROBE_SIZES), 0.01)


def test_the_copy_bound_drafts_every_copyable_token_and_lets_the_model_say_the_rest():
    flat = ContextCost(prefill=(0.01, 0.0), verify=(0.02, 0.0))
    passes = _linear_passes(1.0, 0.1)
    prompt = [7, 1, 2, 3, 4, 5, 7]
    # every pair of the answer is in the prompt: one pass drafts four tokens and yields the last
    assert flat.copy_bound(prompt, [1, 2, 3, 4, 5], passes) == pytest.approx(0.07 + 1.5)
    # 99 follows 2 nowhere before: a pass ends with it; 3 after 99 neither; 4 after 3 may be
    # drafted but nothing follows it to yield, so it is a pass's own token too
    assert flat.copy_bound(prompt, [1, 2, 99, 3, 4], passes) == pytest.approx(0.07 + 1.3 + 2.2)
    # a pair the answer has already said can be drafted when it comes again
    assert flat.copy_bound(prompt, [1, 99, 1, 99, 1], passes) == pytest.approx(
        0.07 + 1.2 + 1.1 + 1.2  # [1 drafted, 99], [1], [99 drafted, 1]
    )
    # where passes cost nothing more per token, the widest pass is the cheapest way through
    long_prompt = list(range(200))
    assert flat.copy_bound(long_prompt, list(range(1, 130)), _linear_passes(1.0, 0.0)) == (
        pytest.approx(2.0 + 3 * 1.0)  # 129 tokens: 1 (its pair is new) + 64 + 64
    )


def test_the_copy_bound_counts_each_pass_where_it_sits():
    """The pass costs were measured over PROBE_CONTEXT tokens; a pass that sits further on
    costs more in proportion to what a token costs there."""
    grows = ContextCost(prefill=(0.01, 0.0), verify=(0.02, 1e-4))
    prompt = [5, 6, 5, 6, 5, 6, 5, 6, 9] * 50  # 450 tokens, the answer's first pair new
    answer = [8]
    at_probe = 0.02 + 1e-4 * cost.PROBE_CONTEXT
    there = 0.02 + 1e-4 * 450
    bound = grows.copy_bound(prompt, answer, _linear_passes(1.0, 0.1))
    assert bound == pytest.approx(grows.floor(450, 0) + 1.1 * there / at_probe)


class GrowingTarget:
    """A scripted clock on which a token fed at position c takes base + slope * c seconds:
    prefill 10 ms + 1 us * c, verify 20 ms + 2 us * c. The very first feed takes 5 s more
    (buffers sized, weights paged in), and another process adds 5 s to the first feed of each
    later batch and to the first pass of each three."""

    def __init__(self) -> None:
        self.now, self.held, self.passes, self.prefills = 0.0, 0, 0, 0

    def _feed(self, start: int, count: int, base: float, slope: float) -> None:
        self.now += sum(base + slope * c for c in range(start, start + count))

    def prefill(self, tokens, hidden) -> None:
        self.prefills += 1
        slow = self.prefills % 2 == 1  # each batch's first feed (the very first pages in)
        self.now += 5.0 if slow else 0.0
        self._feed(self.held, len(tokens) - self.held, 0.01, 1e-6)
        self.held = len(tokens)

    def forward(self, tree, prefix, hidden) -> None:
        assert prefix == self.held  # every pass goes on from what the cache holds
        self._feed(prefix, len(tree), 0.02, 2e-6)
        self.now += 5.0 if self.passes % 3 == 0 else 0.0
        self.passes += 1

    def keep(self, prefix, nodes) -> None:
        self.held = prefix + len(nodes)

    def clock(self) -> float:
        return self.now


def test_the_floor_costs_are_fitted_over_a_long_context(monkeypatch):
    from types import SimpleNamespace

    from specedit.engine import target as targets

    scripted = GrowingTarget()
    monkeypatch.setattr(targets, "open_target", lambda model, capacity, reuse=True: scripted)
    measured = measure_context(SimpleNamespace(config=SimpleNamespace(vocab_size=100)), 2048)
    assert scripted.held == 2048 + 4 * 3  # four batches of 512, each followed by 3 passes
    assert scripted.prefills == 4 * 2  # each batch fed twice, the fastest counted
    assert measured.prefill == pytest.approx((0.01, 1e-6), rel=1e-6)
    # The fastest of three passes is placed at the middle one's position: here it is the
    # middle one (the first took 5 s more, the third sits a token further on).
    assert measured.verify == pytest.approx((0.02, 2e-6), rel=1e-6)


def test_the_floor_counts_what_a_prompts_first_batch_cost(monkeypatch):
    """Where a token's cost grows faster the longer the context (as on llama.cpp here), a line
    fitted over the later batches and carried back to position 0 says a prompt's first tokens
    cost far less than they did; the first batch is measured, so it counts."""
    from types import SimpleNamespace

    from specedit.engine import target as targets

    def cost(position: int) -> float:
        return 0.012 + 2e-9 * position**2

    class Convex(GrowingTarget):
        def _feed(self, start: int, count: int, base: float, slope: float) -> None:
            self.now += sum(cost(c) for c in range(start, start + count))

    monkeypatch.setattr(targets, "open_target", lambda model, capacity, reuse=True: Convex())
    measured = measure_context(SimpleNamespace(config=SimpleNamespace(vocab_size=100)), 2048)
    first_batch = sum(cost(c) for c in range(512))
    # Fitted over the last three batches alone, the line said 0.88 of it.
    assert measured.prompt_seconds(512) > 0.93 * first_batch


def test_a_fit_never_says_a_later_token_costs_less():
    """Noise can make a longer context measure faster; that is no saving to count on."""
    from specedit.engine.cost import _line

    assert _line([(100.0, 0.02), (900.0, 0.019)]) == (pytest.approx(0.0195), 0.0)
    assert _line([(100.0, 0.02)]) == (0.02, 0.0)


def test_a_prefill_feeds_only_what_the_cache_does_not_hold(qwen_tiny):
    """As llama.cpp's target does: a prompt fed in two prefills scores the next tokens as one
    prefill of it does (what the context probe relies on)."""
    import torch

    from specedit.engine.target import open_target

    tokens = list(range(3, 43))
    chain = DraftTree(tokens[30])
    chain.add_chain(tokens[31:35])
    whole, halves = open_target(qwen_tiny, 64), open_target(qwen_tiny, 64)
    whole.prefill(tokens[:30], False)
    halves.prefill(tokens[:12], False)
    halves.prefill(tokens[:30], False)
    assert halves.cache.get_seq_length() == 30
    expected = whole.forward(chain, 30, False).logits
    assert torch.allclose(halves.forward(chain, 30, False).logits, expected, atol=1e-5)


def test_the_floor_costs_are_measured_on_a_real_model(qwen_tiny):
    """On the tiny model: the passes go on from batches fed past what the cache holds (the
    torch target's prefill feeds only what it does not hold); a longer prompt's floor is more."""
    measured = measure_context(qwen_tiny, 512)
    assert min(*measured.prefill, *measured.verify) >= 0  # a base at 0 where the fit says less
    assert measured.floor(100, 50) > 0 and measured.floor(200, 50) > measured.floor(100, 50)


def test_doubtful_copies_are_cut_where_wide_passes_cost_more():
    # The most tokens per second: 1 / 0.05 = 20 with no draft, 1.5 / 0.07 = 21.4 with one
    # token at 0.5, 1.75 / 0.09 = 19.4 with two.
    assert len(size(chain(64, 0.5), LINEAR)) == 2
    # At 0.9: 4.10 / 0.13 = 31.5 tokens/s for four tokens beats 31.3 for three, 31.2 for five.
    assert len(size(chain(64, 0.9), LINEAR)) == 5
    assert len(size(chain(64, 0.99), STEEP)) == 39  # on llama.cpp's curve, far longer copies
    assert len(size(chain(64, 1.0), LINEAR)) == 65
    assert len(size(chain(64, 0.5), FLAT)) == 65  # a wider pass costs nothing more


def test_a_draft_without_confidences_is_verified_whole():
    tree = chain(64, None)
    assert size(tree, STEEP) is tree


def test_nodes_without_confidences_are_kept_but_promise_nothing():
    """AdaPLD's branches carry no chance: they stay, widen the pass, and the copy beside them
    is sized as if they yielded nothing."""
    tree = chain(8, 0.5)
    for token in (20, 21, 22):
        tree.add(token + 10, tree.add(token, 0))  # a branch and its successor
    # Seven nodes wide already: 1 / 0.17 = 5.9 tokens/s; with one copied token 1.5 / 0.19 = 7.9,
    # two 1.75 / 0.21 = 8.3, three 1.875 / 0.23 = 8.2.
    kept = size(tree, LINEAR)
    assert kept.tokens == [2, 3, 20, 30, 21, 31, 22, 32]
    assert kept.parents == [0, 1, 0, 3, 0, 5, 0, 7]


def test_the_likeliest_nodes_are_kept_with_their_ancestors():
    tree = DraftTree(root=1)
    main = tree.add_chain([2, 3, 4], confidences=[0.9] * 3)
    branch = tree.add(5, 0, confidence=0.85)
    tree.add(6, branch, confidence=0.3)
    tree.add(7, main, confidence=0.5)
    chances = tree.path_chances()
    assert chances == pytest.approx([1, 0.9, 0.81, 0.729, 0.85, 0.255, 0.3645])
    # Four nodes: 4.289 tokens / 0.13 s = 33.0 a second; a fifth (0.3645) would give 31.0.
    kept = size(tree, LINEAR)
    assert kept.tokens == [2, 3, 4, 5] and kept.parents == [0, 1, 2, 0]
    with pytest.raises(ValueError, match="without its parent"):
        tree.subtree([2])


def test_main_chain_and_subtree_carry_confidences():
    tree = chain(3, 0.7)
    tree.add(9, 0, confidence=0.2)
    assert tree.main_chain().confidences == [0.7, 0.7, 0.7]
    assert tree.subtree([1, 4]).confidences == [0.7, 0.2]
    with pytest.raises(ValueError, match="not a probability"):
        tree.add(3, 0, confidence=1.5)


def test_copy_confidence_learns_from_what_was_accepted():
    memory = Memory(list(range(40)) + list(range(40)))
    anchor = 39  # the current token's twin: the 39 tokens before both agree
    confidence = AgreementLength()
    before = confidence.chances(memory, anchor, 1)[0]
    for _ in range(20):
        confidence.chances(memory, anchor, 16)
        confidence.observe(drafted=16, accepted=0)
    assert confidence.chances(memory, anchor, 1)[0] < before / 2
    for _ in range(100):  # the copy past token 39 too: rejected 20 times of 120 in all
        confidence.observe(drafted=16, accepted=16)
    assert confidence.chances(memory, anchor, 1)[0] > 0.8


def test_a_copy_is_drafted_shorter_past_a_token_where_copies_were_rejected():
    """Where an edit repeats, copies are rejected after the same token again: its record
    lowers the chance of a copied token after it, and only there (never raising one)."""
    memory = Memory(list(range(40)) + list(range(40)))
    anchor = 39  # copies 0, 1, 2, ... each after the token before it: 39, 0, 1, ...
    confidence, alone = AgreementLength(), AdaptiveLength()
    agreement_length = 39
    for _ in range(3):
        confidence.chances(memory, anchor, 5)
        confidence.observe(drafted=5, accepted=2)  # 0 and 1 held, 2 (after 1) rejected
        alone.observe(agreement_length, drafted=5, accepted=2)
    chances, agreed = confidence.chances(memory, anchor, 5), alone.chances(agreement_length, 5)
    assert chances[:2] == agreed[:2]  # copies went on past 39 and 0 each time
    assert chances[2] < agreed[2] / 3  # past 1: rejected three times of three
    assert chances[3:] == agreed[3:]  # never tested: the agreement's estimate
    assert all(mine <= theirs for mine, theirs in zip(chances, agreed, strict=True))


def test_copies_of_the_answer_learn_apart_from_copies_of_the_prompt():
    """A copy of the answer's own earlier text holds or fails otherwise than a copy of the
    input: what the one learns does not move the other's chances."""
    prompt = list(range(100, 140))
    memory = Memory(prompt)
    memory.extend(list(range(20)) + list(range(20)))  # the answer repeats its own new text
    from_prompt, from_answer = 30, len(prompt) + 19  # agreement 0 and 19 with the current end
    confidence = AgreementLength()
    prompt_before = confidence.chances(memory, from_prompt, 4)
    answer_before = confidence.chances(memory, from_answer, 4)
    for _ in range(10):
        confidence.chances(memory, from_answer, 4)
        confidence.observe(drafted=4, accepted=0)
    assert confidence.chances(memory, from_answer, 1)[0] < answer_before[0] / 2
    assert confidence.chances(memory, from_prompt, 4) == prompt_before
    assert confidence.inner.tested == AdaptiveLength().tested  # the prompt's buckets untouched


def test_a_copy_of_the_answer_starts_less_sure_than_a_copy_of_the_input_that_agrees_as_long():
    """Before either has learned anything, a copy of the answer's own text is read from its
    own prior, below the input's at every agreement."""
    prompt = list(range(100, 140))
    memory = Memory(prompt)
    memory.extend(list(range(100, 103)) + list(range(20)) + list(range(100, 103)))
    from_prompt, from_answer = 2, len(prompt) + 2  # the end's last token, 102: both agree for 2
    confidence = AgreementLength()
    input_chances = confidence.chances(memory, from_prompt, 4)
    answer_chances = confidence.chances(memory, from_answer, 4)
    assert answer_chances[0] == pytest.approx(ANSWER_PRIOR[2][0])  # agreement 2: bucket 2
    assert all(a < i for a, i in zip(answer_chances, input_chances, strict=True))


def test_a_copy_that_jumps_elsewhere_in_the_input_is_read_from_buckets_of_its_own():
    """Once a copy of the input has been accepted, a copy that barely agrees and starts
    elsewhere than just after it (the model's new text meeting a word the input has somewhere
    else) is read from the jumps' own, lower, prior and teaches only those buckets; one that goes
    on near where the last copy ended is read as before."""
    memory = Memory(list(range(100, 200)))
    memory.extend([500, 501])  # the answer's own new tokens: every anchor agrees for 0
    confidence = AgreementLength()
    first = confidence.chances(memory, 60, 1)[0]  # nothing accepted yet: no jump
    confidence.chances(memory, 50, 4)
    confidence.observe(drafted=4, accepted=4)  # the answer left the input after position 54
    near, far = confidence.chances(memory, 60, 1)[0], confidence.chances(memory, 10, 1)[0]
    assert first == pytest.approx(PRIOR[0][0])
    assert far == pytest.approx(JUMP_PRIOR[0][0]) and far < near / 2
    inner = list(confidence.inner.tested)
    for _ in range(5):
        confidence.chances(memory, 10, 4)
        confidence.observe(drafted=4, accepted=0)
    assert confidence.inner.tested == inner
    assert confidence.jumps.tested[0] == JUMP_PRIOR[0][1] + 5
    assert confidence.chances(memory, 10, 1)[0] < far


def test_a_copy_into_a_line_the_answer_began_otherwise_is_read_from_buckets_of_its_own():
    """Where line breaks are known, a copy of the input whose anchor agrees with fewer tokens
    than the answer's current line holds (the model writing a line of its own that meets a
    token the input has mid-line) is read from its own, lower, prior and teaches only those
    buckets; a copy at a line's start, or of a line begun alike, is read as before."""
    newline = 0
    line = [1, 2, 3, 4, 5, 6, newline]
    memory = Memory([newline, *line, *line])
    memory.extend([1, 2, 9, 4])  # the answer's line: 1, 2, then its own 9, then 4
    confidence = AgreementLength(line_break=lambda token: token == newline)
    unlike = confidence.chances(memory, 4, 3)  # the input's 4: agrees with nothing before it
    assert unlike[0] == pytest.approx(UNLIKE_LINE_PRIOR[0][0])
    assert AgreementLength().chances(memory, 4, 3)[0] == pytest.approx(PRIOR[0][0])
    inner = list(confidence.inner.tested)
    confidence.observe(drafted=3, accepted=0)
    assert confidence.inner.tested == inner
    assert confidence.unlike_line.tested[0] == UNLIKE_LINE_PRIOR[0][1] + 1
    memory.extend([newline, 1])  # a new line that starts as the input's does
    alike = confidence.chances(memory, 1, 3)  # the input's first 1, after its line break
    assert alike[0] == pytest.approx(PRIOR[1][0])  # agreement 1: the line so far, all of it


def test_a_copy_that_holds_grows_surer_token_by_token():
    """Each accepted token lengthens the agreement by one, so deeper tokens of a copy that
    starts right after an edit are read from surer buckets, and each verified token teaches
    its own bucket."""
    length = AdaptiveLength()
    fresh = length.chances(0, 20)  # buckets 0, 1, 2-3, 4-7, 8-15, 16+
    assert fresh[0] < fresh[1] < fresh[2] == fresh[3] < fresh[4] < fresh[8] < fresh[16]
    assert fresh[16:] == [fresh[16]] * 4
    tested, accepted = list(length.tested), list(length.accepted)
    length.observe(0, drafted=8, accepted=2)  # tokens 1 and 2 held, the third was rejected
    assert [t - u for t, u in zip(length.tested, tested)] == [1, 1, 1, 0, 0, 0]
    assert [a - u for a, u in zip(length.accepted, accepted)] == [1, 1, 0, 0, 0, 0]
    assert length.chances(0, 3)[2] < fresh[2] and length.chances(0, 1)[0] > fresh[0]


def test_sized_copies_of_a_young_document_are_long_where_the_pass_is_cheap():
    """With the prior alone, a 64-token copy right after an edit (agreement 0): on a flat-ish
    curve (torch on this CPU) most of it is verified, where one chance for the whole copy (its
    first token's) kept two tokens; on a steep curve (llama.cpp) it is verified only once the
    copy agrees for longer."""

    def kept(agreement_length: int, cost: PassCost, one_chance: bool = False) -> int:
        chances = AdaptiveLength().chances(agreement_length, 64)
        tree = DraftTree(root=1)
        tree.add_chain(list(range(2, 66)), confidences=chances[:1] * 64 if one_chance else chances)
        return len(size(tree, cost)) - 1

    torch_like = PassCost((1, 8, 64), (0.31, 1.06, 2.62), 0.003)
    assert kept(0, torch_like, one_chance=True) == 2
    assert kept(0, torch_like) > 30
    assert kept(0, STEEP) == 0 and kept(16, STEEP) > 8


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("method", ["pld", "adapld"])
@pytest.mark.parametrize("model_kind", ["trees", "chains"])
def test_sized_copies_stay_exact(qwen_tiny, seed, method, model_kind):
    model = qwen_tiny if model_kind == "trees" else ChainsOnly(qwen_tiny)
    prompt = repeating_prompt(seed)
    reference = greedy_reference(qwen_tiny, prompt, 48)
    drafter = make_drafter(method, qwen_tiny)
    proposed: list[int] = []
    propose = drafter.propose
    drafter.propose = lambda *args: proposed.append(len(tree := propose(*args)) - 1) or tree
    verified: list[int] = []
    result = generate(
        model,
        prompt,
        drafter,
        max_new_tokens=48,
        pass_cost=STEEP,
        on_step=lambda step: verified.append(step.drafted),
    )
    assert result.tokens == reference
    assert result.stats.new_tokens == 48
    assert any(v < p for v, p in zip(verified, proposed))  # some copies were cut


class DoubtfulOracle(OracleDrafter):
    """Drafts the right tokens but doubts them: the engine cuts every draft short."""

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        tree = super().propose(memory, budget)
        tree.confidences = [0.9] * len(tree.tokens)
        return tree


@pytest.mark.parametrize("limit", [1, 17, 37])
def test_cut_drafts_keep_the_token_limit_and_eos(qwen_tiny, limit):
    prompt = repeating_prompt(6)
    free_run = greedy_reference(qwen_tiny, prompt, 80)
    drafter = DoubtfulOracle(free_run, len(prompt), length=30)
    drafted: list[int] = []
    result = generate(
        qwen_tiny,
        prompt,
        drafter,
        max_new_tokens=limit,
        pass_cost=STEEP,
        on_step=lambda step: drafted.append(step.drafted),
    )
    assert result.tokens == free_run[:limit]
    assert drafted and max(drafted) == min(2, limit - 1)  # at 0.9 two tokens pay on STEEP
    eos = free_run[21]
    reference = greedy_reference(qwen_tiny, prompt, 60, eos=eos)
    drafter = DoubtfulOracle(free_run, len(prompt), length=30)
    result = generate(
        qwen_tiny, prompt, drafter, max_new_tokens=60, eos_token_ids={eos}, pass_cost=STEEP
    )
    assert result.tokens == reference and result.stop_reason == "eos"


def test_the_curve_is_measured_once_per_model_and_machine(qwen_tiny, tmp_path, monkeypatch):
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    measured = measure(qwen_tiny)
    assert measured.sizes == PROBE_SIZES and all(s > 0 for s in measured.seconds)
    assert measured.prefill_per_token > 0
    calls: list[int] = []
    # on torch the CPU time is not judged (llama.cpp's is: test_llamacpp)
    monkeypatch.setattr(cost, "measure", lambda model, threads: calls.append(threads) or measured)
    first = LoadedModel("tiny", qwen_tiny, tokenizer=None)
    assert first.pass_cost() == measured and first.pass_cost() == measured
    again = LoadedModel("tiny", qwen_tiny, tokenizer=None)  # a new process, say
    assert again.pass_cost() == measured
    assert calls == [None] and len(list((tmp_path / "cost").glob("tiny-*.json"))) == 1
    other = LoadedModel("other", qwen_tiny, tokenizer=None)
    other.pass_cost()
    assert len(calls) == 2
    for saved in (tmp_path / "cost").glob("tiny-*.json"):
        saved.write_text("{not json")  # a damaged file is measured again, not an error
    assert LoadedModel("tiny", qwen_tiny, tokenizer=None).pass_cost() == measured
    assert len(calls) == 3 and PassCost.load(saved) == measured
    # A file saved before the prefill was timed lacks its cost: measured again, not half used.
    saved.write_text('{"sizes": [1, 64], "seconds": [0.05, 1.3]}')
    assert LoadedModel("tiny", qwen_tiny, tokenizer=None).pass_cost() == measured
    assert len(calls) == 4 and PassCost.load(saved) == measured
    # The bench measures it again whatever the cache holds, and keeps what it measured.
    now = PassCost((1, 64), (0.04, 1.1), 0.01)
    monkeypatch.setattr(cost, "measure", lambda model, threads: calls.append(threads) or now)
    bench = LoadedModel("tiny", qwen_tiny, tokenizer=None)
    assert bench.pass_cost() == measured and bench.pass_cost(refresh=True) == now
    assert len(calls) == 5 and PassCost.load(saved) == now
    assert LoadedModel("tiny", qwen_tiny, tokenizer=None).pass_cost() == now


class ScriptedTarget:
    """Passes that take 10 ms a token on a scripted clock; the second pass 5 s more, every
    4-token pass 1 s more."""

    def __init__(self) -> None:
        self.now, self.passes = 0.0, 0

    def prefill(self, tokens, hidden) -> None:
        self.now += 0.001 * len(tokens)

    def forward(self, tree, prefix, hidden) -> None:
        self.passes += 1
        self.now += 0.01 * len(tree) + (5.0 if self.passes == 2 else 0.0)
        self.now += 1.0 if len(tree) == 4 else 0.0

    def keep(self, prefix, nodes) -> None:
        pass

    def clock(self) -> float:
        return self.now


def scripted_measure(monkeypatch, threads: int | None = None) -> PassCost:
    from types import SimpleNamespace

    from specedit.engine import target as targets

    scripted = ScriptedTarget()
    monkeypatch.setattr(targets, "open_target", lambda model, capacity, reuse=True: scripted)
    return measure(SimpleNamespace(config=SimpleNamespace(vocab_size=100)), threads=threads)


def test_a_slow_sample_does_not_make_the_curve(monkeypatch):
    """Another process taking the cores only adds time: each size keeps its fastest pass (the
    first one-token pass here takes 5 s more), and no size costs more than a wider one (every
    4-token pass here takes 1 s more)."""
    measured = scripted_measure(monkeypatch)
    assert measured.seconds[0] == pytest.approx(0.01)  # not the 5 s sample
    assert measured.seconds[2] == pytest.approx(0.08)  # 4 tokens: no more than 8
    assert list(measured.seconds) == sorted(measured.seconds)
    assert measured.prefill_per_token == pytest.approx(0.001)
    assert not measured.contended  # no threads named: nothing to judge the CPU time by


@pytest.mark.parametrize(("cpu_per_wall", "contended"), [(1.9, False), (1.0, True)])
def test_a_curve_measured_without_the_cores_is_marked_contended(
    monkeypatch, cpu_per_wall, contended
):
    """Two threads that had the cores use about two CPU seconds a second; half that means
    another process held them."""
    ticks, wall = iter(range(100)), [0.0]

    def perf_counter() -> float:  # a second a reading
        wall[0] = float(next(ticks))
        return wall[0]

    monkeypatch.setattr(cost.time, "perf_counter", perf_counter)
    monkeypatch.setattr(cost.time, "process_time", lambda: wall[0] * cpu_per_wall)
    assert scripted_measure(monkeypatch, threads=2).contended is contended


def test_a_contended_curve_is_measured_again_once_the_cores_look_free(
    qwen_tiny, tmp_path, monkeypatch
):
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    busy = PassCost((1, 64), (0.3, 9.6), 0.03, contended=True)
    calm = PassCost((1, 64), (0.05, 1.3), 0.014)
    measured = [busy, calm]
    monkeypatch.setattr(cost, "measure", lambda model, threads: measured.pop(0))
    monkeypatch.setattr(cost, "cores_free", lambda threads: False)
    assert LoadedModel("tiny", qwen_tiny, tokenizer=None).pass_cost() == busy  # none saved yet
    assert LoadedModel("tiny", qwen_tiny, tokenizer=None).pass_cost() == busy  # still busy
    monkeypatch.setattr(cost, "cores_free", lambda threads: True)
    assert LoadedModel("tiny", qwen_tiny, tokenizer=None).pass_cost() == calm
    assert LoadedModel("tiny", qwen_tiny, tokenizer=None).pass_cost() == calm  # kept
    assert not measured
    (saved,) = (tmp_path / "cost").glob("tiny-*.json")
    assert PassCost.load(saved) == calm


def test_the_cores_are_free_where_the_load_leaves_room_for_the_threads(monkeypatch):
    monkeypatch.setattr(cost.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(cost.os, "getloadavg", lambda: (0.3, 1.0, 1.0))
    assert cost.cores_free(2)
    monkeypatch.setattr(cost.os, "getloadavg", lambda: (2.1, 1.0, 1.0))  # a bench beside it
    assert not cost.cores_free(2) and cost.cores_free(0)


class GgufStandIn:
    """A llama.cpp model as `pass_cost` sees it: its threads, and the layout its weights are
    loaded in (`GgufModel.relayout`), each change logged."""

    engine = "llama.cpp"

    def __init__(self, repack: bool = True, threads: int = 3) -> None:
        self.repack, self.threads, self.relayouts = repack, threads, []

    def relayout(self, repack: bool) -> None:
        self.relayouts.append(repack)
        self.repack = repack


# Two layouts as measured on a 2-core AVX-512 machine, roughly: repacked, the narrow passes are
# cheaper; not, the prefill and the wide passes are.
REPACKED = PassCost((1, 64), (0.03, 0.70), 0.0090, repack=True)
PLAIN = PassCost((1, 64), (0.04, 0.57), 0.0055, repack=False)


def test_llama_cpp_s_curve_is_judged_by_its_threads(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    asked: list[int | None] = []

    def measured(model, threads):
        asked.append(threads)
        return REPACKED if model.repack else PLAIN

    monkeypatch.setattr(cost, "measure", measured)
    assert LoadedModel("q", GgufStandIn(), tokenizer=None).pass_cost() == PLAIN
    assert asked == [3, 3]  # each layout's curve


def test_an_edit_s_seconds_weigh_the_prefill_the_copies_and_the_new_tokens():
    assert STEEP.edit_seconds() == pytest.approx(
        cost.EDIT_PROMPT * 0.014 + cost.EDIT_COPIED / 64 * 1.3 + cost.EDIT_WRITTEN * 0.05
    )
    assert PLAIN.edit_seconds() < REPACKED.edit_seconds()


def test_a_curve_keeps_the_layout_it_was_measured_on(tmp_path):
    PLAIN.save(tmp_path / "cost.json")
    assert PassCost.load(tmp_path / "cost.json") == PLAIN
    STEEP.save(tmp_path / "cost.json")  # torch's: no layout
    assert PassCost.load(tmp_path / "cost.json").repack is None


@pytest.mark.parametrize(("repacked_wins", "relayouts"), [(False, [False]), (True, [False, True])])
def test_llama_cpp_runs_on_the_layout_a_typical_edit_costs_less_on(
    tmp_path, monkeypatch, repacked_wins, relayouts
):
    """The layout loaded is measured, then the other one; the model is left on the cheaper,
    and the next load (`repacked`) and the next process start on it unmeasured."""
    from specedit.models.load import repacked

    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    # where the repacked kernels gain throughout (as AMX may), the repacked curve wins
    repacked_curve = (
        PassCost((1, 64), (0.03, 0.50), 0.004, repack=True) if repacked_wins else REPACKED
    )
    better, worse = (repacked_curve, PLAIN) if repacked_wins else (PLAIN, REPACKED)
    monkeypatch.setattr(
        cost, "measure", lambda model, threads: repacked_curve if model.repack else PLAIN
    )
    assert better.edit_seconds() < worse.edit_seconds()
    assert repacked("q", 3)  # llama.cpp's default until measured
    model = GgufStandIn()
    assert LoadedModel("q", model, tokenizer=None).pass_cost() == better
    assert model.relayouts == relayouts and model.repack is repacked_wins
    assert repacked("q", 3) is repacked_wins and repacked("q", 4)  # per threads
    monkeypatch.setattr(cost, "measure", lambda model, threads: pytest.fail("measured again"))
    later = GgufStandIn()  # loaded otherwise (a cache written meanwhile): moved, not measured
    assert LoadedModel("q", later, tokenizer=None).pass_cost() == better
    assert later.repack is repacked_wins


def test_a_layout_chosen_while_the_cores_were_taken_is_chosen_again_once_they_are_free(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    busy = replace(REPACKED, contended=True)  # the second measurement had the cores
    monkeypatch.setattr(cost, "measure", lambda model, threads: busy if model.repack else PLAIN)
    monkeypatch.setattr(cost, "cores_free", lambda threads: True)
    assert LoadedModel("q", GgufStandIn(), tokenizer=None).pass_cost() == replace(
        PLAIN, contended=True
    )
    monkeypatch.setattr(cost, "measure", lambda model, threads: REPACKED if model.repack else PLAIN)
    model = GgufStandIn(repack=False)
    assert LoadedModel("q", model, tokenizer=None).pass_cost() == PLAIN  # weighed again
    assert model.relayouts == [True, False]


def test_a_llama_cpp_curve_kept_before_its_layouts_were_weighed_is_measured_again(
    tmp_path, monkeypatch
):
    from specedit.models.load import cost_path

    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    path = cost_path("q", "llama.cpp", "gguf", 3)
    path.parent.mkdir(parents=True, exist_ok=True)
    STEEP.save(path)  # no layout recorded
    monkeypatch.setattr(cost, "measure", lambda model, threads: REPACKED if model.repack else PLAIN)
    assert LoadedModel("q", GgufStandIn(), tokenizer=None).pass_cost() == PLAIN
    assert PassCost.load(path) == PLAIN


def test_a_llama_cpp_that_cannot_load_the_weights_otherwise_keeps_the_one_layout(
    tmp_path, monkeypatch
):
    """Without `use_extra_bufts` in its model parameters the other layout would load as the
    first: nothing is compared, nothing is moved, and the layout kept is the default's."""
    from specedit.engine import llama_params

    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    monkeypatch.setattr(llama_params, "can_relayout", lambda: False)
    monkeypatch.setattr(cost, "measure", lambda model, threads: REPACKED)
    model = GgufStandIn()
    assert LoadedModel("q", model, tokenizer=None).pass_cost() == REPACKED
    assert model.relayouts == [] and model.repack
