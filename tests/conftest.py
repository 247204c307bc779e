"""Shared fixtures: tiny random models (built by helpers.py), the small tokenizer trained there
saved with a tiny model as a folder that `--model` loads, and the small bundled model for
end-to-end runs (the only fixture that needs it, for tests marked e2e); and the one hook that
turns the markers of what a test needs (llamacpp, llamacpp_server, cuda) into skips where it is
missing."""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
import importlib.util
import os
from collections.abc import Iterator

import pytest

# torch, transformers and helpers (which imports both) are imported where a fixture needs them,
# not here: with -n, the process that hands the tests to the workers loads this file too, and
# runs none of them.

# The tests run on the torch engine, whose answers their expectations were written against,
# whatever `--engine auto` would choose: the llama.cpp tier names its engine, and
# engine/test_llamacpp.py tests what auto chooses.
os.environ["SPECEDIT_ENGINE"] = "torch"


@pytest.fixture(autouse=True, scope="session")
def _tests_on_one_thread_and_the_small_model() -> None:
    """The fast tier's models are tiny: a second thread only adds synchronisation, which costs
    a great deal when another job shares the cores (the sampling tests ran 80x slower with two).
    End-to-end tests run on the small bundled model (helpers.TEST_MODEL), whatever the
    product's default is: the CLI (and the pre-commit hook it spawns) read SPECEDIT_MODEL."""
    import torch
    from helpers import TEST_MODEL

    torch.set_num_threads(1)
    os.environ["SPECEDIT_MODEL"] = TEST_MODEL


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


# Resident memory past which the models loaded so far are let go after a test.
HELD_LIMIT = 3 * 2**30


@pytest.fixture(autouse=True)
def _models_freed_when_many_are_held() -> Iterator[None]:
    """`models.load` keeps every model it loaded for the life of the process (a CLI or a server
    loads one); over the e2e tier that would be every bundled model, on each engine, dtype and
    context size, at once. After a test that leaves the process holding more than HELD_LIMIT,
    they are let go, and the heap handed back to the system (glibc keeps freed memory
    otherwise), so that the tier holds about what one test needs while the tests that follow
    one another on the same model still share it."""
    yield
    if _resident_bytes() <= HELD_LIMIT:
        return
    from specedit.models.load import load

    load.cache_clear()
    gc.collect()
    if (libc := ctypes.util.find_library("c")) is not None:
        with contextlib.suppress(AttributeError):  # not glibc
            ctypes.CDLL(libc).malloc_trim(0)


def _resident_bytes() -> int:
    """This process's resident memory (0 where /proc does not say)."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


@pytest.fixture(scope="session")
def qwen_tiny():
    from helpers import tiny_model

    return tiny_model("qwen2")


@pytest.fixture(scope="session")
def stranger_tiny():
    """A draft model for `qwen_tiny` (same vocabulary) that disagrees with it often."""
    from helpers import tiny_model

    return tiny_model("qwen2", seed=7)


@pytest.fixture
def small_drafting_cache(tmp_path, monkeypatch):
    """Indexes and token statistics go to a fresh folder; the statistics' corpus is short."""
    from specedit.drafting.model import cooccurrence

    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    monkeypatch.setattr(cooccurrence, "CORPUS_CHARS", 20_000)


@pytest.fixture(scope="session")
def llama_tiny_eager():
    from helpers import tiny_model

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
    import torch

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
    from helpers import TEST_MODEL

    from specedit.drafting.registry import build_artefacts
    from specedit.models.load import load
    from specedit.models.prepare import resolve

    folder = resolve(TEST_MODEL)
    build_artefacts(load(TEST_MODEL))
    return folder


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """A random 2-layer Qwen2 with the small tokenizer and its chat template, saved as a folder
    that `--model` loads."""
    from helpers import tiny_model, train_tokenizer

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


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _installed(*modules: str) -> bool:
    return all(importlib.util.find_spec(name) is not None for name in modules)


# What each marker says a test needs: whether this machine has it, and the skip's reason.
NEEDS = {
    "llamacpp": (
        lambda: _installed("llama_cpp"),
        "needs llama-cpp-python (the llamacpp extra)",
    ),
    # llama-cpp-python's OpenAI-compatible server (its `server` extra), llama-server's stand-in.
    "llamacpp_server": (
        lambda: _installed("llama_cpp", "sse_starlette", "starlette_context"),
        "needs llama-cpp-python[server]",
    ),
    "cuda": (lambda: _cuda(), "needs a CUDA GPU (torch sees none)"),
}


@functools.cache
def _missing(marker: str) -> str | None:
    """Why a test marked `marker` cannot run here, or None where it can (asked once a run)."""
    available, reason = NEEDS[marker]
    return None if available() else reason


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The one place a marker of what a test needs becomes a skip where it is missing, so that
    no test file repeats a `skipif` next to its marker."""
    for item in items:
        for marker in NEEDS:
            if item.get_closest_marker(marker) is not None and (reason := _missing(marker)):
                item.add_marker(pytest.mark.skip(reason=reason))
