"""Prompt heads kept on disk for the llama.cpp engine, so that a cold edit prefills only what
is new to it (the system prompt and the template are the same in every edit: about half of a
small file's prompt).

A warm process keeps its KV cache between edits (engine/llamacpp.py); a CLI process starts
with an empty one. The store gives it back the K/V of the longest head it saved before, as
llama.cpp serialises a sequence's state.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from specedit.engine.llamacpp import shared_length
from specedit.files import replace_atomically


class PrefixStore:
    """The K/V of prompt heads that edits share (the system prompt, the template, often the
    instruction), kept on disk so that a cold edit prefills only what is new to it.

    Which head is worth keeping is learnt, not configured: the tokens a prompt shares with the
    prompt before it. A head is saved when a second prompt shares it, and read back from then
    on; the longest stored head that starts a prompt is the one used. Heads are cut at
    MAX_TOKENS (a 1.5B model's K/V is about 28 kB a token) and at most KEPT are kept."""

    MAX_TOKENS = 512
    MIN_TOKENS = 16  # below this a head saves less than reading it back costs
    KEPT = 8

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def longest(self, tokens: list[int]) -> tuple[list[int], bytes] | None:
        """The longest stored head that `tokens` start with, and its sequence state."""
        best: tuple[list[int], Path] | None = None
        for path in self._heads():
            try:
                head = _read_tokens(path)
            except (OSError, ValueError):
                continue  # damaged: prefill instead
            starts = len(head) <= len(tokens) and tokens[: len(head)] == head
            if starts and (best is None or len(head) > len(best[0])):
                best = head, path
        if best is None:
            return None
        head, path = best
        try:
            return head, path.read_bytes()[4 + 4 * len(head) :]
        except OSError:  # removed meanwhile by another process's clean-up
            return None

    def worth_keeping(self, tokens: list[int], stored: int) -> int:
        """How many of `tokens` to store now: the head this prompt shares with the one
        before it, where that is longer than the `stored` head it started with; else 0.
        Records this prompt as the one before the next."""
        last_file, head = self.folder / "last.tokens", tokens[: self.MAX_TOKENS]
        try:
            last = _read_tokens(last_file)
        except (OSError, ValueError):  # the first prompt, or a damaged record
            last = []
        shared = shared_length(last, head)
        self.folder.mkdir(parents=True, exist_ok=True)
        replace_atomically(last_file, lambda tmp: _write_head(tmp, head, b""))
        return shared if shared >= self.MIN_TOKENS and shared > stored else 0

    def save(self, head: list[int], state: bytes) -> None:
        digest = hashlib.sha256(np.asarray(head, dtype=np.int32).tobytes()).hexdigest()[:16]
        replace_atomically(
            self.folder / f"{digest}.head", lambda tmp: _write_head(tmp, head, state)
        )
        for stale in sorted(self._heads(), key=_mtime, reverse=True)[self.KEPT :]:
            stale.unlink(missing_ok=True)

    def _heads(self) -> list[Path]:
        return list(self.folder.glob("*.head")) if self.folder.is_dir() else []


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0


def _write_head(path: Path, head: list[int], state: bytes) -> None:
    with open(path, "wb") as out:
        out.write(len(head).to_bytes(4, "little"))
        out.write(np.asarray(head, dtype=np.int32).tobytes())
        out.write(state)


def _read_tokens(path: Path) -> list[int]:
    with open(path, "rb") as saved:
        count = int.from_bytes(saved.read(4), "little")
        data = saved.read(4 * count)
    if len(data) < 4 * count:
        raise ValueError(f"{path} is cut short")
    return np.frombuffer(data, dtype=np.int32).tolist()
