"""Whole-file answers against answers that write less, with plain greedy llama.cpp and no
speculation, on a tasks file of fixes: what writing less than the file would cost in quality
before any of it is built into the edit path (docs/engines.md, "Writing only the change" and
"The function to change, named by the model").

    python tools/changes_probe.py changes ../shared/bench/humanevalfix.jsonl changes.jsonl
    python tools/changes_probe.py functions ../shared/bench/humanevalfix.jsonl functions.jsonl
    python tools/changes_probe.py whole ../shared/bench/humanevalfix.jsonl whole.jsonl

Each task's prompt is the file in a code block, "Fix this file: INSTRUCTION" and the answer's
form; `changes` and `functions` show one worked example as an earlier turn (without it the
1.5B answers with the whole file). A change is applied where its search lines are found in the
file (other indentation and left-out blank lines tolerated); a function (or class) the answer
writes takes the place of the file's definition of the same name; the task passes when its
tests do.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import textwrap
import time
from pathlib import Path

from specedit.bench.tasks import load_tasks
from specedit.editing.checks import run_program
from specedit.editing.region import DEFINITIONS, first_line
from specedit.models.bundled import gguf_file

FENCE = "```"
SYSTEM = {
    "whole": "You are a careful programmer who fixes bugs. You return the whole file with the "
    "fix applied and every other line exactly as it was: same order, same comments, same "
    "formatting.",
    "changes": "You are a careful programmer who fixes bugs. You answer with the lines to change "
    "only, as search/replace blocks: the lines as they are in the file, then the same lines fixed.",
    "functions": "You are a careful programmer who fixes bugs. You answer with the function "
    "you change, written whole with the fix, and nothing else of the file.",
}
FORM = {
    "whole": "Return the complete corrected file in a single code block and nothing else.",
    "changes": "Answer with the change only, in this form and nothing else:\n\n<<<<<<< SEARCH\n"
    "the line or lines of the file to change, exactly as they are\n=======\nthe same lines, "
    "fixed\n>>>>>>> REPLACE",
    "functions": "Answer with the function that needs the fix, whole and fixed, in a single "
    "code block, and nothing else.",
}
EXAMPLE_INPUT = (
    'def area(width, height):\n    """The area of a rectangle."""\n    return width + height\n'
)
EXAMPLE_FUNCTIONS_INPUT = (
    'def area(width, height):\n    """The area of a rectangle."""\n    return width + height\n'
    '\n\ndef perimeter(width, height):\n    """The perimeter of a rectangle."""\n'
    "    return 2 * (width + height)\n"
)
EXAMPLE_FUNCTIONS_ANSWER = (
    '```python\ndef area(width, height):\n    """The area of a rectangle."""\n'
    "    return width * height\n```"
)
EXAMPLE_ANSWER = (
    "<<<<<<< SEARCH\n    return width + height\n=======\n    return width * height\n>>>>>>> REPLACE"
)
# The worked example each answer form is shown first: without one the 1.5B answers with the
# whole file.
EXAMPLES = {
    "changes": (EXAMPLE_INPUT, EXAMPLE_ANSWER),
    "functions": (EXAMPLE_FUNCTIONS_INPUT, EXAMPLE_FUNCTIONS_ANSWER),
}
BLOCK = re.compile(r"<<<<<<< SEARCH\n(.*?)\n?=======\n(.*?)\n?>>>>>>> REPLACE", re.S)
CODE = re.compile(FENCE + r"[a-z]*\n(.*?)" + FENCE, re.S)


def user_turn(mode: str, text: str, instruction: str, language: str) -> str:
    return f"{FENCE}{language}\n{text}{FENCE}\n\nFix this file: {instruction}\n\n{FORM[mode]}"


def messages(mode: str, text: str, instruction: str, language: str) -> list[dict[str, str]]:
    shown = []
    if mode in EXAMPLES:
        example_input, example_answer = EXAMPLES[mode]
        shown = [
            {
                "role": "user",
                "content": user_turn(mode, example_input, "Fix bugs in area.", "python"),
            },
            {"role": "assistant", "content": example_answer},
        ]
    turn = {"role": "user", "content": user_turn(mode, text, instruction, language)}
    return [{"role": "system", "content": SYSTEM[mode]}, *shown, turn]


def _find(lines: list[str], search: str) -> tuple[int, int] | None:
    """The first and last line of `lines` whose non-blank lines are `search`'s, stripped."""
    wanted = [line.strip() for line in search.split("\n") if line.strip()]
    body = [i for i, line in enumerate(lines) if line.strip()]
    for k in range(len(body) - len(wanted) + 1):
        if wanted and [lines[i].strip() for i in body[k : k + len(wanted)]] == wanted:
            return body[k], body[k + len(wanted) - 1]
    return None


def apply_changes(text: str, answer: str) -> tuple[str | None, str]:
    """`text` with the answer's blocks applied, and how it went."""
    blocks = BLOCK.findall(answer)
    if not blocks:
        return None, "no block"
    for search, replace in blocks:
        if search and search in text:
            text = text.replace(search, replace, 1)
            continue
        lines = text.split("\n")
        found = _find(lines, search)
        if found is None:
            return None, "search not found"
        indent = re.match(r"\s*", lines[found[0]]).group(0)
        given = re.match(r"\s*", next(line for line in search.split("\n") if line.strip())).group(0)
        lines[found[0] : found[1] + 1] = [
            indent + line[len(given) :] if line.startswith(given) else line
            for line in replace.split("\n")
        ]
        text = "\n".join(lines)
    return text, "ok"


def splice_functions(text: str, answer: str) -> tuple[str | None, str]:
    """`text` with each function the answer's code block defines put in place of the
    function of the same name (a method's indentation taken from the one it replaces)."""
    match = CODE.search(answer)
    if not match:
        return None, "no block"
    code = textwrap.dedent(match.group(1))
    try:
        tree = ast.parse(code)
        mine = ast.parse(text)
    except SyntaxError:
        return None, "does not parse"
    given = [node for node in tree.body if isinstance(node, DEFINITIONS)]
    if not given:
        return None, "no function"
    answer_lines = code.split("\n")
    lines = text.split("\n")
    spans = []
    for node in given:
        found = [n for n in ast.walk(mine) if isinstance(n, DEFINITIONS) and n.name == node.name]
        if not found:
            return None, f"no {node.name} in the file"
        old = found[0]
        first, new_first = first_line(old), first_line(node)
        indent = re.match(r"\s*", lines[first - 1]).group(0)
        body = [
            (indent + line if line.strip() else line)
            for line in answer_lines[new_first - 1 : node.end_lineno]
        ]
        spans.append((first - 1, old.end_lineno, body))
    for start, end, body in sorted(spans, reverse=True):
        lines[start:end] = body
    return "\n".join(lines), "ok"


def whole_file(text: str, answer: str) -> tuple[str | None, str]:
    match = CODE.search(answer)
    return (match.group(1), "ok") if match else (None, "no block")


ANSWER_READERS = {"changes": apply_changes, "functions": splice_functions}


def main(mode: str, tasks_file: str, out_file: str, model: str = "qwen2.5-coder-1.5b") -> None:
    from llama_cpp import Llama  # the llamacpp extra; the rest of this file needs none

    llm = Llama(str(gguf_file(model)), n_ctx=8192, n_threads=2, n_batch=512, verbose=False)
    tasks = load_tasks(Path(tasks_file))
    passed = 0
    with open(out_file, "w", encoding="utf-8") as out:
        for task in tasks:
            chat = messages(mode, task.input, task.instruction, task.language)
            started = time.perf_counter()
            reply = llm.create_chat_completion(chat, temperature=0.0, max_tokens=1200)
            wall = time.perf_counter() - started
            answer = reply["choices"][0]["message"]["content"]
            output, how = ANSWER_READERS.get(mode, whole_file)(task.input, answer)
            ok = output is not None and run_program(output + "\n" + task.tests).passed
            passed += ok
            row = {
                "id": task.id,
                "mode": mode,
                "passed": ok,
                "how": how,
                "wall": round(wall, 2),
                "new_tokens": reply["usage"]["completion_tokens"],
                "answer": answer,
            }
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(task.id, ok, how, f"{wall:.1f} s", flush=True)
    print(f"passed {passed}/{len(tasks)}")


if __name__ == "__main__":
    main(*sys.argv[1:])
