"""tools/changes_probe.py applies a search/replace answer as docs/engines.md says it does."""

from __future__ import annotations

import pytest
from helpers import tool

probe = tool("changes_probe")

FILE = "def f(a):\n    x = a + 1\n\n    return x\n"


def block(search: str, replace: str) -> str:
    return f"<<<<<<< SEARCH\n{search}\n=======\n{replace}\n>>>>>>> REPLACE"


@pytest.mark.parametrize(
    "answer,result,how",
    [
        (block("    x = a + 1", "    x = a - 1"), FILE.replace("a + 1", "a - 1"), "ok"),
        # other indentation, and the blank line between left out (the block replaces it too)
        (
            block("x = a + 1\nreturn x", "x = a - 1\nreturn x"),
            "def f(a):\n    x = a - 1\n    return x\n",
            "ok",
        ),
        (block("    y = 2", "    y = 3"), None, "search not found"),
        ("```python\ndef f(a):\n```", None, "no block"),
    ],
)
def test_a_change_applies_where_its_search_lines_are_in_the_file(answer, result, how):
    assert probe.apply_changes(FILE, answer) == (result, how)


def test_the_changes_prompt_shows_its_worked_example_first():
    chat = probe.messages("changes", FILE, "Fix bugs in f.", "python")
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "user"]
    assert chat[2]["content"] == probe.EXAMPLE_ANSWER
    assert probe.messages("whole", FILE, "Fix bugs in f.", "python")[1]["content"].startswith(
        "```python\ndef f(a):"
    )
