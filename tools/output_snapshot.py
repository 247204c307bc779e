"""Record what every (task, method) generation produced, to show a refactor changed nothing.

For each run: the tokens, the stop reason, forward passes, drafted and accepted tokens, accepted
paths and the drafter's counters. Run it on the commit before a change and on the one after
(e.g. from `git worktree`s with PYTHONPATH pointing at each), with the same threads, then diff
the two JSON files: identical means the change kept the outputs and the speculation itself.

    PYTHONPATH=../before python tools/output_snapshot.py before.json
    PYTHONPATH=../after python tools/output_snapshot.py after.json --like before.json
    cmp before.json after.json

The default plan: the 8 shortest tasks of the shipped suite with every strict copy method the
bench compares. The JSON is rewritten after every run, so a stopped run keeps what it did.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

import specedit.bench.ablations  # noqa: F401  (the editor makes the ablations by name)
from specedit.bench.tasks import load_tasks
from specedit.editing.editor import EditRequest, generate_edit, prepare
from specedit.models.load import load

METHODS = ("adapld", "pld", "pldplus", "pool", "adapld-adaptive-length", "adapld-no-branch")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("--like", type=Path, help="run the (task, method) keys of this snapshot")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    lm = load(args.model, "fp32")
    tasks = {task.id: task for task in load_tasks()}
    if args.like:
        plan = [key.split("/") for key in json.loads(args.like.read_text())]
    else:
        shortest = sorted(tasks.values(), key=lambda task: len(task.input))[:8]
        plan = [(task.id, method) for method in METHODS for task in shortest]
    results = json.loads(args.output.read_text()) if args.output.exists() else {}
    for task_id, method in plan:
        if f"{task_id}/{method}" in results:
            continue
        task = tasks[task_id]
        request = EditRequest(
            task.input, task.instruction, prompt=task.kind, language=task.language, method=method
        )
        generation = generate_edit(lm, prepare(lm, request))
        stats = generation.stats
        results[f"{task_id}/{method}"] = {
            "tokens": generation.tokens,
            "stop": generation.stop_reason,
            "passes": stats.forward_passes,
            "drafted": stats.drafted_tokens,
            "accepted": stats.accepted_tokens,
            "paths": dict(stats.accepted_paths),
            "drafting": stats.drafting,
        }
        args.output.write_text(json.dumps(results))
        print(f"{task_id:36} {method:24} {len(generation.tokens):5} tokens", flush=True)


if __name__ == "__main__":
    main()
