"""Stopping answers that run away in a loop: the same block of lines, over and over.

A small model that loses its place tends to repeat the same few lines until the token limit,
which on a long file is minutes of waiting for an answer that will be thrown away. The guard
watches the answer line by line and stops it shortly after the loop starts; a repetition that
the input itself contains (a table, a run of similar asserts) is not a loop.
"""

from __future__ import annotations

from collections.abc import Callable

from specedit.editing.prompts import Lines

RUNAWAY = "runaway"  # the engine's stop reason when the guard fires


class RunawayGuard:
    """A stop condition: returns RUNAWAY once the last `repeats` x p lines are one p-line block
    repeated (p <= `max_period`), holding at least `min_chars` of non-blank text, and that
    repeated run does not occur in the input."""

    def __init__(
        self,
        decode: Callable[[int], str],
        input_text: str,
        repeats: int = 3,
        max_period: int = 24,
        min_chars: int = 120,
    ) -> None:
        self.reader = Lines(decode)
        self.input_text = input_text
        self.repeats, self.max_period, self.min_chars = repeats, max_period, min_chars
        self.lines: list[str] = []

    def __call__(self, token: int) -> str | None:
        for line in self.reader.feed(token):
            self.lines.append(line)
            if self._looping():
                return RUNAWAY
        return None

    def _looping(self) -> bool:
        lines = self.lines
        for period in range(1, self.max_period + 1):
            span = period * self.repeats
            if span > len(lines):
                return False
            block = lines[-period:]
            if all(lines[-span + i] == block[i % period] for i in range(span - period)):
                run = lines[-span:]
                substantial = sum(len(line.strip()) for line in run) >= self.min_chars
                if substantial and "\n".join(run) not in self.input_text:
                    return True
        return False
