"""Where a bug task's fix sits among an unchanged answer's branch points, under several orders.

For each bug task of the suite, the answer that copies the input unchanged is fed to the model
after the fix prompt (teacher-forced), once with the task's instruction and once with a neutral
one that names no symptom. At each answer token this reads the model's log-probability of the
copied token and of its likeliest other token, under both. The fix is the first token where the
expected answer differs from the input; printed per task is its rank among the branch points
(`branches.branch_points`, 0 = the first redraw) under each order:

- shipped: the least sure token first, as `--samples` and `--test` redraw;
- shipped, no names: the same without the definitions the instruction names first;
- contrast A: the other token's gain over the copied one, with the instruction against the
  neutral one weighted A (context-aware decoding's contrast: (1 + A) log p - A log p_neutral);
- pmi: how much the instruction raised the other token's log-probability.

    python tools/branch_signals.py --json signals.json [--tasks id,id]   # runs the model
    python tools/branch_signals.py --json signals.json --ranks-only      # ranks again
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch

from specedit.bench.tasks import load_tasks
from specedit.editing import prompts
from specedit.editing.branches import branch_points
from specedit.editing.region import named_lines
from specedit.engine.target import open_target
from specedit.engine.tree import DraftTree
from specedit.models.load import load

NEUTRAL = "There is a bug somewhere in it."
CHUNK = 256  # answer tokens per teacher-forced pass (within one llama.cpp batch)
CONTRASTS = (0.5, 1.0, 2.0)
LIMIT = 300  # branch points listed per order; a fix further down counts as not found


def teacher_forced(lm, prompt_ids: list[int], answer: list[int]) -> torch.Tensor:
    """log p(. | prompt, answer[:i]) for every i, one row per answer token."""
    sequence = prompt_ids + answer
    target = open_target(lm.model, len(sequence) + CHUNK + 2)
    target.prefill(prompt_ids[:-1], False)
    prefix = len(prompt_ids) - 1  # tokens in the cache; sequence[prefix] is the next root
    rows: list[torch.Tensor] = []
    while sum(map(len, rows)) < len(answer):
        tree = DraftTree(sequence[prefix])
        if chain := sequence[prefix + 1 : prefix + CHUNK]:
            tree.add_chain(chain)
        out = target.forward(tree, prefix, False)
        scores = torch.as_tensor(out.logits).float()  # llama.cpp's NumPy, a tensor on torch
        rows.append(torch.log_softmax(scores, -1))  # row k predicts prefix+k+1
        target.keep(prefix, list(range(len(tree))))
        prefix += len(tree)
    return torch.cat(rows)[: len(answer)]


def signals(lm, task) -> dict:
    """The per-token log-probabilities an order needs, for the task's unchanged answer."""
    answer = lm.tokenizer(prompts.with_final_newline(task.input), add_special_tokens=False)
    expected = lm.tokenizer(prompts.with_final_newline(task.expected), add_special_tokens=False)
    answer, expected = answer["input_ids"], expected["input_ids"]
    template = prompts.load_template("fix")
    logs = {}
    for name, instruction in (("task", task.instruction), ("neutral", NEUTRAL)):
        prompt = prompts.build(lm.tokenizer, template, task.input, instruction, task.language)
        logs[name] = teacher_forced(lm, prompt.ids, answer)
    copied = torch.tensor(answer)[:, None]
    others = logs["task"].scatter(1, copied, -math.inf)
    runner = others.argmax(-1)
    return {
        "answer": answer,
        "expected": expected,
        "named": sorted(named_lines(task.instruction, task.input)),
        "runner": runner.tolist(),
        "copied": logs["task"].gather(1, copied)[:, 0].tolist(),
        "runner_log": others.max(-1).values.tolist(),
        "neutral_copied": logs["neutral"].gather(1, copied)[:, 0].tolist(),
        "neutral_runner": logs["neutral"].gather(1, runner[:, None])[:, 0].tolist(),
    }


def ranks(found: dict, decode, language: str) -> dict[str, int | None]:
    """The fix's rank among the branch points under each order (None: not among them)."""
    answer, expected = found["answer"], found["expected"]
    fix = next(i for i, (a, b) in enumerate(zip(answer, expected, strict=False)) if a != b)
    wanted = (*answer[:fix], expected[fix])
    copied, runner_log = found["copied"], found["runner_log"]
    gain = [r - c for r, c in zip(runner_log, copied, strict=True)]
    neutral_gain = [
        r - c for r, c in zip(found["neutral_runner"], found["neutral_copied"], strict=True)
    ]
    keys = {"shipped": copied, "shipped, no names": copied}  # ascending: the first redrawn
    for weight in CONTRASTS:
        keys[f"contrast {weight}"] = [
            -((1 + weight) * g - weight * n) for g, n in zip(gain, neutral_gain, strict=True)
        ]
    keys["pmi"] = [n - r for n, r in zip(found["neutral_runner"], runner_log, strict=True)]
    named = set(found["named"])
    result = {}
    for order, key in keys.items():
        lines = set() if order == "shipped, no names" else named
        points = branch_points(answer, key, found["runner"], decode, LIMIT, lines, language)
        result[order] = points.index(wanted) if wanted in points else None
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--tasks", default="")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--ranks-only", action="store_true", help="rank the saved signals")
    args = parser.parse_args()
    lm = load(args.model, engine="llama.cpp")
    tasks = load_tasks(ids=args.tasks.split(",") if args.tasks else None)
    tasks = [t for t in tasks if t.group == "bug" and t.expected]
    saved = json.loads(args.json.read_text()) if args.json.exists() else {}
    decode = lambda tokens: lm.tokenizer.decode(tokens, skip_special_tokens=True)  # noqa: E731
    table = []
    for task in tasks:
        if task.id not in saved:
            if args.ranks_only:
                continue
            saved[task.id] = signals(lm, task)
            args.json.write_text(json.dumps(saved))
        table.append((task.id, ranks(saved[task.id], decode, task.language)))
    orders = list(table[0][1]) if table else []
    print("| task | " + " | ".join(orders) + " |")
    print("|---" * (len(orders) + 1) + "|")
    for task_id, found in table:
        cells = ("-" if rank is None else str(rank) for rank in found.values())
        print(f"| {task_id} | " + " | ".join(cells) + " |")
    for label, most in (("first", 1), ("top 3", 3)):
        counts = (sum(r is not None and r < most for r in [f[o] for _, f in table]) for o in orders)
        print(f"| fix {label} | " + " | ".join(map(str, counts)) + " |")


if __name__ == "__main__":
    main()
