"""Prompt heads on disk: which head a prompt gets back, how many are kept, and what a damaged
store does. (The heads' K/V in a real llama.cpp context: tests/e2e/test_llamacpp.py.)"""

from __future__ import annotations

import numpy as np

from specedit.engine.llamacpp import Head
from specedit.models.prefixes import PrefixStore

SYSTEM = list(range(100, 140))  # 40 tokens every prompt starts with


def test_a_prompt_gets_the_head_that_shares_the_most_with_it(tmp_path):
    store = PrefixStore(tmp_path / "heads")
    assert store.nearest(SYSTEM + [1]) is None  # nothing stored yet
    store.save(SYSTEM[:20], b"short")
    store.save(SYSTEM + [1, 2, 3], b"other instruction")
    store.save([7] * 30, b"another model's prompt")
    # The longest shared run wins, also from a head that goes on differently.
    assert store.nearest(SYSTEM + [1, 9]) == Head(SYSTEM + [1, 2, 3], b"other instruction")
    assert store.nearest(SYSTEM[:25]) == Head(SYSTEM + [1, 2, 3], b"other instruction")
    assert store.nearest([7] * 16 + [0]) == Head([7] * 30, b"another model's prompt")


def test_a_head_sharing_too_little_is_not_read_back(tmp_path):
    store = PrefixStore(tmp_path)
    store.save(SYSTEM, b"s")
    assert store.nearest(SYSTEM[: PrefixStore.MIN_TOKENS - 1] + [0]) is None
    assert store.nearest(SYSTEM[: PrefixStore.MIN_TOKENS] + [0]) == Head(SYSTEM, b"s")


def test_only_the_newest_heads_are_kept(tmp_path):
    store = PrefixStore(tmp_path)
    for n in range(PrefixStore.KEPT + 3):
        store.save([n] * 20, b"s")
    assert len(list(tmp_path.glob("*.head"))) == PrefixStore.KEPT


def test_a_damaged_head_is_passed_over(tmp_path):
    store = PrefixStore(tmp_path)
    store.save(SYSTEM, b"good")
    (tmp_path / "bad.head").write_bytes((10_000).to_bytes(4, "little") + b"\0" * 8)
    assert store.nearest(SYSTEM + [1]) == Head(SYSTEM, b"good")


def test_a_prompt_that_needs_states_gets_only_a_head_kept_with_them(tmp_path):
    """A drafter that reads hidden states needs them for the reused tokens too: such a prompt
    passes over heads kept without states, and gets the states back with the rest."""
    store = PrefixStore(tmp_path)
    states = np.arange(20 * 3, dtype=np.float32).reshape(20, 3)
    store.save(SYSTEM, b"no states")
    assert store.nearest(SYSTEM + [1], states=True) is None
    store.save(SYSTEM[:20], b"with states", states)
    found = store.nearest(SYSTEM + [1], states=True)
    assert (found.tokens, found.state) == (SYSTEM[:20], b"with states")
    assert np.array_equal(found.states, states)
    assert store.nearest(SYSTEM + [1]) == Head(SYSTEM, b"no states")  # the longer one, as before
    next(tmp_path.glob("*.states")).write_bytes(b"damaged")
    assert store.nearest(SYSTEM + [1], states=True) is None


def test_a_stale_head_goes_with_its_states(tmp_path):
    store = PrefixStore(tmp_path)
    for n in range(PrefixStore.KEPT + 2):
        store.save([n] * 20, b"s", np.zeros((20, 2), np.float32))
    assert len(list(tmp_path.glob("*.states"))) == PrefixStore.KEPT


def test_heads_are_readable_by_the_user_alone(tmp_path, open_umask):
    """A head keeps the first tokens of a file the user edited, its states are computed from
    them: neither is for other users, whatever the umask."""
    store = PrefixStore(tmp_path / "prefix" / "model")
    store.save(SYSTEM, b"s", np.zeros((len(SYSTEM), 4), dtype=np.float32))
    store.save(SYSTEM, b"again", np.zeros((len(SYSTEM), 4), dtype=np.float32))  # replaced
    [head] = store.folder.glob("*.head")
    for path in (head, head.with_suffix(".states")):
        assert path.stat().st_mode & 0o777 == 0o600, path
    assert store.folder.stat().st_mode & 0o777 == 0o700
