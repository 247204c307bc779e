"""tools/spec_probe.py shows the model a function's contract without its body, and puts the
function it writes in place of the file's, as docs/quality.md says it does."""

from __future__ import annotations

from helpers import tool

from specedit.bench.tasks import Task

probe = tool("spec_probe")

FILE = '''import math


def helper(x):
    return x


def area(r):
    import cmath
    """The area of a circle of radius r.
    >>> area(1)
    3.14...
    """
    return math.pi * r


def after():
    pass
'''


def test_the_prompt_holds_the_contract_and_what_comes_before_but_not_the_body():
    prefix = probe.spec_prefix(FILE, "area")
    assert prefix.startswith("import math\n\n\ndef helper(x):")
    assert prefix.endswith('    3.14...\n    """\n')
    assert "math.pi * r" not in prefix and "after" not in prefix
    assert probe.spec_prefix("def f(a):\n    return a\n", "f") == "def f(a):\n"
    assert probe.spec_prefix('def f(a):\n    x = "s"\n    return x\n', "f") == "def f(a):\n"


def test_the_written_function_replaces_the_files_and_brings_its_imports():
    answer = (
        "Here:\n```python\nimport functools\nimport math\n\n"
        "def area(r):\n    return math.pi * r * r\n```\nDone."
    )
    result = probe.assemble(FILE, "area", answer)
    assert result.startswith("import functools\nimport math\n")  # math is there already
    assert "def area(r):\n    return math.pi * r * r\n\n\ndef after():" in result
    assert "cmath" not in result and "def helper(x):" in result


def test_an_answer_without_the_function_or_that_does_not_parse_is_none():
    assert probe.assemble(FILE, "area", "```python\ndef other():\n    pass\n```") is None
    assert probe.assemble(FILE, "area", "```python\ndef area(r)\n```") is None


def test_the_hint_follows_the_instruction_in_the_shipped_fix_prompt():
    task = Task("t", "fix", "Fix bugs in area.", FILE, "python")
    chat = probe.hint_messages(task, "```python\ndef area(r):\n    return 1\n```")
    user = chat[-1]["content"]
    instruction = user.index("Fix this file: Fix bugs in area.")
    hint = user.index("For reference, area as written afresh")
    assert user.index(FILE) < instruction < hint < user.index("def area(r):\n    return 1\n")
    assert chat[0]["role"] == "system" and "fixes bugs" in chat[0]["content"]


def test_lines_changed_counts_the_longer_side_of_each_change():
    assert probe.lines_changed("a\nb\nc\n", "a\nB\nc\n") == 1
    assert probe.lines_changed("a\nb\nc\n", "a\nx\ny\nz\nc\n") == 3
    assert probe.lines_changed("a\n", "a\n") == 0
