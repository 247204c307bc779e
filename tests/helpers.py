"""What the tests share besides fixtures (those are in conftest.py): where the test data
lies, tiny random models built from a config (no download, fast, fp32), a small byte-level BPE
tokenizer trained here with a ChatML template like Qwen's, drafters that know the answer, a
server started as a child process, and the scripts of tools/ as modules. Every test folder
imports it (`from helpers import ...`: pyproject's pytest `pythonpath` puts tests/ on the
path)."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from specedit.drafting.kinds import BRANCH
from specedit.editing import sandbox
from specedit.editing.examples import Examples
from specedit.engine.drafter import Drafter
from specedit.engine.memory import Memory
from specedit.engine.target import TransformersTarget
from specedit.engine.tree import DraftTree

TESTS = Path(__file__).parent
ROOT = TESTS.parent  # the checkout: examples/, tools/, pyproject.toml
DATA = TESTS / "data"
SNAPSHOTS = TESTS / "snapshots"


def tool(name: str):
    """tools/NAME.py as a module (tools/ is no package), for testing its parts."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# End-to-end tests run on the small bundled model, whatever the product's default is
# (conftest.py sets SPECEDIT_MODEL to it).
TEST_MODEL = "qwen2.5-coder-0.5b"


# The examples' two runs: as the user's own code (--examples) and confined (the default).
EXAMPLE_RUNS = pytest.mark.parametrize(
    "run",
    [
        Examples.ASKED,
        pytest.param(
            Examples.CONFINED,
            marks=pytest.mark.skipif(not sandbox.available(), reason="no seccomp on this system"),
        ),
    ],
)


# A planted bug and candidate answers to it, for the tests that judge and choose candidates.
MEAN_BUG = "def mean(values):\n    return sum(values) * len(values)\n\n\nprint(mean([1, 2]))\n"
MEAN_RIGHT = MEAN_BUG.replace("sum(values) * len", "sum(values) / len")
MEAN_WRONG = MEAN_BUG.replace("sum(values) * len", "sum(values) + len")
MEAN_BROKEN = MEAN_BUG.replace("return sum(values)", "return (sum(values)")
MEAN_REFORMATTED = MEAN_RIGHT.replace("/ len(values)", "/  len(values)")  # same change, blanks


def tiny_model(
    kind: str = "qwen2",
    attn: str = "sdpa",
    vocab: int = 96,
    seed: int = 0,
    init: float = 0.3,
    layers: int = 2,
):
    """A random model of 2 layers by default; the default large init gives peaked logits, so
    greedy choices have clear margins. Tests that run it thousands of times take 1 layer."""
    config_class, model_class = {
        "qwen2": (Qwen2Config, Qwen2ForCausalLM),
        "llama": (LlamaConfig, LlamaForCausalLM),
    }[kind]
    config = config_class(
        vocab_size=vocab,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=layers,
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


# Greedy runs already decoded, per model: (prompt, eos) -> (tokens, the length asked for).
_GREEDY_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def greedy_reference(model, prompt: list[int], max_new_tokens: int, eos: int | None = None):
    """Plain greedy `generate` on the model's device: the tokens every strict method must
    reproduce. Greedy decoding is deterministic, so a longer run's start is a shorter run's
    answer: each prompt is decoded once per model, as far as the tests ask."""
    runs = _GREEDY_RUNS.setdefault(model, {})
    key = (tuple(prompt), eos)
    if (known := runs.get(key)) is not None:
        tokens, asked = known
        if asked >= max_new_tokens or len(tokens) < asked:  # far enough, or it ended there
            return tokens[:max_new_tokens]
    ids = torch.tensor([prompt], device=model.device)
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),  # token 0 is no padding here
        max_new_tokens=max_new_tokens,
        do_sample=False,
        eos_token_id=eos,
        pad_token_id=eos if eos is not None else 0,
    )
    tokens = out[0, len(prompt) :].tolist()
    runs[key] = (tokens, max_new_tokens)
    return list(tokens)


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


class OracleDrafter(Drafter):
    """Drafts the known greedy continuation, with a wrong sibling and a planted error.

    It makes the engine accept long paths through real trees: the true path is added after a
    wrong branch, and every `error_every`-th draft has one wrong token at `error_at`.
    """

    name = "oracle"

    def __init__(self, reference: list[int], prompt_length: int, length: int = 16) -> None:
        self.reference, self.prompt_length, self.length = reference, prompt_length, length
        self.calls = 0

    def propose(self, memory: Memory, budget: int) -> DraftTree:
        self.calls += 1
        done = len(memory) - self.prompt_length
        truth = self.reference[done : done + min(budget, self.length)]
        tree = DraftTree(root=memory.tokens[-1])
        if not truth:
            return tree
        tree.add_chain([(truth[0] + 1) % 96, truth[0]], kind=BRANCH)  # a wrong branch first
        if self.calls % 3 == 0 and len(truth) > 3:
            truth = truth[:2] + [(truth[2] + 7) % 96] + truth[3:]
        tree.add_chain(truth)
        return tree


class ChainsOnly:
    """A transformers model behind a target that, like llama.cpp's, verifies chains only."""

    def __init__(self, model) -> None:
        self.model, self.config = model, model.config

    def open_target(self, capacity: int, reuse: bool = True) -> TransformersTarget:
        target = TransformersTarget(self.model)
        target.trees = False
        return target


class ScriptedEditor:
    """Stands in for the model in an edit: answers with the text it was asked for, changed by
    `change`, and keeps the requests; `passes` are the post-processing passes said to have
    changed each answer, with its text before them."""

    def __init__(self, change: Callable[[str], str], passes: dict[str, str] | None = None) -> None:
        self.change = change
        self.passes = passes or {}
        self.startup: dict[str, float] = {}
        self.engine = "scripted"
        self.requests: list = []

    def decode(self, tokens: list[int]) -> str:
        return ""

    def edit(self, request, on_start=None, on_step=None):
        from specedit.editing import prompts
        from specedit.editing.editor import EditResult
        from specedit.engine.events import Generation, Stats

        self.requests.append(request)
        prompt = prompts.EditPrompt([], "```", request.text, 0, 0)
        if on_start:
            on_start(prompt, 100)
        generation = Generation([], "stop", Stats(new_tokens=1, forward_passes=1))
        answer = self.change(request.text)
        return EditResult(answer, generation, prompt, before_passes=dict(self.passes))
