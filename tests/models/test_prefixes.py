"""Prompt heads on disk and in a server's memory: which head a prompt gets back, how many are
kept, and what a damaged store does. (The heads' K/V in a real llama.cpp context:
tests/e2e/test_llamacpp.py.)"""

from __future__ import annotations

import numpy as np
import pytest

from specedit.engine.llamacpp import Head
from specedit.models.prefixes import PrefixStore, RecentHeads

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


def test_a_head_no_longer_than_what_the_cache_holds_is_not_read_back(tmp_path):
    """A warm cache holding 30 of the prompt's tokens gains nothing from a head sharing 30."""
    store = PrefixStore(tmp_path)
    store.save(SYSTEM[:30], b"s")
    assert store.nearest(SYSTEM, beyond=29) == Head(SYSTEM[:30], b"s")
    assert store.nearest(SYSTEM, beyond=30) is None


def test_the_head_read_back_last_is_kept_longest(tmp_path):
    import os

    store = PrefixStore(tmp_path)
    for n in range(PrefixStore.KEPT):
        store.save([n] * 20, b"s")
        for age, head in enumerate(sorted(tmp_path.glob("*.head"), key=os.path.getmtime)):
            os.utime(head, (1000 + age, 1000 + age))  # the order they were saved in
    assert store.nearest([0] * 20) is not None  # the oldest, used again
    store.save([99] * 20, b"s")
    assert store.nearest([0] * 20) is not None and store.nearest([1] * 20) is None


def test_a_server_keeps_the_heads_it_used_last_within_its_budget():
    heads = RecentHeads(budget=2500)
    for n in range(3):
        heads.save([n] * 20, bytes(1000))
    assert heads.nearest([0] * 20) is None and heads.size() == 2000  # over the budget: gone
    assert heads.nearest([1] * 20) == Head([1] * 20, bytes(1000))  # now the newest in use
    heads.save([3] * 20, bytes(1000))
    assert heads.nearest([1] * 20) is not None and heads.nearest([2] * 20) is None
    heads.save([4] * 20, bytes(3000))  # larger than the budget: kept by none
    assert heads.nearest([4] * 20) is None and heads.size() == 0


def test_a_server_gives_back_the_head_sharing_most_and_only_with_states_if_asked():
    heads = RecentHeads(budget=1 << 20)
    heads.save(SYSTEM + [1, 2], b"file one")
    heads.save(SYSTEM + [3], b"file two", np.zeros((len(SYSTEM) + 1, 4), dtype=np.float32))
    assert heads.nearest(SYSTEM + [1, 2, 5]).state == b"file one"
    assert heads.nearest(SYSTEM + [1, 2, 5], beyond=len(SYSTEM) + 2) is None
    assert heads.nearest(SYSTEM + [1, 2, 5], states=True).state == b"file two"
    assert heads.nearest(SYSTEM[: RecentHeads.MIN_TOKENS - 1] + [0]) is None
    heads.save(SYSTEM + [1, 2], b"file one, again")  # the same prompt: replaced, not doubled
    assert heads.nearest(SYSTEM + [1, 2]).state == b"file one, again" and len(heads) == 2


def test_only_the_newest_heads_are_kept(tmp_path):
    store = PrefixStore(tmp_path)
    for n in range(PrefixStore.KEPT + 3):
        store.save([n] * 20, b"s")
    assert len(list(tmp_path.glob("*.head"))) == PrefixStore.KEPT


def test_heads_are_kept_within_a_byte_budget_newest_first(tmp_path, monkeypatch):
    """A whole prompt's K/V runs to tens of MB: the newest heads that fit BYTES are kept."""
    import os

    store = PrefixStore(tmp_path)
    monkeypatch.setattr(PrefixStore, "BYTES", 2500)
    for n in range(4):
        store.save([n] * 20, bytes(1000))  # 1,084 bytes with its tokens
        for age, head in enumerate(sorted(tmp_path.glob("*.head"), key=os.path.getmtime)):
            os.utime(head, (1000 + age, 1000 + age))  # the order they were saved in
    assert store.nearest([3] * 20) is not None and store.nearest([2] * 20) is not None
    assert store.nearest([1] * 20) is None and len(list(tmp_path.glob("*.head"))) == 2


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


def test_the_cache_command_shows_the_kept_prompts_and_clears_them(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from specedit.cli import app

    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    store = PrefixStore(tmp_path / "prefix" / "model-0.3")
    store.save(SYSTEM, bytes(2 << 20))
    store.save(SYSTEM + [1], bytes(1 << 20))
    shown = CliRunner().invoke(app, ["cache"])
    assert shown.exit_code == 0
    assert shown.stdout.splitlines() == [str(tmp_path / "prefix"), "model-0.3  2 prompts  3.0 MiB"]
    cleared = CliRunner().invoke(app, ["cache", "--clear"])
    assert cleared.stdout.splitlines()[-1] == "model-0.3  removed"
    assert not store.folder.exists() and store.nearest(SYSTEM) is None


@pytest.mark.llamacpp
def test_heads_are_kept_apart_by_the_weights_layout(tmp_path, monkeypatch):
    """Repacked kernels round otherwise than the plain ones: a head computed under one layout,
    restored under the other, would not be that engine's own decoding."""
    from specedit.models.load import heads_folder

    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path))
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    repacked, plain = heads_folder(gguf, True), heads_folder(gguf, False)
    assert repacked != plain
    assert repacked.parent == plain.parent == tmp_path / "prefix"
    PrefixStore(repacked).save(SYSTEM, b"repacked state")
    assert PrefixStore(plain).nearest(SYSTEM) is None
