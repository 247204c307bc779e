"""Prompt heads on disk: which head a prompt gets back, how many are kept, and what a damaged
store does. (The heads' K/V in a real llama.cpp context: tests/test_llamacpp.py.)"""

from __future__ import annotations

from specedit.models.prefixes import PrefixStore

SYSTEM = list(range(100, 140))  # 40 tokens every prompt starts with


def test_a_prompt_gets_the_head_that_shares_the_most_with_it(tmp_path):
    store = PrefixStore(tmp_path / "heads")
    assert store.nearest(SYSTEM + [1]) is None  # nothing stored yet
    store.save(SYSTEM[:20], b"short")
    store.save(SYSTEM + [1, 2, 3], b"other instruction")
    store.save([7] * 30, b"another model's prompt")
    # The longest shared run wins, also from a head that goes on differently.
    assert store.nearest(SYSTEM + [1, 9]) == (SYSTEM + [1, 2, 3], b"other instruction")
    assert store.nearest(SYSTEM[:25]) == (SYSTEM + [1, 2, 3], b"other instruction")
    assert store.nearest([7] * 16 + [0]) == ([7] * 30, b"another model's prompt")


def test_a_head_sharing_too_little_is_not_read_back(tmp_path):
    store = PrefixStore(tmp_path)
    store.save(SYSTEM, b"s")
    assert store.nearest(SYSTEM[: PrefixStore.MIN_TOKENS - 1] + [0]) is None
    assert store.nearest(SYSTEM[: PrefixStore.MIN_TOKENS] + [0]) == (SYSTEM, b"s")


def test_only_the_newest_heads_are_kept(tmp_path):
    store = PrefixStore(tmp_path)
    for n in range(PrefixStore.KEPT + 3):
        store.save([n] * 20, b"s")
    assert len(list(tmp_path.glob("*.head"))) == PrefixStore.KEPT


def test_a_damaged_head_is_passed_over(tmp_path):
    store = PrefixStore(tmp_path)
    store.save(SYSTEM, b"good")
    (tmp_path / "bad.head").write_bytes((10_000).to_bytes(4, "little") + b"\0" * 8)
    assert store.nearest(SYSTEM + [1]) == (SYSTEM, b"good")
