"""Conditional (CASD) verification: the acceptance rule, its guards, and delta = 1 == strict."""

from __future__ import annotations

import pytest
import torch
from helpers import OracleDrafter, greedy_reference, repeating_prompt, tiny_model

from specedit.engine.options import GREEDY, Sampling, Verification
from specedit.engine.session import generate
from specedit.engine.tree import DraftTree
from specedit.engine.verify import Verifier

EOS = 9
VOCAB = 10


def _logits(*rows: dict[int, float]) -> torch.Tensor:
    """Logits whose softmax gives each row's probabilities (the rest shared evenly)."""
    out = []
    for row in rows:
        rest = (1 - sum(row.values())) / (VOCAB - len(row))
        probs = torch.full((VOCAB,), rest)
        for token, p in row.items():
            probs[token] = p
        out.append(probs.log())
    return torch.stack(out)


def _walk(mode: str, tree: DraftTree, logits: torch.Tensor, **rule):
    return Verifier(GREEDY, Verification(mode, **rule)).walk(tree, logits, {EOS})


def test_plausible_draft_is_accepted_and_marked_relaxed():
    tree = DraftTree(root=0)
    tree.add(3, 0)  # the model prefers 1 (p=0.5) but finds 3 plausible (p=0.3)
    logits = _logits({1: 0.5, 3: 0.3}, {4: 0.9})
    assert _walk("strict", tree, logits).path == []
    accepted = _walk("conditional", tree, logits)
    assert accepted.path == [1] and accepted.relaxed == [True]
    assert accepted.next_token == 4  # the model's own token after the path


def test_eos_guard_rejects_a_draft_less_likely_than_ending():
    tree = DraftTree(root=0)
    tree.add(3, 0)
    assert _walk("conditional", tree, _logits({EOS: 0.5, 3: 0.3}, {4: 0.9})).path == []
    assert _walk("conditional", tree, _logits({EOS: 0.2, 3: 0.3, 1: 0.4}, {4: 0.9})).path == [1]


def test_delta_is_a_strict_threshold():
    tree = DraftTree(root=0)
    tree.add(3, 0)
    logits = _logits({1: 0.6, 3: 0.2}, {4: 0.9})
    assert _walk("conditional", tree, logits, delta=0.25).path == []
    assert _walk("conditional", tree, logits, delta=0.15).path == [1]


def test_mixed_mode_also_needs_the_top_k():
    probs = {1: 0.3, 2: 0.14, 5: 0.14, 6: 0.14, 7: 0.12, 3: 0.11}  # token 3 ranks 6th
    tree = DraftTree(root=0)
    tree.add(3, 0)
    logits = _logits(probs, {4: 0.9})
    assert _walk("conditional", tree, logits).path == [1]
    assert _walk("mixed", tree, logits, top_k=5).path == []
    assert _walk("mixed", tree, logits, top_k=6).path == [1]


def test_the_longest_accepted_path_wins_and_a_rejected_parent_blocks_its_children():
    tree = DraftTree(root=0)
    short = tree.add(1, 0)  # the model's own choice, one token
    long = tree.add(3, 0)  # plausible, with two accepted tokens below it
    tree.add_chain([4, 5], long)
    blocked = tree.add(6, 0)  # implausible: its likely child must not count
    tree.add(7, blocked)
    logits = _logits(
        {1: 0.5, 3: 0.3, 6: 0.01},  # root
        {2: 0.9},  # after 1
        {4: 0.9},  # after 3
        {5: 0.9},  # after 3 4
        {8: 0.9},  # after 3 4 5
        {7: 0.99},  # after 6
        {2: 0.9},  # after 6 7
    )
    accepted = _walk("conditional", tree, logits)
    assert [tree.token(n) for n in accepted.path] == [3, 4, 5]
    assert accepted.relaxed == [True, False, False]
    assert accepted.next_token == 8
    assert short not in accepted.path


@pytest.mark.parametrize("seed", [0, 3])
def test_delta_one_equals_strict_greedy(qwen_tiny, seed):
    prompt = repeating_prompt(seed)
    reference = greedy_reference(qwen_tiny, prompt, 60)
    results = [
        generate(
            qwen_tiny,
            prompt,
            OracleDrafter(reference, len(prompt)),
            max_new_tokens=60,
            verification=Verification(mode, delta=1.0),
        )
        for mode in ("strict", "conditional", "mixed")
    ]
    assert all(r.tokens == reference for r in results)
    assert all(r.stats.relaxed_tokens == 0 for r in results)
    assert len({r.stats.forward_passes for r in results}) == 1


def test_lower_delta_relaxes_and_counts_it():
    model = tiny_model(vocab=VOCAB + 6, seed=2, init=0.05)  # flat logits: many plausible tokens
    prompt = [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3]
    reference = greedy_reference(model, prompt, 30)
    copy = OracleDrafter(prompt[3:] * 3, 0, length=8)  # drafts the repetition, not the model
    copy.propose = lambda memory, budget: _repeat_draft(memory, budget)
    strict = generate(model, prompt, copy, max_new_tokens=30)
    relaxed = generate(
        model, prompt, copy, max_new_tokens=30, verification=Verification("conditional", delta=0.01)
    )
    assert strict.tokens == reference
    assert relaxed.stats.relaxed_tokens > 0
    assert relaxed.tokens != reference  # lossy on purpose
    assert relaxed.stats.forward_passes < strict.stats.forward_passes


def _repeat_draft(memory, budget):
    """Draft the sequence's period-8 continuation (what the prompt repeats)."""
    tree = DraftTree(root=memory.tokens[-1])
    start = len(memory.tokens) - 8 + 1
    tree.add_chain(memory.tokens[start : start + min(budget, 7)], first_source=start)
    return tree


def test_unknown_modes_and_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="unknown verification"):
        Verification("loose")
    with pytest.raises(ValueError):
        Verification("mixed", top_k=0)
    assert Sampling().greedy
