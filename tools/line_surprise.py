"""Does the model find a planted bug's line the least natural of its file? Each task's fix
prompt is built as an edit builds it (`editor.prepare`: the file first, the instruction after
it) and read up to the file's end; each code line (not blank, not a comment, not a docstring)
is scored by its most surprising token's -log p, and the rank of the first line the task's
expected answer changes is reported (docs/quality.md, "Where the input looks wrong to the
model").

    python tools/line_surprise.py ../shared/bench/humanevalfix.jsonl hef-lines.json
    python tools/line_surprise.py suite suite-lines.json   # the suite's planted bugs

A line the fix inserts after is found at the line before it or after it.
"""

from __future__ import annotations

import ast
import bisect
import difflib
import itertools
import json
import sys
from pathlib import Path

import numpy as np

from specedit.bench.tasks import load_tasks
from specedit.editing.editor import EditRequest, prepare
from specedit.models.load import load

MODEL = "qwen2.5-coder-1.5b"


def code_lines(source: str) -> list[int]:
    """The 0-based numbers of `source`'s lines of code: not blank, not a comment alone, not in
    a docstring."""
    prose: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            first = body[0]
            if isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                prose.update(range(first.lineno - 1, first.end_lineno))
    return [
        number
        for number, line in enumerate(source.splitlines())
        if line.strip() and not line.lstrip().startswith("#") and number not in prose
    ]


def fixed_lines(source: str, expected: str) -> set[int]:
    """The 0-based numbers of `source`'s lines that `expected` replaces or deletes, and those
    on either side of where it inserts."""
    old, new = source.splitlines(), expected.splitlines()
    lines: set[int] = set()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, first, last, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            lines.update(range(first, last))
        elif tag == "insert":
            lines.update({max(first - 1, 0), min(first, len(old) - 1)})
    return lines


def line_scores(spans: list[tuple[int, int]], surprisal: list[float], source: str) -> list[float]:
    """Each line's highest token surprisal, a token (its character span in `source`) counting
    on the line where it starts."""
    lengths = [len(line) for line in source.splitlines(keepends=True)]
    starts = list(itertools.accumulate(lengths, initial=0))[:-1]
    scores = [0.0] * len(starts)
    for (start, _), value in zip(spans, surprisal, strict=True):
        line = bisect.bisect_right(starts, start) - 1
        scores[line] = max(scores[line], value)
    return scores


def rank_of_fix(scores: list[float], code: list[int], fixed: set[int]) -> int | None:
    """Where the first fixed line of code stands among the code lines, most surprising first
    (0: the top); None where the fix touches no line of code."""
    ranked = sorted(code, key=lambda number: -scores[number])
    places = [ranked.index(number) for number in fixed if number in ranked]
    return min(places) if places else None


def surprisals(llm, ids: list[int], first: int, last: int) -> list[float]:
    """-log p of each of `ids[first:last]` given the tokens before it."""
    llm.reset()
    llm.eval(ids[:last])
    rows = np.asarray(llm.scores[first - 1 : last - 1], dtype=np.float64)
    top = rows.max(axis=1, keepdims=True)
    log_total = (top + np.log(np.exp(rows - top).sum(axis=1, keepdims=True)))[:, 0]
    return list(log_total - rows[np.arange(last - first), ids[first:last]])


def main(source: str, out: str) -> None:
    from llama_cpp import Llama

    tasks = load_tasks(None if source == "suite" else Path(source))
    tasks = [task for task in tasks if task.group == "bug" and task.expected]
    model = load(MODEL, engine="llama.cpp")  # its tokenizer and chat template, and its file
    llm = Llama(
        model_path=str(model.model.path),
        n_ctx=8192,
        n_threads=2,
        n_threads_batch=2,
        logits_all=True,
        verbose=False,
    )
    results = []
    for task in tasks:
        request = EditRequest(task.input, task.instruction, prompt="fix", language="python")
        prompt = prepare(model, request).prompt
        values = surprisals(llm, prompt.ids, prompt.input_start, prompt.input_end)
        scores = line_scores(list(prompt.input_offsets), values, task.input)
        code = code_lines(task.input)
        rank = rank_of_fix(scores, code, fixed_lines(task.input, task.expected))
        results.append({"id": task.id, "rank": rank, "code_lines": len(code)})
        print(task.id, rank, len(code), flush=True)
    Path(out).write_text(json.dumps(results, indent=1))
    ranked = [result for result in results if result["rank"] is not None]
    for top in (1, 3):
        chance = sum(min(top, r["code_lines"]) / r["code_lines"] for r in ranked)
        hits = sum(r["rank"] < top for r in ranked)
        print(f"the fixed line among the {top} most surprising: {hits}/{len(results)}", end="")
        print(f" (by chance: {chance:.1f})")


if __name__ == "__main__":
    main(*sys.argv[1:])
