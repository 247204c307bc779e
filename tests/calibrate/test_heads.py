"""PLD+ (a): attention recomputed from hidden states, head calibration, exactness, the cache."""

from __future__ import annotations

import random

import pytest
import torch
from helpers import greedy_reference, repeating_prompt, tiny_model

from specedit.calibrate import calibrate_heads_from
from specedit.calibrate.heads import (
    RankedHead,
    calibrate_heads,
    copy_targets,
    count_hits,
    save_heads,
)
from specedit.calibrate.preverifier import Recording
from specedit.drafting import DrafterUnavailable
from specedit.drafting.copying.copy import CopyDrafter
from specedit.drafting.copying.heads import AttentionRanker, HeadAttention, load_heads
from specedit.engine.memory import Memory
from specedit.engine.session import generate
from specedit.models.load import LoadedModel

ALL_HEADS = [(layer, head) for layer in range(2) for head in range(4)]


@pytest.mark.parametrize("kind", ["qwen2", "llama"])
def test_recomputed_rows_equal_eager_attention(kind):
    model = tiny_model(kind, attn="eager", seed=3)
    tokens = repeating_prompt(3)
    with torch.inference_mode():
        out = model(
            input_ids=torch.tensor([tokens]), output_attentions=True, output_hidden_states=True
        )
    heads = random.Random(0).sample(ALL_HEADS, len(ALL_HEADS))  # any order, both layers
    attention = HeadAttention(model, heads)
    memory = Memory(tokens, tuple(attention.layers))
    filled = 0
    for chunk in [5, 1, 1, 7, 2, 30, 1]:  # positions stored per step, as after verify passes
        memory.store_hidden(out.hidden_states, list(range(filled, filled + chunk)))
        filled += chunk
        expected = torch.stack([out.attentions[lay][0, h, filled - 1, :filled] for lay, h in heads])
        torch.testing.assert_close(attention.rows(memory), expected, atol=1e-5, rtol=1e-5)


def test_copy_targets_pick_the_unique_longest_match():
    tokens = [7, 1, 2, 3, 8, 1, 2, 4, 9] + [2, 3, 8, 1, 2, 4]  # the output starts at 9
    # 9 (2): tied between 2 and 6, skipped; 12 (1): the match 3 8 before 5 beats nothing before 1.
    assert copy_targets(tokens, 9) == [(9, 3), (10, 4), (11, 5), (12, 6), (13, 7)]
    assert copy_targets([1, 2, 3] + [4, 5], 3) == []  # nothing copyable


def test_count_hits_counts_only_peaks_at_the_source():
    targets = [(9, 3), (10, 4), (11, 5), (12, 6), (13, 7)]
    attention = torch.softmax(
        torch.randn(3, 15, 15, generator=torch.Generator().manual_seed(0)), -1
    )
    for query, source in targets:
        attention[0, query, source] = 2.0  # a copying head
        attention[2, query, source - 1] = 2.0  # peaks one position early
    for query, source in targets[:2]:
        attention[1, query, source] = 2.0  # copies twice only
    assert count_hits(attention, targets).tolist() == [5, 2, 0]
    assert count_hits(attention, []).tolist() == [0, 0, 0]


def _copying_sequences() -> list[tuple[list[int], int]]:
    """Random inputs and outputs that copy spans of them with a few changes, as edits do."""
    g = torch.Generator().manual_seed(0)
    sequences = []
    for _ in range(2):
        prompt = torch.randint(0, 96, (60,), generator=g).tolist()
        output = prompt[5:25] + [7, 8] + prompt[30:50]
        sequences.append((prompt + output, len(prompt)))
    return sequences


def test_calibration_counts_what_the_eager_attentions_show():
    model, sequences = tiny_model("qwen2"), _copying_sequences()
    ranked = calibrate_heads(model, sequences, top=len(ALL_HEADS))
    assert model.config._attn_implementation == "sdpa"  # restored after the eager passes

    eager, counts = tiny_model("qwen2", attn="eager"), torch.zeros(2, 4, dtype=torch.long)
    for tokens, start in sequences:
        with torch.inference_mode():
            out = eager(input_ids=torch.tensor([tokens]), output_attentions=True)
        for layer, weights in enumerate(out.attentions):
            counts[layer] += count_hits(weights[0], copy_targets(tokens, start))
    expected = {(lay, h): int(counts[lay, h]) for lay, h in ALL_HEADS if counts[lay, h]}
    assert {(h.layer, h.head): h.hits for h in ranked} == expected
    assert [h.hits for h in ranked] == sorted((h.hits for h in ranked), reverse=True)
    assert calibrate_heads(model, sequences, top=2) == ranked[:2]


@pytest.mark.parametrize("kind,seed", [("qwen2", 0), ("llama", 1)])
def test_greedy_output_equals_generate(kind, seed):
    model = tiny_model(kind, seed=seed)
    prompt = repeating_prompt(seed)
    drafter = CopyDrafter("pldplus-attn", AttentionRanker(model, heads=[(1, 2), (0, 1), (1, 0)]))
    result = generate(model, prompt, drafter, max_new_tokens=32)
    assert result.tokens == greedy_reference(model, prompt, 32)
    assert result.stats.drafted_tokens > 0


def test_calibration_round_trips_through_the_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    model = tiny_model("qwen2")
    with pytest.raises(DrafterUnavailable, match="run `specedit calibrate`"):
        AttentionRanker(model)
    assert load_heads(model) is None

    recordings = {
        str(n): Recording(list(tokens), start, ())
        for n, (tokens, start) in enumerate(_copying_sequences())
    }
    heads, _ = calibrate_heads_from(LoadedModel("tiny", model, tokenizer=None), recordings, top=3)
    assert load_heads(model) == [(h.layer, h.head) for h in heads]
    assert AttentionRanker(model).attention.heads == load_heads(model)
    path = save_heads(model, [RankedHead(1, 3, 9), RankedHead(0, 0, 4)])
    assert path.parent == tmp_path / "calibration"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary left behind
    assert load_heads(model.to(torch.bfloat16)) == [(1, 3), (0, 0)]  # same weights, other dtype
