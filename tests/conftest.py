"""Shared fixtures: tiny random models built from a config (no download, fast, fp32), and the
small bundled model for end-to-end runs."""

from __future__ import annotations

import os

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

torch.set_num_threads(2)

# End-to-end tests run on the small bundled model, whatever the product's default is: the CLI
# (and the pre-commit hook it spawns) read SPECEDIT_MODEL.
TEST_MODEL = "qwen2.5-coder-0.5b"
os.environ["SPECEDIT_MODEL"] = TEST_MODEL


def tiny_model(
    kind: str = "qwen2", attn: str = "sdpa", vocab: int = 96, seed: int = 0, init: float = 0.3
):
    """A 2-layer random model; the default large init gives peaked logits, so greedy choices
    have clear margins."""
    config_class, model_class = {
        "qwen2": (Qwen2Config, Qwen2ForCausalLM),
        "llama": (LlamaConfig, LlamaForCausalLM),
    }[kind]
    config = config_class(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        initializer_range=init,
        eos_token_id=None,
        bos_token_id=None,
        pad_token_id=None,
        attn_implementation=attn,
    )
    torch.manual_seed(seed)
    return model_class(config).eval()


def repeating_prompt(seed: int, vocab: int = 96) -> list[int]:
    """A prompt with repeats, so lookup drafters find matches."""
    g = torch.Generator().manual_seed(seed)
    base = torch.randint(0, vocab, (24,), generator=g).tolist()
    noise = torch.randint(0, vocab, (6,), generator=g).tolist()
    return base + base[:12] + noise + base


def greedy_reference(model, prompt: list[int], max_new_tokens: int, eos: int | None = None):
    """Plain greedy `generate`: the tokens every strict method must reproduce."""
    ids = torch.tensor([prompt])
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),  # token 0 is no padding here
        max_new_tokens=max_new_tokens,
        do_sample=False,
        eos_token_id=eos,
        pad_token_id=eos if eos is not None else 0,
    )
    return out[0, len(prompt) :].tolist()


@pytest.fixture(scope="session")
def qwen_tiny():
    return tiny_model("qwen2")


@pytest.fixture(scope="session")
def llama_tiny_eager():
    return tiny_model("llama", attn="eager", seed=1)


@pytest.fixture(scope="session")
def bundled_model_dir():
    """The test model's converted folder (converted once per machine, ~1 minute)."""
    from specedit import models

    return models.resolve(TEST_MODEL)


@pytest.fixture(scope="session")
def tokenizer(bundled_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(bundled_model_dir)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, bundled_model_dir, tokenizer):
    """A random 2-layer Qwen2 with the real tokenizer and chat template, saved as a folder."""
    folder = tmp_path_factory.mktemp("tiny-qwen")
    model = tiny_model("qwen2", vocab=len(tokenizer), init=0.02)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
