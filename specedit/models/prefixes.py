"""Prompt heads kept on disk for the llama.cpp engine, so that a cold edit prefills only what
is new to it: the system prompt and the template are the same in every edit (about half of a
small file's prompt), and the file comes before the instruction, so a second instruction on
the same file shares all of the file with the first one's prompt.

A warm process keeps its KV cache between edits (engine/llamacpp.py); a CLI process starts
with an empty one. The store gives it back the K/V of the saved prompt head that shares the
most leading tokens with the new prompt, as llama.cpp serialises a sequence's state; the
engine drops what follows the shared part and prefills the rest. A head computed for a drafter
that reads hidden states keeps its tokens' final states beside it (`<digest>.states`), since a
prompt that reuses the K/V needs those states too and could not compute them otherwise.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np

from specedit.engine.llamacpp import Head, shared_length
from specedit.files import replace_atomically
from specedit.models.bundled import private_dir

Key = TypeVar("Key")  # what a store finds a head by: its file, its tokens' bytes


class PrefixStore:
    """The K/V of recent prompts, on disk: a head is a cold prompt, whole.

    A 1.5B model's K/V is about 28 kB a token, so a 2,000-token prompt's head is about 56 MB,
    and its final states (where kept) 12 MB; the KEPT newest within BYTES in all are kept, per
    model file, llama.cpp version and weights' layout (the folder says which; `specedit cache`
    shows and clears them)."""

    MIN_TOKENS = 16  # fewer shared tokens save less than reading a head back costs
    KEPT = 8
    BYTES = 1 << 30

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def nearest(self, tokens: list[int], states: bool = False, beyond: int = 0) -> Head | None:
        """The stored head that shares the most leading tokens with `tokens` (at least
        MIN_TOKENS, and more than `beyond`: what the cache holds already), with its sequence
        state; with `states`, only among the heads kept with their final states, which come
        with it. A head read back counts as new, so the heads used last are the ones kept."""
        best = _sharing_most(self._readable(states), tokens, beyond)
        if best is None:
            return None
        path, head = best
        try:
            with open(path, "rb") as saved:
                saved.seek(4 + 4 * len(head))  # past the tokens, read above
                state = saved.read()
            with contextlib.suppress(OSError):  # a read-only cache keeps its order
                os.utime(path)
            return Head(head, state, _read_states(path, len(head)) if states else None)
        except (OSError, ValueError):  # removed meanwhile by another process's clean-up
            return None

    def save(self, head: list[int], state: bytes, states: np.ndarray | None = None) -> None:
        """Keep `head`, and its final `states` where given (before the head, so that a head
        found with a states file has its own); a full disk or a read-only cache keeps nothing
        (the edit goes on)."""
        digest = hashlib.sha256(np.asarray(head, dtype=np.int32).tobytes()).hexdigest()[:16]
        path = self.folder / f"{digest}.head"
        try:
            private_dir(self.folder)
            if states is not None:
                _save_private(_states_path(path), lambda tmp: _write_states(tmp, states))
            _save_private(path, lambda tmp: _write_head(tmp, head, state))
            self._keep_newest()
        except OSError:
            pass

    def _readable(self, states: bool) -> Iterator[tuple[Path, list[int]]]:
        """Each head's path and tokens (with `states`, of those kept with them); a damaged
        head is passed over: the prompt is prefilled instead."""
        for path in self._heads():
            if states and not _states_path(path).exists():
                continue
            try:
                yield path, _read_tokens(path)
            except (OSError, ValueError):
                continue

    def _keep_newest(self) -> None:
        """Remove the heads past the KEPT newest, or past BYTES with their states."""
        total = 0
        for rank, kept in enumerate(sorted(self._heads(), key=_mtime, reverse=True)):
            total += _size(kept) + _size(_states_path(kept))
            if rank >= self.KEPT or total > self.BYTES:
                kept.unlink(missing_ok=True)
                _states_path(kept).unlink(missing_ok=True)

    def _heads(self) -> list[Path]:
        return list(self.folder.glob("*.head")) if self.folder.is_dir() else []


class RecentHeads:
    """The K/V of the prompts a server read last, in its memory: the heads of the files its
    clients edit, so that a request on a file the server read before, with other files in
    between, prefills only what differs from the last prompt on that file. The least recently
    used heads go first, past KEPT or past `budget` bytes (a head larger than the budget is not
    kept)."""

    MIN_TOKENS = PrefixStore.MIN_TOKENS
    KEPT = 16

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._heads: OrderedDict[bytes, Head] = OrderedDict()

    def nearest(self, tokens: list[int], states: bool = False, beyond: int = 0) -> Head | None:
        """As `PrefixStore.nearest`, from memory."""
        kept = (
            (key, head.tokens)
            for key, head in self._heads.items()
            if not states or head.states is not None
        )
        best = _sharing_most(kept, tokens, beyond)
        if best is None:
            return None
        self._heads.move_to_end(best[0])
        return self._heads[best[0]]

    def save(self, head: list[int], state: bytes, states: np.ndarray | None = None) -> None:
        """Keep `head`, dropping the least recently used heads past KEPT or the budget."""
        key = np.asarray(head, dtype=np.int32).tobytes()
        self._heads.pop(key, None)
        self._heads[key] = Head(head, state, states)
        while len(self._heads) > self.KEPT or self.size() > self.budget:
            self._heads.popitem(last=False)

    def __len__(self) -> int:
        return len(self._heads)

    def size(self) -> int:
        """The bytes its heads hold (K/V, and final states where kept)."""
        return sum(_head_bytes(head) for head in self._heads.values())


def _sharing_most(
    heads: Iterable[tuple[Key, list[int]]], tokens: list[int], beyond: int
) -> tuple[Key, list[int]] | None:
    """The (key, tokens) of the head sharing the most leading tokens with `tokens`: at least
    MIN_TOKENS (fewer save less than reading a head back costs), and more than `beyond`."""
    best, best_shared = None, max(PrefixStore.MIN_TOKENS - 1, beyond)
    for key, head in heads:
        if (shared := shared_length(head, tokens)) > best_shared:
            best, best_shared = (key, head), shared
    return best


def _head_bytes(head: Head) -> int:
    return len(head.state) + (head.states.nbytes if head.states is not None else 0)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _save_private(path: Path, write: Callable[[Path], None]) -> None:
    """Write `path` atomically, readable by the user alone (0600): a head holds the first
    tokens of a file the user edited, and its states are computed from them."""
    replace_atomically(path, write).chmod(0o600)


def _write_head(path: Path, head: list[int], state: bytes) -> None:
    with open(path, "wb") as out:
        out.write(len(head).to_bytes(4, "little"))
        out.write(np.asarray(head, dtype=np.int32).tobytes())
        out.write(state)


def _states_path(head: Path) -> Path:
    return head.with_suffix(".states")


def _write_states(path: Path, states: np.ndarray) -> None:
    with open(path, "wb") as out:
        np.save(out, states)


def _read_states(head: Path, rows: int) -> np.ndarray:
    """The final states kept beside `head`, one row per token (ValueError if they are not)."""
    states = np.load(_states_path(head))
    if states.ndim != 2 or len(states) != rows:
        raise ValueError(f"{head}'s states are not one row per token")
    return states


def _read_tokens(path: Path) -> list[int]:
    with open(path, "rb") as saved:
        count = int.from_bytes(saved.read(4), "little")
        data = saved.read(4 * count)
    if len(data) < 4 * count:
        raise ValueError(f"{path} is cut short")
    return np.frombuffer(data, dtype=np.int32).tolist()
