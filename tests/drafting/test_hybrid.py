"""The hybrid drafter (copy + draft model, EvoSpec's dynamic vocabulary): exact against plain
greedy decoding, and its parts (ARC, token statistics, active vocabulary, the draft model's
cache) doing what they claim."""

from __future__ import annotations

import copy
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from helpers import (
    INPUT_THEN_MORE,
    IdTokenizer,
    draft_sources,
    greedy_reference,
    main_copy_after,
    repeating_prompt,
)

from specedit.bench.ablations import ABLATIONS, needs_draft_model
from specedit.drafting import DrafterUnavailable
from specedit.drafting.copying.adapld import TokenAdaPLD
from specedit.drafting.kinds import MAIN
from specedit.drafting.model import cooccurrence
from specedit.drafting.model.arc import ARC
from specedit.drafting.model.draft_model import (
    MAX_INSERTED,
    ActiveVocabulary,
    DraftModel,
    LlamaCppDraftModel,
)
from specedit.drafting.model.hybrid import Hybrid, HybridOptions, Payoff
from specedit.drafting.registry import METHODS, DraftSources, make_drafter
from specedit.engine.cost import PassCost
from specedit.engine.memory import Memory
from specedit.engine.session import generate

VOCAB = 96
# evospec and the bench's ablations of it
WITH_A_DRAFT_MODEL = [m for m in (*METHODS, *ABLATIONS) if needs_draft_model(m)]


pytestmark = pytest.mark.usefixtures("small_drafting_cache")


@pytest.fixture
def target(qwen_tiny):
    return qwen_tiny


@pytest.fixture
def stranger(stranger_tiny):
    return stranger_tiny


@pytest.mark.parametrize("method", WITH_A_DRAFT_MODEL)
@pytest.mark.parametrize("seed", [0, 3])
@pytest.mark.parametrize("draft_name", ["stranger", "twin"])
def test_greedy_hybrid_equals_generate(request, target, method, seed, draft_name):
    draft = copy.deepcopy(target) if draft_name == "twin" else request.getfixturevalue(draft_name)
    prompt = repeating_prompt(seed) + torch.randint(0, VOCAB, (9,)).tolist()
    reference = greedy_reference(target, prompt, 64)
    drafter = make_drafter(method, target, draft_sources(draft, prompt))
    result = generate(target, prompt, drafter, max_new_tokens=64)
    assert result.tokens == reference
    assert result.stop_reason == "length"
    if draft_name == "twin":  # the draft model is the target: its chains are always right
        assert result.stats.drafting["model_tokens_accepted"] > 0


def test_eos_and_the_limit_inside_a_model_chain(target):
    """The twin drafts the target's own continuation, so EOS and the limit fall inside chains."""
    prompt = torch.randint(0, VOCAB, (20,), generator=torch.Generator().manual_seed(2)).tolist()
    free_run = greedy_reference(target, prompt, 40)
    eos = free_run[13]
    reference = greedy_reference(target, prompt, 40, eos=eos)
    sources = draft_sources(copy.deepcopy(target), prompt)
    drafter = make_drafter("draft-model", target, sources)
    result = generate(target, prompt, drafter, max_new_tokens=40, eos_token_ids={eos})
    assert result.tokens == reference and result.stop_reason == "eos"
    for limit in (1, 5, 11):
        drafter = make_drafter("draft-model", target, sources)
        result = generate(target, prompt, drafter, max_new_tokens=limit)
        assert result.tokens == free_run[:limit] and result.stop_reason == "length"


def test_sampled_hybrid_with_a_seed_matches_plain_sampling(target, stranger):
    """Drafts are deterministic given the history, so a sampled run with drafts draws the same
    tokens as the same seed without drafts (the walk consumes one draw per committed token)."""
    from specedit.engine.drafter import Drafter
    from specedit.engine.options import Sampling

    prompt = repeating_prompt(1)
    sampling = Sampling(temperature=0.8, seed=11)
    plain = generate(target, prompt, Drafter(), max_new_tokens=40, sampling=sampling)
    drafter = make_drafter("evospec", target, draft_sources(copy.deepcopy(target), prompt))
    hybrid = generate(target, prompt, drafter, max_new_tokens=40, sampling=sampling)
    assert hybrid.stats.forward_passes < plain.stats.forward_passes
    assert hybrid.tokens == plain.tokens


def test_methods_with_a_draft_model_say_how_to_get_one(target):
    for method in WITH_A_DRAFT_MODEL:
        with pytest.raises(DrafterUnavailable, match="--draft-model"):
            make_drafter(method, target)


def test_the_hybrid_copies_while_copies_hold_and_adds_a_chain_after_a_rejection(target, stranger):
    prompt = repeating_prompt(0)
    drafter = Hybrid(target, SimpleNamespace(model=stranger, tokenizer=IdTokenizer()), prompt)
    steps = []
    generate(target, prompt, drafter, max_new_tokens=48, on_step=steps.append)
    assert steps[0].kinds[0] in (MAIN, None)  # the first draft is a copy only
    report = drafter.report()
    assert report["copy_passes"] > 0 and report["model_passes"] > 0
    assert report["draft_model_steps"] >= report["model_passes"]


def test_the_hybrids_copies_from_the_input_end_with_it(target, stranger):
    """Its copier is AdaPLD's, told where the input ends as AdaPLD is (copy.add_copy)."""
    prompt = INPUT_THEN_MORE
    draft = SimpleNamespace(model=stranger, tokenizer=IdTokenizer())
    told = make_drafter("evospec", target, DraftSources(0, prompt[:5], draft=draft))
    untold = make_drafter("evospec", target, DraftSources(draft=draft))
    assert main_copy_after(told, target, prompt, [6, 7]) == [8, 9]
    assert main_copy_after(untold, target, prompt, [6, 7]) == [8, 9, 50, 51, 52]


def test_arc_keeps_its_capacity_and_frequent_keys_survive_a_scan():
    arc = ARC(4)
    for key in "ab":
        arc.request(key)
        arc.request(key)  # seen twice: frequent
    for key in "cdefghij":  # a one-off scan longer than the capacity
        arc.request(key)
        assert len(arc) <= 4
    assert "a" in arc and "b" in arc
    assert "c" not in arc


def test_arc_learns_from_its_ghosts():
    arc = ARC(2)
    for key in "aabc":  # "a" is frequent; "c" pushes "b" out of T1 into its ghost list
        arc.request(key)
    assert "b" not in arc
    before = arc.target
    assert arc.request("b")  # a ghost hit re-admits it, as frequent, and grows T1's share
    assert "b" in arc and arc.target > before and len(arc) <= 2


def test_token_statistics_count_frequencies_and_prune_the_graph():
    stream = np.array([1, 2] * 20 + [1, 3] * 2 + [4, 5] * 3, dtype=np.int64)
    stats = cooccurrence.count(stream, 8)
    assert stats.frequency[1] == 22 and stats.frequency[0] == 0
    assert stats.followers(1) == [2]  # 1 -> 3 was seen twice: below the minimum count
    assert stats.followers(2) == [1]
    assert list(stats.most_frequent(3)) == [1, 2, 4]  # 4 and 5 tie: the lower id wins
    assert 0 not in stats.most_frequent(8)  # a token never seen is never in the core


def test_active_vocabulary_argmax_is_the_restricted_argmax():
    torch.manual_seed(0)
    head = torch.randn(50, 8)
    statistics = cooccurrence.TokenStatistics(
        np.ones(50, dtype=np.int64), np.arange(51), np.arange(1, 51) % 50
    )  # token t is followed by t + 1
    active = ActiveVocabulary(50, np.array([0, 1, 2]), [10, 11], statistics, budget=4, head=head)
    assert 10 in active and 30 not in active
    hidden = torch.randn(8)
    allowed = torch.tensor([0, 1, 2, 10, 11])
    assert active.argmax(hidden) == int(allowed[(head[allowed] @ hidden).argmax()])
    active.expand([30])  # the miss and its successor 31
    assert 30 in active and 31 in active
    allowed = torch.tensor([0, 1, 2, 10, 11, 30, 31])
    assert active.argmax(hidden) == int(allowed[(head[allowed] @ hidden).argmax()])
    active.expand(range(12, 12 + MAX_INSERTED + 4))
    assert len(active.dynamic) <= 4  # the budget holds, whatever a miss brings


def test_the_draft_cache_follows_rejections(stranger):
    """After a chain whose tokens were partly rejected, the next chain equals one drafted by a
    fresh draft model over the same committed tokens."""
    prompt = repeating_prompt(4)
    kept = DraftModel(stranger)
    drafted = kept.chain(prompt, 6)
    committed = prompt + drafted[:2] + [(drafted[2] + 1) % VOCAB]  # the third was rejected
    assert kept.chain(committed, 5) == DraftModel(stranger).chain(committed, 5)
    assert kept.fed[: len(committed)] == committed


def test_a_far_behind_draft_model_waits_for_a_second_rejection(target, stranger, monkeypatch):
    """With every lag counted as far behind, a single rejected copy is followed by another copy
    alone; the draft model drafts only after a second rejection in a row. Output stays exact."""
    from specedit.drafting.model import hybrid

    monkeypatch.setattr(hybrid, "COLD_LAG", -1)
    prompt = repeating_prompt(0)
    drafter = Hybrid(target, SimpleNamespace(model=stranger, tokenizer=IdTokenizer()), prompt)
    result = generate(target, prompt, drafter, max_new_tokens=48)
    assert result.tokens == greedy_reference(target, prompt, 48)
    report = drafter.report()
    assert report["second_chances"] > 0 and report["model_passes"] > 0


def test_the_active_vocabulary_restricts_the_argmax_over_logits_and_a_miss_expands_it():
    """llama.cpp gives the whole head's logits: the argmax is taken over the active ids, the
    same token the torch path's sliced head chooses; a miss admits the token and its
    successor, which can then win."""
    torch.manual_seed(1)
    head = torch.randn(50, 8)
    statistics = cooccurrence.TokenStatistics(
        np.ones(50, dtype=np.int64), np.arange(51), np.arange(1, 51) % 50
    )  # token t is followed by t + 1
    core, document = np.array([0, 1, 2]), [10, 11]
    active = ActiveVocabulary(50, core, document, statistics, budget=4)
    sliced = ActiveVocabulary(50, core, document, statistics, budget=4, head=head)
    hidden = torch.randn(8)
    logits = head @ hidden
    logits[30] = logits[31] = float(logits.max()) + 1  # the best tokens are outside
    allowed = torch.tensor([0, 1, 2, 10, 11])
    assert active.argmax_logits(logits) == int(allowed[logits[allowed].argmax()])
    assert active.argmax_logits(head @ hidden) == sliced.argmax(hidden)
    active.expand([30])  # the miss and its successor 31
    assert 30 in active and 31 in active
    assert active.argmax_logits(logits) == 30  # a tie: the first of the best
    assert int(logits.argmax()) == 30


def _pass_cost(one: float, per_token: float = 0.0, prefill: float = 0.0) -> PassCost:
    """A fabricated pass-cost curve: `one` second for a one-token pass, `per_token` more for
    each further token, `prefill` seconds a prompt token."""
    return PassCost((1, 64), (one, one + 63 * per_token), prefill)


def test_the_draft_model_is_asked_only_where_its_chains_pay():
    target = _pass_cost(1.0, 0.01)
    # A draft step as costly as a target pass: tried while its acceptance is unknown (it
    # starts as if every token were accepted), not asked once its chains keep failing.
    costly = Payoff(target, _pass_cost(1.0), horizon=6)
    assert costly.pays(17, 6)
    for _ in range(3):
        costly.observe(copied=0, modelled=1)
    assert not costly.pays(17, 6)
    # A cheap draft step whose chains are accepted: asked, and still asked after a pass that
    # took nothing of its chain.
    cheap = Payoff(target, _pass_cost(0.05), horizon=6)
    for _ in range(3):
        cheap.observe(copied=0, modelled=5)
    cheap.observe(copied=0, modelled=0)
    assert cheap.pays(17, 6)
    # Copies that hold beside it make its chain not worth its steps.
    for _ in range(5):
        cheap.observe(copied=12, modelled=5)
    assert not cheap.pays(17, 6)


def test_the_chain_that_makes_the_draft_model_read_the_prompt_must_pay_for_it():
    """A cheap draft step, but 2,000 committed tokens to read first at 5 ms each: 10 s, more
    than the chain saves; once read (a lag of one), asked."""
    payoff = Payoff(_pass_cost(1.0, 0.01), _pass_cost(0.05, prefill=0.005), horizon=6)
    assert not payoff.pays(17, 6, lag=2000)
    assert payoff.pays(17, 6, lag=1)


@pytest.mark.parametrize("step,asked", [(3.0, False), (0.01, True)])
def test_the_hybrid_asks_its_draft_model_by_the_measured_costs(target, step, asked):
    """Through the registry, with the target's and the draft model's measured pass costs: a
    draft step that costs three target passes is never worth a chain, a cheap one is asked
    after the copies fail. Either way the tokens are plain greedy decoding's."""
    prompt = repeating_prompt(0) + torch.randint(0, VOCAB, (9,)).tolist()
    draft = SimpleNamespace(
        model=copy.deepcopy(target), tokenizer=IdTokenizer(), pass_cost=lambda: _pass_cost(step)
    )
    sources = DraftSources(0, prompt[:24], draft=draft, pass_cost=_pass_cost(1.0, 0.01))
    drafter = make_drafter("evospec", target, sources)
    result = generate(target, prompt, drafter, max_new_tokens=48)
    assert result.tokens == greedy_reference(target, prompt, 48)
    report = drafter.report()
    if asked:
        assert report["model_passes"] > 0 and report["model_tokens_accepted"] > 0
    else:
        assert report["model_not_paying"] > 0 and report["draft_model_steps"] == 0


def test_on_llama_cpp_the_hybrid_copies_tokens_only_and_a_miss_seeds_the_token(tmp_path):
    """A target that gives no hidden states nor weights: the copier is token-only AdaPLD, the
    draft model a llama.cpp one (its context opens only when a chain is asked for), and a
    committed token outside the active vocabulary brings in itself and its bigram successors
    (no target top tokens nor embedding neighbours to read)."""
    from specedit.engine.llamacpp import GgufModel

    config = SimpleNamespace(num_hidden_layers=2, vocab_size=VOCAB)
    models = []
    for name in ("target.gguf", "draft.gguf"):
        (tmp_path / name).write_bytes(b"")
        models.append(GgufModel(tmp_path / name, config, None, threads=1))
    prompt = repeating_prompt(0)
    draft = SimpleNamespace(model=models[1], tokenizer=IdTokenizer())
    drafter = Hybrid(models[0], draft, prompt, HybridOptions(core_size=4))
    assert isinstance(drafter.copier, TokenAdaPLD) and drafter.hidden_layers == ()
    assert drafter.vocabulary is None and isinstance(drafter.draft, LlamaCppDraftModel)
    active = drafter.active

    def outside(token: int) -> list[int]:
        return [t for t in [token, *active.statistics.followers(token)] if t not in active]

    missed = next(t for t in range(VOCAB) if t not in active and len(outside(t)) > 1)
    seeds = outside(missed)
    memory = Memory(prompt)
    drafter.propose(memory, 16)  # a copy: copies are trusted at first
    memory.extend([missed])
    drafter.propose(memory, 16)
    assert all(token in active for token in seeds)
    assert drafter.report()["vocabulary_misses"] == 1 and drafter.draft.steps == 0
