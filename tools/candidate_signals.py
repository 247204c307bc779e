"""Which of an edit's candidates is right, and what test-free signal would have picked it.

For each task of the suite's chosen groups (the planted bugs by default), the default edit (the
1.5B on llama.cpp, `adapld`, greedy, the shipped prompt of the task's kind) is made with its
per-token choices, then redrawn from its first branch points (`selection.redraw_starts`)
whether it changed the file or not, as `--test` does after a failed first answer. Each
candidate is checked with the task's tests and recorded with what could choose among them
without tests:

- its answer's log-probability under its prompt (the first answer's own up to the branch,
  the branch token's, the redraw's own after it) and the mean per token;
- the model asked, after the file and the bug's description, whether the candidate's change
  (as a diff) fixes it: p(yes) / (p(yes) + p(no)) at the first answer token. The prompt
  shares the file's tokens with the fix prompt, so a warm cache computes only the question.

Then it counts the tasks each rule would pass: `--samples 2` as it was (a redraw only for an
unchanged first answer), with the second look (an acceptable first answer's redraw delivered
if it is acceptable too, and changes at most so many input lines more than the first), and
the acceptable candidate with the highest of each signal.

    python tools/candidate_signals.py --json candidates.json [--tasks id,id] [--redraws 2]
    python tools/candidate_signals.py --json edits.json --groups feature,insertion --no-judge
    python tools/candidate_signals.py --json candidates.json --report   # the saved runs again
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
from functools import partial
from pathlib import Path

import numpy as np

from specedit.bench.score import check_task
from specedit.bench.tasks import load_tasks
from specedit.editing import prompts, selection
from specedit.editing.editor import EditError, EditRequest
from specedit.editing.local import LocalEditor
from specedit.editing.verdicts import changed_lines
from specedit.engine.arrays import softmax
from specedit.engine.tree import DraftTree
from specedit.models.load import load

QUESTION = (
    "The problem: {instruction}\n\nA proposed fix changes these lines:\n```diff\n{diff}```\n\n"
)
QUESTION += "Does this change fix the problem? Answer yes or no."


def next_token_logits(lm, ids: list[int]) -> np.ndarray:
    """The model's logits for the token after `ids` (a warm cache computes only what is new)."""
    target = lm.model.open_target(len(ids) + 8)
    target.prefill(ids[:-1], False)
    return np.asarray(target.forward(DraftTree(ids[-1]), len(ids) - 1, False).logits[0])


def token_log_probability(lm, prompt_ids: list[int], answer: list[int]) -> float:
    """log p(answer[-1] | prompt, answer[:-1])."""
    logits = next_token_logits(lm, prompt_ids + answer[:-1])
    return float(np.log(softmax(logits.astype(np.float64))[answer[-1]]))


def p_yes(lm, task, original: str, text: str) -> float | None:
    """The model's p(yes) over yes and no, asked whether `text`'s change fixes the task's bug."""
    diff = "".join(
        difflib.unified_diff(
            original.splitlines(True), text.splitlines(True), "before", "after", n=1
        )
    )
    if not diff:
        return None
    template = prompts.load_template("fix")
    fence = prompts.fence_for(original)
    body = prompts.with_final_newline(original)
    user = f"{fence}{task.language}\n{body}{fence}\n\n" + QUESTION.format(
        instruction=task.instruction.strip(), diff=diff
    )
    messages = [{"role": "system", "content": template.system}, {"role": "user", "content": user}]
    rendered = lm.tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, tokenize=False
    )
    ids = lm.tokenizer(rendered, add_special_tokens=False)["input_ids"]
    chances = softmax(next_token_logits(lm, ids).astype(np.float64))

    def chance(*words: str) -> float:
        found = {lm.tokenizer.encode(w, add_special_tokens=False)[0] for w in words}
        return float(sum(chances[t] for t in found))

    yes, no = chance("yes", "Yes", " yes", " Yes"), chance("no", "No", " no", " No")
    return yes / (yes + no) if yes + no else None


def candidates(lm, editor: LocalEditor, task, redraws: int, judge: bool = True) -> list[dict]:
    request = EditRequest(
        task.input, task.instruction, prompt=task.kind, language=task.language
    ).steered(choices=True)
    lm.model.start_cold()
    results = [editor.edit(request)]
    first = results[0].generation
    starts = selection.redraw_starts(results[0], request, editor.decode, redraws)
    for start in starts:
        try:
            results.append(editor.edit(request.steered(forced=start)))
        except EditError as exc:
            results.append(exc)
    prompt_ids = results[0].prompt.ids
    found = []
    for number, result in enumerate(results):
        start = starts[number - 1] if number else ()
        if isinstance(result, EditError):
            found.append({"branch": len(start) - 1, "error": str(result)})
            continue
        generation = result.generation
        logs = [math.log(max(p, 1e-30)) for p in generation.probabilities]
        if start:  # the first answer's own up to the branch, the branch token's, then its own
            branch = len(start) - 1
            logs[:branch] = [math.log(max(p, 1e-30)) for p in first.probabilities[:branch]]
            logs[branch] = token_log_probability(lm, prompt_ids, list(start))
        check = check_task(task, result.text)
        unchanged = selection.unchanged_problem(task.kind, task.language)
        verdict = selection.judge(
            task.input, result.text, task.instruction, task.language, unchanged
        )
        found.append(
            {
                "branch": len(start) - 1 if start else None,
                "text": result.text,
                "passed": bool(check and check.passed),
                "problem": verdict.problem,
                "log_probability": sum(logs),
                "mean_log_probability": sum(logs) / max(len(logs), 1),
                "tokens": len(logs),
            }
        )
    for entry in found:
        if "text" in entry:
            entry["p_yes"] = p_yes(lm, task, task.input, entry["text"]) if judge else None
    return found


def _acceptable(candidate: dict | None) -> bool:
    return candidate is not None and "text" in candidate and candidate["problem"] is None


def shipped(found: list[dict], original: str) -> dict | None:
    """`--samples 2` before the second look: the first answer if acceptable, its branch redraw
    if the first was unchanged (an unsafe first answer's sampled redraw is not recorded)."""
    first, redraw = found[0], found[1] if len(found) > 1 else None
    if _acceptable(first):
        return first
    unchanged = first.get("problem") in selection.UNCHANGED
    return redraw if unchanged and _acceptable(redraw) else None


def second_look(found: list[dict], original: str, extra: int | None = None) -> dict | None:
    """`--samples 2` with the second look, the redraw whole (before a fix's redraw was kept to
    its first change): an acceptable first answer's branch redraw is delivered if it is
    acceptable too and changes at most `extra` input lines more (no limit: None)."""
    first, redraw = found[0], found[1] if len(found) > 1 else None
    # an unchanged redraw is never delivered (a fix's is refused; an edit's may be acceptable)
    if _acceptable(first) and _acceptable(redraw) and redraw["text"] != original:
        more = len(changed_lines(original, redraw["text"])) - len(
            changed_lines(original, first["text"])
        )
        if extra is None or more <= extra:
            return redraw
    return shipped(found, original)


def best_by(key: str):
    """The acceptable candidate with the highest `key`."""
    return lambda found, original: max(
        filter(_acceptable, found), key=lambda c: c[key] or 0.0, default=None
    )


RULES = {
    "--samples 2 before": shipped,
    "--samples 2, second look": second_look,
    **{
        f"--samples 2, second look up to {n} lines more": partial(second_look, extra=n)
        for n in (0, 1, selection.LOOK_EXTRA_LINES, 4)
    },
    "highest log p": best_by("log_probability"),
    "highest mean log p": best_by("mean_log_probability"),
    "highest p(yes)": best_by("p_yes"),
}


def report(saved: dict) -> None:
    """Per task, each candidate's outcome; then bugs passed under each choosing rule."""
    print("| task | candidates (branch: passed, problem, log p, mean log p, p(yes)) |")
    print("|---|---|")
    for task_id, found in saved.items():
        cells = []
        for c in found:
            if "error" in c:
                cells.append(f"{c['branch']}: error")
                continue
            yes = "-" if c["p_yes"] is None else f"{c['p_yes']:.2f}"
            cells.append(
                f"{c['branch']}: {'PASS' if c['passed'] else 'fail'}"
                f"{'' if c['problem'] is None else ' (' + c['problem'][:20] + ')'}"
                f" {c['log_probability']:.1f} {c['mean_log_probability']:.4f} {yes}"
            )
        print(f"| {task_id} | " + "; ".join(cells) + " |")
    print()
    inputs = {task.id: task.input for task in load_tasks(ids=list(saved))}
    for name, rule in RULES.items():
        passed = sum(
            bool((chosen := rule(found, inputs[task_id])) and chosen["passed"])
            for task_id, found in saved.items()
        )
        print(f"{name}: {passed}/{len(saved)}")
    oracle = sum(any(c.get("passed") for c in found) for found in saved.values())
    print(f"any candidate passes: {oracle}/{len(saved)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--tasks", default="")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--redraws", type=int, default=2)
    parser.add_argument("--groups", default="bug", help="the task groups recorded")
    parser.add_argument("--no-judge", action="store_true", help="leave p(yes) out (faster)")
    parser.add_argument("--report", action="store_true", help="report the saved candidates")
    args = parser.parse_args()
    saved = json.loads(args.json.read_text()) if args.json.exists() else {}
    if not args.report:
        lm = load(args.model, engine="llama.cpp")
        lm.model.store = None  # every task starts cold, as the bench's do
        editor = LocalEditor(lm)
        tasks = load_tasks(ids=args.tasks.split(",") if args.tasks else None)
        groups = args.groups.split(",")
        for task in [t for t in tasks if t.group in groups and t.id not in saved]:
            saved[task.id] = candidates(lm, editor, task, args.redraws, not args.no_judge)
            args.json.write_text(json.dumps(saved))
            print(task.id, [(c.get("passed"), c.get("problem")) for c in saved[task.id]])
    report(saved)


if __name__ == "__main__":
    main()
