"""Where each piece of the output came from: a copy of the input, or the model's own text.

Speculative decoding with the input as the draft knows, for every accepted token, the memory
position it was copied from. Consecutive tokens copied from consecutive positions make one copied
span; a run of the model's own tokens makes one generated span. Output offsets are characters of
the decoded output, from `prompts.AnswerText`: a byte-level BPE token can hold part of a UTF-8
character, and decoding tokens one by one would garble it (and drop SentencePiece's leading
spaces).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from itertools import accumulate, chain, repeat

from specedit.editing.prompts import AnswerText, EditPrompt
from specedit.engine.events import Step

RELAXED = "relaxed"  # a drafted token that a lossy (CASD) rule accepted against the model's choice
GENERATED = "generated"  # how counts and the dashboard name the model's own tokens (kind None)


def step_kinds(step: Step) -> list[str | None]:
    """The step's kinds with relaxed acceptances marked; `relaxed` is optional on a Step."""
    relaxed = chain(getattr(step, "relaxed", None) or (), repeat(False))
    return [RELAXED if lossy else kind for kind, lossy in zip(step.kinds, relaxed)]


@dataclass(slots=True)
class Span:
    """Output characters from one origin. `input` is the copied character span of the input (only
    for source "input"); source is "input", "prompt" (elsewhere in the prompt), "output" (earlier
    output) or None (the model's own tokens)."""

    output: tuple[int, int]
    input: tuple[int, int] | None
    source: str | None
    kind: str | None  # main, branch, successor, pool, relaxed; None for the model's own tokens
    tokens: int

    def as_dict(self) -> dict:
        return {
            "output": list(self.output),
            "input": list(self.input) if self.input else None,
            "source": self.source,
            "kind": self.kind,
            "tokens": self.tokens,
        }


class Attribution:
    """Collects Steps into merged spans; feed it as (or from) `on_step`.

    `decode` turns token ids into text, as the answer is read (e.g. skipping special tokens).
    Tokens that end inside a character wait until a later token completes it, so `text` and
    `spans` cover the settled tokens; the last span may still grow.
    """

    def __init__(self, prompt: EditPrompt, decode: Callable[[list[int]], str]) -> None:
        self.prompt = prompt
        self.decode = decode
        self._reset()

    def _reset(self) -> None:
        """As before any step."""
        self.answer = AnswerText(self.decode)
        self.spans: list[Span] = []
        self.sources: Counter[str] = Counter()  # tokens by source, "generated" for the model's
        self.kinds: Counter[str] = Counter()  # tokens by kind, "generated" for the model's
        self._pending: list[tuple[int | None, str | None]] = []  # (source, kind) not yet settled
        self._next: int | None = None  # the memory position that would extend the last span
        self._steps: list[Step] = []  # what it was given, to replay after a rewind

    @property
    def tokens(self) -> list[int]:
        return self.answer.tokens

    @property
    def text(self) -> str:
        """The output text of the settled tokens."""
        return self.answer.text

    @property
    def copied_share(self) -> float:
        """Fraction of output tokens copied from the input text."""
        return self.sources["input"] / len(self.tokens) if self.tokens else 0.0

    def origin(self, position: int | None) -> str | None:
        """The source name of a memory position."""
        if position is None:
            return None
        if position >= len(self.prompt.ids):
            return "output"
        return "input" if self.prompt.input_span(position) is not None else "prompt"

    def add(self, step: Step) -> None:
        """Each token that completes its characters settles with the pending tokens before it
        (which get empty output spans). A step that takes tokens back first (`rewind`) has the
        steps before it replayed up to there."""
        if step.rewind:
            self._replay(sum(len(s.tokens) for s in self._steps) - step.rewind)
        self._steps.append(replace(step, rewind=0))
        for source, kind in zip(step.sources, step_kinds(step)):
            self._pending.append((source, kind))
            self.sources[self.origin(source) or GENERATED] += 1
            self.kinds[kind or GENERATED] += 1
        end = len(self.text)
        for count, piece in self.answer.add(step.tokens):
            group, self._pending = self._pending[:count], self._pending[count:]
            start, end = end, end + len(piece)
            for i, (source, kind) in enumerate(group):
                self._extend(source, kind, start, end if i == len(group) - 1 else start)

    def _replay(self, tokens: int) -> None:
        """Start again from nothing and take the first `tokens` tokens of the steps given."""
        steps = self._steps
        self._reset()
        for step in steps:
            keep = max(tokens, 0)
            tokens -= len(step.tokens)
            if keep < len(step.tokens):
                cut = slice(0, keep)
                step = replace(
                    step,
                    tokens=step.tokens[cut],
                    sources=step.sources[cut],
                    kinds=step.kinds[cut],
                    relaxed=step.relaxed[cut],
                )
            if step.tokens:
                self.add(step)

    def _extend(self, source: int | None, kind: str | None, start: int, end: int) -> None:
        origin = self.origin(source)
        chars = self.prompt.input_span(source) if origin == "input" else None
        last = self.spans[-1] if self.spans else None
        if last and (last.kind, last.source) == (kind, origin) and source == self._next:
            last.output = (last.output[0], end)
            if chars and last.input:
                last.input = (last.input[0], max(last.input[1], chars[1]))
            last.tokens += 1
        else:
            self.spans.append(Span((start, end), chars, origin, kind, 1))
        self._next = None if source is None else source + 1

    def to_json(self) -> str:
        """The record `--attribution FILE` writes: the decoded output and its spans."""
        return _record(
            self.text,
            len(self.tokens),
            self.copied_share,
            self.spans,
            dict(self.sources),
            dict(self.kinds),
        )


def _record(
    output: str,
    tokens: int,
    copied_share: float,
    spans: list[Span],
    by_source: dict[str, int],
    by_kind: dict[str, int],
) -> str:
    return json.dumps(
        {
            "output": output,
            "tokens": tokens,
            "copied_share": round(copied_share, 4),
            "tokens_by_source": by_source,
            "tokens_by_kind": by_kind,
            "spans": [span.as_dict() for span in spans],
        },
        ensure_ascii=False,
        indent=1,
    )


def merged_attribution(original: str, merged: str) -> str:
    """The `--attribution` record of a snippet merged without the model (`specedit apply`): the
    same fields, with the merged text's lines as spans copied from the input or taken from the
    snippet (source "snippet"); no token was generated."""
    old, new = original.splitlines(keepends=True), merged.splitlines(keepends=True)
    offsets = [0, *accumulate(len(line) for line in old)]
    spans, at = [], 0
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, old, new, autojunk=False).get_opcodes():
        if tag == "delete":
            continue
        width = sum(len(line) for line in new[j1:j2])
        copied = tag == "equal"
        spans.append(
            Span(
                (at, at + width),
                (offsets[i1], offsets[i2]) if copied else None,
                "input" if copied else "snippet",
                "merge",
                0,
            )
        )
        at += width
    copied = sum(span.output[1] - span.output[0] for span in spans if span.source == "input")
    return _record(merged, 0, copied / len(merged) if merged else 0.0, spans, {}, {})
