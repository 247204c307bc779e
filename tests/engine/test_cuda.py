"""On a CUDA GPU: every drafting method on a tiny fp32 model equals plain greedy `generate` on
the same device, and sampling runs there. Skipped where torch sees no GPU."""

from __future__ import annotations

import pytest
import torch
from helpers import draft_sources, greedy_reference, repeating_prompt, tiny_model

from specedit.bench.ablations import ABLATIONS, needs_draft_model
from specedit.calibrate.preverifier import save
from specedit.drafting.copying.copy import CopyDrafter, rerank_layer
from specedit.drafting.copying.heads import AttentionRanker
from specedit.drafting.copying.preverifier import PreVerifierNet
from specedit.drafting.registry import METHODS, make_drafter
from specedit.engine.options import Sampling
from specedit.engine.session import generate

pytestmark = pytest.mark.cuda  # skipped where torch sees no GPU (conftest's hook)


@pytest.fixture(scope="module")
def model():
    return tiny_model("qwen2").to("cuda")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """Indexes and the pre-verifier's weights go to a fresh cache."""
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    return tmp_path


def drafter_for(method: str, model, prompt: list[int]):
    if needs_draft_model(method):  # a second tiny model on the GPU drafts
        draft = tiny_model("qwen2", seed=7).to("cuda")
        return make_drafter(method, model, draft_sources(draft, prompt))
    if method == "pldplus-attn":  # explicit heads: no calibration needed
        return CopyDrafter("pldplus-attn", AttentionRanker(model, heads=[(1, 2), (0, 1), (1, 0)]))
    if "trained" in method:  # any pre-verifier will do: exactness must not depend on it
        layer = rerank_layer(model.config.num_hidden_layers)
        save(PreVerifierNet(model.config.hidden_size, layer), model)
    return make_drafter(method, model)


def test_the_model_is_on_the_gpu(model):
    assert model.device.type == "cuda"
    assert model.dtype == torch.float32


@pytest.mark.parametrize("method", [*METHODS, *ABLATIONS])
@pytest.mark.parametrize("seed", [0, 1])
def test_every_method_equals_greedy_generate_on_cuda(model, method, seed):
    prompt = repeating_prompt(seed)
    reference = greedy_reference(model, prompt, 48)
    result = generate(model, prompt, drafter_for(method, model, prompt), max_new_tokens=48)
    assert result.tokens == reference
    assert result.stop_reason == "length"
    assert result.stats.new_tokens == 48


def test_sampling_on_cuda_is_reproducible_and_uses_the_drafts(model):
    prompt = repeating_prompt(3)
    runs = [
        generate(
            model,
            prompt,
            make_drafter("pld", model),
            max_new_tokens=32,
            sampling=Sampling(temperature=0.7, top_k=20, top_p=0.95, seed=seed),
        )
        for seed in (5, 5, 6)
    ]
    assert runs[0].tokens == runs[1].tokens  # one seed, one sample
    assert all(len(run.tokens) == 32 for run in runs)
    assert all(0 <= token < model.config.vocab_size for run in runs for token in run.tokens)
    assert sum(run.stats.drafted_tokens for run in runs) > 0
    assert runs[0].tokens != greedy_reference(model, prompt, 32) or runs[2].tokens != runs[0].tokens
