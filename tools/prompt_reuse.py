"""How much of a second edit's prompt on the same file a warm KV cache already holds, per
prompt layout: what a warm server, a `--test` retry or a redrawn `--samples` candidate on the
llama.cpp engine does not prefill again. Counts tokens only (no model is run).

    python tools/prompt_reuse.py tools/prompt-variants/instruction-first specedit/editing/templates
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from transformers import AutoTokenizer

from specedit.bench.tasks import load_tasks
from specedit.editing import prompts
from specedit.models.prepare import resolve

SECOND = "Add a short comment above every function."


def shared_prefix(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def main(folders: list[str], model: str = "qwen2.5-coder-1.5b") -> None:
    tokenizer = AutoTokenizer.from_pretrained(resolve(model))
    tasks = load_tasks()
    for folder in folders:
        cached, total = [], []
        for task in tasks:
            template = prompts.load_template(str(Path(folder) / f"{task.kind}.toml"))
            first = prompts.build(tokenizer, template, task.input, task.instruction, task.language)
            second = prompts.build(tokenizer, template, task.input, SECOND, task.language)
            cached.append(shared_prefix(first.ids, second.ids))
            total.append(len(second.ids))
        share = statistics.median(c / t for c, t in zip(cached, total))
        print(
            f"{folder}: {len(tasks)} tasks, median {share:.1%} of the second prompt cached "
            f"({statistics.median(cached):.0f} of {statistics.median(total):.0f} tokens)"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
