"""How often the model writes a fix task's function right from its signature and docstring
alone, without the buggy body, and how a fix goes when that fresh version is shown to it: how
much the body the model is asked to fix costs it (docs/quality.md, "Written from its docstring
alone"). Plain greedy llama.cpp, no speculation.

    python tools/spec_probe.py spec hef4.jsonl spec.jsonl
    python tools/spec_probe.py hint hef4.jsonl hint.jsonl spec.jsonl

`spec`: the file up to the end of the function's docstring (the instruction names the function:
"Fix bugs in NAME."), the body left out, in the words EvalPlus sends an instruct model; the
answer's function replaces the file's. `hint`: the shipped fix prompt, the `spec` run's answer
shown after the instruction as a reference. A task passes as the bench's do (`check_task`:
the safety checks let the answer be written, and its tests pass); each row also says whether
the tests alone pass, as a generation benchmark counts.
"""

from __future__ import annotations

import ast
import difflib
import json
import re
import sys
import time
from pathlib import Path

from specedit.bench.score import check_task
from specedit.bench.tasks import Task, load_tasks
from specedit.editing import prompts
from specedit.editing.checks import run_program
from specedit.models.bundled import gguf_file

FENCE = "```"
CODE = re.compile(FENCE + r"[a-z]*\n(.*?)" + FENCE, re.S)
SPEC_ASK = (
    "Please provide a self-contained Python script that solves the following problem in a "
    "markdown code block:\n{fence}\n{prefix}{fence}\n"
)
HINT = (
    "For reference, {name} as written afresh from its signature and docstring alone, without "
    "the body above (it may be wrong too):\n\n{fence}python\n{code}{fence}"
)


def named(instruction: str) -> str:
    """The function a HumanEvalFix instruction names: "Fix bugs in NAME."."""
    return instruction.split()[-1].rstrip(".")


def function(tree: ast.Module, name: str) -> ast.FunctionDef | None:
    return next(
        (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name),
        None,
    )


def spec_prefix(source: str, name: str) -> str:
    """`source` up to the end of function `name`'s docstring (its def line where it has none):
    what comes before the function and its contract, without its body."""
    target = function(ast.parse(source), name)
    end = target.body[0].lineno - 1
    for statement in target.body[:2]:  # a statement may come before the docstring
        value = statement.value if isinstance(statement, ast.Expr) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            end = statement.end_lineno
            break
    return "\n".join(source.split("\n")[:end]) + "\n"


def code_block(answer: str) -> str | None:
    """The answer's first code block; None where it has none."""
    match = CODE.search(answer)
    return match.group(1) if match else None


def assemble(source: str, name: str, answer: str) -> str | None:
    """`source` with function `name` replaced by the answer's, and the answer's imports that
    `source` lacks put first; None where the answer has no such function or does not parse."""
    code = code_block(answer) or answer
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    written = function(tree, name)
    if written is None:
        return None
    start = (written.decorator_list[0] if written.decorator_list else written).lineno
    new = code.split("\n")[start - 1 : written.end_lineno]
    old, lines = function(ast.parse(source), name), source.split("\n")
    result = "\n".join(lines[: old.lineno - 1] + new + lines[old.end_lineno :])
    imports = [
        ast.get_source_segment(code, node)
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    missing = [line for line in imports if line not in source]
    return "\n".join(missing) + "\n" + result if missing else result


def spec_messages(task: Task) -> list[dict[str, str]]:
    prefix = spec_prefix(task.input, named(task.instruction))
    return [{"role": "user", "content": SPEC_ASK.format(fence=FENCE, prefix=prefix)}]


def hint_messages(task: Task, reference: str) -> list[dict[str, str]]:
    """The shipped fix prompt with `reference` after the instruction, where an edit's feedback
    goes."""
    body = prompts.with_final_newline(task.input)
    fence = prompts.fence_for(body)
    code = code_block(reference) or reference
    hint = HINT.format(name=named(task.instruction), fence=fence, code=code)
    instruction = f"{task.instruction}\n\n{hint}"
    template = prompts.load_template("fix")
    return prompts.chat_messages(template, body, instruction, task.language, fence)


def lines_changed(before: str, after: str) -> int:
    """Lines replaced, inserted or deleted, the longer side of each change counted."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines())
    return sum(
        max(last - first, end - start)
        for tag, first, last, start, end in matcher.get_opcodes()
        if tag != "equal"
    )


def main(mode: str, tasks_file: str, out_file: str, spec_file: str = "") -> None:
    from llama_cpp import Llama  # the llamacpp extra; the rest of this file needs none

    references = {}
    if mode == "hint":
        with open(spec_file, encoding="utf-8") as rows:
            references = {row["id"]: row["answer"] for row in map(json.loads, rows)}
    llm = Llama(
        str(gguf_file("qwen2.5-coder-1.5b")), n_ctx=4096, n_threads=2, n_batch=512, verbose=False
    )
    tasks = load_tasks(Path(tasks_file))
    passed = tested = 0
    with open(out_file, "w", encoding="utf-8") as out:
        for task in tasks:
            if mode == "spec":
                chat = spec_messages(task)
            else:
                chat = hint_messages(task, references[task.id])
            started = time.perf_counter()
            reply = llm.create_chat_completion(chat, temperature=0.0, max_tokens=1000)
            wall = time.perf_counter() - started
            answer = reply["choices"][0]["message"]["content"]
            if mode == "spec":
                output = assemble(task.input, named(task.instruction), answer)
            else:
                output = code_block(answer)
            check = check_task(task, output)
            ok = check.passed
            # check_task runs the tests unless the safety checks refuse the answer (the bench
            # reads a refusal from its report the same way): only then are they run alone
            refused = check.output.startswith("refused: ")
            tests_pass = ok or (refused and run_program(output + "\n" + task.tests).passed)
            passed, tested = passed + ok, tested + tests_pass
            row = {
                "id": task.id,
                "mode": mode,
                "passed": ok,
                # the tests alone, as a generation benchmark counts: a rewrite the safety
                # checks refuse (lines dropped) may pass them
                "tests_pass": tests_pass,
                "lines_changed": lines_changed(task.input, output or task.input),
                "wall": round(wall, 2),
                "new_tokens": reply["usage"]["completion_tokens"],
                "answer": answer,
            }
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(task.id, ok, f"{wall:.1f} s", flush=True)
    print(f"passed {passed}/{len(tasks)}, the tests alone {tested}/{len(tasks)}")


if __name__ == "__main__":
    main(*sys.argv[1:])
