"""Online LoRA alignment of the draft model (evospec-lora): exact against plain greedy decoding,
the shared draft model left plain, and updates that bring the draft model nearer the target."""

from __future__ import annotations

import copy

import pytest
import torch
from helpers import draft_sources, greedy_reference, repeating_prompt

import specedit.bench.ablations  # noqa: F401  (makes evospec-lora, an ablation, by name)
from specedit.drafting.model.alignment import BUFFER, OnlineAlignment
from specedit.drafting.registry import make_drafter
from specedit.drafting.vocabulary import VocabularyIndex
from specedit.engine.memory import Memory
from specedit.engine.session import generate

VOCAB = 96
pytestmark = pytest.mark.usefixtures("small_drafting_cache")


def _prompt(seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return repeating_prompt(seed) + torch.randint(0, VOCAB, (9,), generator=g).tolist()


@pytest.mark.parametrize("seed", [0, 3])
def test_greedy_with_lora_equals_generate(qwen_tiny, stranger_tiny, seed):
    prompt = _prompt(seed)
    reference = greedy_reference(qwen_tiny, prompt, 64)
    drafter = make_drafter("evospec-lora", qwen_tiny, draft_sources(stranger_tiny, prompt))
    result = generate(qwen_tiny, prompt, drafter, max_new_tokens=64)
    assert result.tokens == reference
    report = drafter.report()
    assert report["lora_updates"] >= 1 and report["lora_last_loss"] > 0


def test_a_draft_model_that_is_never_wrong_never_trains(qwen_tiny):
    """The target's twin predicts every committed token; the prompt is short enough that the
    update's window sees all the context the drafts saw."""
    prompt = _prompt(1)[:30]
    drafter = make_drafter(
        "evospec-lora", qwen_tiny, draft_sources(copy.deepcopy(qwen_tiny), prompt)
    )
    result = generate(qwen_tiny, prompt, drafter, max_new_tokens=64)
    assert result.tokens == greedy_reference(qwen_tiny, prompt, 64)
    report = drafter.report()
    assert report["lora_updates"] == 0 and report["lora_skipped"] >= 1


def test_the_shared_draft_model_stays_plain(qwen_tiny, stranger_tiny):
    before = {name: t.clone() for name, t in stranger_tiny.state_dict().items()}
    flags = [p.requires_grad for p in stranger_tiny.parameters()]
    prompt = _prompt(0)
    drafter = make_drafter("evospec-lora", qwen_tiny, draft_sources(stranger_tiny, prompt))
    generate(qwen_tiny, prompt, drafter, max_new_tokens=64)
    assert drafter.report()["lora_updates"] >= 1
    after = stranger_tiny.state_dict()
    assert before.keys() == after.keys()
    assert all(torch.equal(before[name], after[name]) for name in before)
    assert [p.requires_grad for p in stranger_tiny.parameters()] == flags

    ids = torch.tensor([prompt])
    with torch.inference_mode():
        plain = stranger_tiny(ids).logits
        trained = drafter.alignment.model(ids).logits
        fresh = OnlineAlignment(stranger_tiny, drafter.copier.vocabulary, drafter.final).model(ids)
    assert not torch.equal(trained, plain)  # the first edit's copy did learn
    assert torch.equal(fresh.logits, plain)  # the next one starts from the plain model


def _memory(qwen_tiny, tokens: list[int]) -> tuple[Memory, int]:
    """Memory over `tokens` with the target's final states, as the engine would leave it."""
    final = qwen_tiny.config.num_hidden_layers
    memory = Memory(tokens, (final,))
    with torch.inference_mode():
        out = qwen_tiny(torch.tensor([tokens[:-1]]), output_hidden_states=True)
        memory.store_hidden(out.hidden_states, list(range(len(tokens) - 1)))
    return memory, final


def _divergence(qwen_tiny, draft, tokens: list[int], positions: list[int]) -> float:
    """Mean KL(target || draft) before `positions`, both softmaxes over the target's top 11."""
    ids = torch.tensor([tokens])
    rows = torch.tensor(positions) - 1
    with torch.inference_mode():
        target_logits = qwen_tiny(ids).logits[0, rows]
        support = target_logits.topk(11).indices
        p = torch.log_softmax(target_logits.gather(1, support), dim=-1)
        q = torch.log_softmax(draft(ids).logits[0, rows].gather(1, support), dim=-1)
    return float((p.exp() * (p - q)).sum(-1).mean())


def test_updates_bring_the_draft_model_nearer_the_target(qwen_tiny, stranger_tiny):
    """The same verification steps of the target's own output, learnt again and again: the
    buffer's loss falls, and so does the divergence where the curriculum weighs most (each
    step's first token)."""
    prompt = repeating_prompt(0)
    tokens = prompt + greedy_reference(qwen_tiny, prompt, BUFFER + 8)
    memory, final = _memory(qwen_tiny, tokens)
    ends = [4, 11, 13, 22, BUFFER]  # five verification steps of the buffer's 32 tokens
    steps = [range(len(prompt) + a, len(prompt) + b) for a, b in zip([0, *ends], ends)]
    alignment = OnlineAlignment(
        stranger_tiny, VocabularyIndex(qwen_tiny, use_hnsw=False), final, learning_rate=1e-3
    )
    firsts = [step.start for step in steps]
    start = _divergence(qwen_tiny, alignment.model, tokens, firsts)
    losses = []
    for _ in range(10):
        with torch.inference_mode():  # as the engine calls it
            for fresh in steps:
                alignment.learn(memory, fresh)
        losses.append(alignment.report()["lora_last_loss"])
    assert alignment.updates == 10 and not alignment.buffer
    assert losses[-1] < 0.8 * losses[0]
    assert _divergence(qwen_tiny, alignment.model, tokens, firsts) < 0.8 * start
