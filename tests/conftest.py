"""Shared fixtures: tiny random models built from a config (no download, fast, fp32), a small
byte-level BPE tokenizer trained here with a ChatML template like Qwen's, and the small bundled
model for end-to-end runs (the only fixture that needs it, for tests marked e2e)."""

from __future__ import annotations

import gc
import importlib
import inspect
import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

# The fast tier's models are tiny: a second thread only adds synchronisation, which costs a
# great deal when another job shares the cores (the sampling tests ran 80x slower with two).
torch.set_num_threads(1)

# End-to-end tests run on the small bundled model, whatever the product's default is: the CLI
# (and the pre-commit hook it spawns) read SPECEDIT_MODEL.
TEST_MODEL = "qwen2.5-coder-0.5b"
os.environ["SPECEDIT_MODEL"] = TEST_MODEL
# ... and on the torch engine, whose answers their expectations were written against, whatever
# `--engine auto` would choose: the llama.cpp tier names its engine, and test_llamacpp.py tests
# what auto chooses.
os.environ["SPECEDIT_ENGINE"] = "torch"


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


# A prompt whose input is its first five tokens, then what follows an input in a prompt (the
# closing fence, the instruction), and an answer that has copied the input's 6, 7 so far.
INPUT_THEN_MORE = [5, 6, 7, 8, 9, 50, 51, 52]


def main_copy_after(drafter, model, prompt: list[int], answer: list[int]) -> list[int]:
    """The main copy `drafter` proposes after `prompt` and `answer`, with the states of `model`
    stored where the drafter compares them."""
    from specedit.drafting.kinds import MAIN
    from specedit.engine.memory import Memory

    memory = Memory(prompt, drafter.hidden_layers)
    memory.extend(answer)
    if drafter.hidden_layers:
        with torch.no_grad():
            out = model(torch.tensor([memory.tokens[:-1]]), output_hidden_states=True)
        memory.store_hidden(out.hidden_states, list(range(len(memory) - 1)))
    tree = drafter.propose(memory, 16)
    return [tree.token(n) for n in range(1, len(tree)) if tree.kind(n) == MAIN]


def greedy_reference(model, prompt: list[int], max_new_tokens: int, eos: int | None = None):
    """Plain greedy `generate` on the model's device: the tokens every strict method must
    reproduce."""
    ids = torch.tensor([prompt], device=model.device)
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),  # token 0 is no padding here
        max_new_tokens=max_new_tokens,
        do_sample=False,
        eos_token_id=eos,
        pad_token_id=eos if eos is not None else 0,
    )
    return out[0, len(prompt) :].tolist()


# What the children the tests start (the CLI, `specedit serve`, the pre-commit hook, a --test
# check) make of a deprecation: an error, as pyproject's filterwarnings makes it in the tests
# themselves. A warning a child printed to its captured stderr would go unseen otherwise.
CHILD_WARNINGS = "error::DeprecationWarning,error::FutureWarning"


@pytest.fixture(autouse=True, scope="session")
def _children_fail_on_deprecations() -> Iterator[None]:
    """Every child inherits CHILD_WARNINGS (an `env` the tests build starts from os.environ);
    only children read PYTHONWARNINGS, at their start."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONWARNINGS", CHILD_WARNINGS)
        yield


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The common umask (022: what is made is readable by others), so that a test of what is
    kept private sees the modes specedit chose, not a strict umask of the machine's."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.fixture(autouse=True, scope="module")
def _models_freed_after_each_module() -> Iterator[None]:
    """`models.load` keeps every model it loaded for the life of the process (a CLI or a server
    loads one); over the e2e tier that would be every bundled model, on each engine and context
    size, at once. Each test module starts with none loaded, so the tier holds at most what one
    module loads (test_llamacpp.py loads the most: both engines, several context sizes)."""
    yield
    from specedit.models.load import load

    load.cache_clear()
    gc.collect()


@pytest.fixture(scope="session")
def qwen_tiny():
    return tiny_model("qwen2")


@pytest.fixture(scope="session")
def stranger_tiny():
    """A draft model for `qwen_tiny` (same vocabulary) that disagrees with it often."""
    return tiny_model("qwen2", seed=7)


class IdTokenizer:
    """For token statistics over ids below 96 (the tiny models' vocabulary): one id a character."""

    def __call__(self, text: str, add_special_tokens: bool = False):
        return {"input_ids": [ord(c) % 96 for c in text]}


def draft_sources(draft_model, prompt: list[int], input_tokens: int = 24):
    """Draft sources with `draft_model` as the draft model and the prompt's start as the input."""
    from types import SimpleNamespace

    from specedit.drafting.registry import DraftSources

    draft = SimpleNamespace(model=draft_model, tokenizer=IdTokenizer())
    return DraftSources(0, prompt[:input_tokens], draft=draft)


@pytest.fixture
def small_drafting_cache(tmp_path, monkeypatch):
    """Indexes and token statistics go to a fresh folder; the statistics' corpus is short."""
    from specedit.drafting.model import cooccurrence

    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    monkeypatch.setattr(cooccurrence, "CORPUS_CHARS", 20_000)


@pytest.fixture(scope="session")
def llama_tiny_eager():
    return tiny_model("llama", attn="eager", seed=1)


@pytest.fixture(autouse=True)
def _own_config(tmp_path_factory, monkeypatch) -> None:
    """The user's config folder (settings, trusted project files) is one of the test's own,
    empty: a developer's own settings or trust must not change what a test sees."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))


@pytest.fixture(autouse=True)
def _fast_tier(request, monkeypatch, tmp_path_factory):
    """Outside e2e, the CLI's default model is the tiny one, in fp32 on one thread: a command
    that loads the model before it fails (as `fix missing.py` does) never reaches the bundled
    model; what the tiny models leave in the cache (pass costs, indexes) goes to the test
    session's own folder. torch's thread count is restored after each test, since the CLI sets
    it globally."""
    if request.node.get_closest_marker("e2e") is None:
        monkeypatch.setenv("SPECEDIT_MODEL", str(request.getfixturevalue("tiny_model_dir")))
        monkeypatch.setenv("SPECEDIT_DTYPE", "fp32")
        monkeypatch.setenv("SPECEDIT_THREADS", "1")
        monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def bundled_model_dir():
    """The test model's converted folder (converted once per machine, ~1 minute), with what a
    first edit on the torch engine needs built, as `specedit models prepare` builds it (AdaPLD's
    indexes, about 45 s once): the tests then see edits, not one-time builds: e2e only."""
    from specedit.drafting.registry import build_artefacts
    from specedit.models.load import load
    from specedit.models.prepare import resolve

    folder = resolve(TEST_MODEL)
    build_artefacts(load(TEST_MODEL))
    return folder


# What the tokenizer learns from: Python source that every interpreter has at hand.
CORPUS_MODULES = ("textwrap", "difflib", "json.decoder")
SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
# Qwen2's pre-tokenizer split: words with their leading space, single digits, punctuation runs.
SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


def train_tokenizer(vocab_size: int = 1024):
    """A byte-level BPE (so any UTF-8 text round-trips exactly) with Qwen's special tokens and
    a ChatML chat template, trained in a fraction of a second on standard-library source."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [inspect.getsource(importlib.import_module(name)) for name in CORPUS_MODULES]
    backend.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        chat_template=CHAT_TEMPLATE,
    )


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A random 2-layer Qwen2 with the small tokenizer and its chat template, saved as a folder
    that `--model` loads."""
    folder = tmp_path_factory.mktemp("tiny-qwen")
    trained = train_tokenizer()
    tiny_model("qwen2", vocab=len(trained), init=0.02).save_pretrained(folder)
    trained.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tokenizer(tiny_model_dir):
    """The small tokenizer as the product loads it from the folder. transformers makes any
    qwen2 folder's tokenizer a Qwen2Tokenizer, which NFC-normalizes its input as the real
    Qwen's does; NFC text round-trips exactly."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


@contextmanager
def serving(command: list[str], port: int, env: dict | None = None) -> Iterator[str]:
    """An HTTP server started by `command` on `port`; yields its base URL once /v1/models
    answers, and stops it afterwards."""
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log, text=True)
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 180
            while True:
                try:
                    get_json(url + "/v1/models")
                    break
                except OSError as error:
                    if isinstance(error, urllib.error.HTTPError) and error.code == 401:
                        break  # up, and asking for its key
                    if process.poll() is not None or time.monotonic() > deadline:
                        log.seek(0)
                        pytest.fail(f"the server did not start: {log.read()}")
                    time.sleep(0.2)
            yield url
        finally:
            process.terminate()
            process.wait(30)


def force_tokens(model, pattern: list[int], start: int) -> None:
    """Make the model's greedy choice at position p be pattern[(p - start) % len(pattern)],
    whatever the context: a model that says what a test needs it to (or is stuck in a loop)."""
    seen: dict[str, torch.Tensor] = {}

    def remember(_module, _args, kwargs):
        positions = kwargs.get("position_ids")
        if positions is None:  # a plain causal pass (the prefill) goes on from the cache
            done = kwargs["cache"].get_seq_length()
            positions = torch.arange(kwargs["input_ids"].shape[1]).unsqueeze(0) + done
        seen["positions"] = positions[0]

    def bias(_module, _args, logits):
        positions = seen["positions"][-logits.shape[1] :]
        targets = torch.tensor([pattern[(int(p) - start) % len(pattern)] for p in positions])
        logits[0, torch.arange(len(targets)), targets] += 1e4
        return logits

    model.register_forward_pre_hook(remember, with_kwargs=True)
    model.lm_head.register_forward_hook(bias)
