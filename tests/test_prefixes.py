"""Prompt heads on disk: which head is kept, which is read back, and what a damaged store does.
(The heads' K/V in a real llama.cpp context: tests/test_llamacpp.py.)"""

from __future__ import annotations

from specedit.prefixes import PrefixStore

SYSTEM = list(range(100, 140))  # 40 tokens every prompt starts with


def test_a_head_is_kept_once_two_prompts_share_it(tmp_path):
    store = PrefixStore(tmp_path / "heads")
    first, second = SYSTEM + [1, 2, 3], SYSTEM + [1, 9, 9]
    assert store.worth_keeping(first, stored=0) == 0  # nothing before it to share with
    assert store.worth_keeping(second, stored=0) == len(SYSTEM) + 1
    store.save(second[:41], b"state-41")
    assert store.longest(SYSTEM + [1, 5]) == (second[:41], b"state-41")
    assert store.longest(SYSTEM[:-1] + [0]) is None  # a prompt that does not start with it
    assert store.longest(SYSTEM[:20]) is None  # shorter than the head


def test_the_longest_stored_head_wins_and_a_stored_one_is_not_kept_again(tmp_path):
    store = PrefixStore(tmp_path)
    store.save(SYSTEM[:20], b"short")
    store.save(SYSTEM, b"long")
    store.save([7] * 30, b"other")
    assert store.longest(SYSTEM + [5]) == (SYSTEM, b"long")
    store.worth_keeping(SYSTEM + [1], stored=0)
    assert store.worth_keeping(SYSTEM + [2], stored=len(SYSTEM)) == 0  # the cache had it all
    assert store.worth_keeping(SYSTEM + [2, 3], stored=len(SYSTEM)) == len(SYSTEM) + 1


def test_short_heads_are_not_kept_and_long_ones_are_cut(tmp_path):
    store = PrefixStore(tmp_path)
    store.worth_keeping([1] * 10 + [2], stored=0)
    assert store.worth_keeping([1] * 10 + [3], stored=0) == 0  # under MIN_TOKENS
    long = list(range(2000))
    store.worth_keeping(long, stored=0)
    assert store.worth_keeping(long + [1], stored=0) == PrefixStore.MAX_TOKENS


def test_only_the_newest_heads_are_kept(tmp_path):
    store = PrefixStore(tmp_path)
    for n in range(PrefixStore.KEPT + 3):
        store.save([n] * 20, b"s")
    assert len(list(tmp_path.glob("*.head"))) == PrefixStore.KEPT


def test_a_damaged_head_is_passed_over(tmp_path):
    store = PrefixStore(tmp_path)
    store.save(SYSTEM, b"good")
    (tmp_path / "bad.head").write_bytes((10_000).to_bytes(4, "little") + b"\0" * 8)
    (tmp_path / "last.tokens").write_bytes(b"\xff\xff")
    assert store.longest(SYSTEM + [1]) == (SYSTEM, b"good")
    assert store.worth_keeping(SYSTEM, stored=0) == 0  # an unreadable last prompt: none before
