"""Lazy snippets merged without the model: exact where the snippet is clear, None where not."""

from __future__ import annotations

import pytest

from specedit.bench.tasks import load_tasks
from specedit.editing.snippets import is_marker, merge, unfence

FILE = """import math


def area(r):
    return math.pi * r * r


class Shape:
    sides = 0

    def name(self):
        return "shape"

    @property
    def corners(self):
        return self.sides


def main():
    print(area(2))
"""


def test_a_changed_function_between_markers_replaces_the_function():
    snippet = """# ... existing code ...

def area(r):
    if r < 0:
        raise ValueError("negative radius")
    return math.pi * r * r

# ... existing code ...
"""
    assert merge(FILE, snippet, "python") == FILE.replace(
        "def area(r):\n",
        'def area(r):\n    if r < 0:\n        raise ValueError("negative radius")\n',
    )


def test_without_markers_the_parts_not_shown_stay():
    snippet = "def main():\n    print(area(3))\n"
    assert merge(FILE, snippet, "python") == FILE.replace("area(2)", "area(3)")
    # nor does a marker after the part delete what comes before it
    snippet = "def area(r):\n    return 0\n\n# ... existing code ...\n"
    assert merge(FILE, snippet, "python") == FILE.replace("math.pi * r * r", "0")


def test_a_method_with_its_class_line_keeps_the_other_methods():
    for snippet in (
        "class Shape:\n    # ...\n\n    def name(self):\n        return 'Shape'\n\n    # ...\n",
        "class Shape:\n    def name(self):\n        return 'Shape'\n",  # no marker at all
    ):
        assert merge(FILE, snippet, "python") == FILE.replace('"shape"', "'Shape'")


def test_a_marker_in_a_body_keeps_the_rest_of_the_body():
    snippet = (
        '@property\ndef corners(self):\n    """How many corners."""\n    # ... existing code ...\n'
    )
    wanted = FILE.replace(
        "def corners(self):\n", 'def corners(self):\n        """How many corners."""\n'
    )
    # the decorated method is a unit of the class: shown with its class line it merges
    assert (
        merge(FILE, "class Shape:\n    # ...\n\n    " + snippet.replace("\n", "\n    "), "python")
        == wanted
    )


def test_a_decorator_over_several_lines_is_not_the_parts_key():
    source = "@register(\n    name='a',\n)\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n"
    snippet = (
        "@register(\n    name='a',\n)\ndef a():\n    # the first\n    # ... existing code ...\n"
    )
    assert merge(source, snippet, "python") == source.replace("():\n", "():\n    # the first\n", 1)


def test_a_new_function_goes_where_the_snippet_puts_it():
    after_area = (
        "def area(r):\n    # ... existing code ...\n\n\n"
        "def areas(rs):\n    return [area(r) for r in rs]\n\n# ... rest of the code ...\n"
    )
    merged = merge(FILE, after_area, "python")
    assert merged == FILE.replace(
        "    return math.pi * r * r\n",
        "    return math.pi * r * r\n\n\ndef areas(rs):\n    return [area(r) for r in rs]\n",
    )
    at_end = "# ... existing code ...\n\n\ndef cli():\n    main()\n"
    assert merge(FILE, at_end, "python") == FILE + "\n\ndef cli():\n    main()\n"


def test_a_body_merged_without_its_closing_line_keeps_the_files():
    source = "function b(x) {\n  const y = x * 2;\n  return y;\n}\n"
    snippet = "function b(x) {\n  if (!x) return 0;\n  // ... existing code ...\n"
    assert merge(source, snippet, "javascript") == source.replace(
        "{\n", "{\n  if (!x) return 0;\n", 1
    )


def test_brace_languages_and_their_markers():
    source = (
        "function a() {\n  return 1;\n}\n\nfunction b(x) {\n  const y = x * 2;\n"
        "  return y;\n}\n\nfunction c() {\n  return 3;\n}\n"
    )
    snippet = (
        "// ... existing code ...\n\nfunction b(x) {\n  if (x == null) throw new Error('x');\n"
        "  // ... existing code ...\n}\n\n// ... existing code ...\n"
    )
    assert merge(source, snippet, "javascript") == source.replace(
        "function b(x) {\n", "function b(x) {\n  if (x == null) throw new Error('x');\n"
    )


def test_the_files_line_endings_stay():
    windows = FILE.replace("\n", "\r\n")
    merged = merge(windows, "def main():\n    print(area(3))\n", "python")
    assert merged == windows.replace("area(2)", "area(3)")


def test_a_fenced_snippet_is_read_inside_its_fence():
    fenced = "```python\ndef main():\n    print(area(3))\n```\n"
    assert unfence(fenced) == "def main():\n    print(area(3))"
    assert merge(FILE, fenced, "python") == FILE.replace("area(2)", "area(3)")


@pytest.mark.parametrize(
    "snippet, why",
    [
        ("def name(self):\n    return 'Shape'\n", "a method without its class: another level"),
        ("# ...\n\ndef helper():\n    pass\n\n# ...\n", "a new part between two markers"),
        (
            "# ...\n\ndef area(r):\n    return 0\n\n\ndef main():\n    pass\n",
            "code left out between",
        ),
        ("def main():\n    pass\n\n# ...\n\ndef area(r):\n    return 0\n", "parts out of order"),
        ("x = 1\n", "nothing in common with the file"),
        ("class Shape:\n    def corners(self):\n        return 4\n", "decorator left out"),
        ("# ... existing code ...\n", "only a marker"),
        ("def main():\n    print(area(2)\n", "the result would not parse"),
    ],
)
def test_a_doubtful_snippet_is_left_to_the_model(snippet, why):
    assert merge(FILE, snippet, "python") is None, why


def test_a_line_the_file_has_twice_is_no_anchor():
    source = "if a:\n    x = 1\n\nif a:\n    x = 2\n"
    assert merge(source, "if a:\n    x = 3\n", "python") is None


def test_prose_is_the_models():
    readme = "# Title\n\nOld words.\n\n## Install\n\npip install it\n"
    snippet = "## Install\n\npip install it --user\n\n<!-- ... -->\n"
    for language in ("markdown", "text"):
        assert merge(readme, snippet, language) is None


def test_a_part_that_drops_most_of_what_it_replaces_is_a_doubt():
    """A lazy snippet that shortens a body without a marker may mean 'the rest as before'."""
    source = "def f(x):\n    a = x + 1\n    b = a * 2\n    c = b - 3\n    return c\n"
    assert merge(source, "def f(x):\n    return 0\n", "python") is None
    assert merge(
        source, "def f(x):\n    a = x + 2\n    b = a * 2\n    c = b - 3\n    return c\n", "python"
    ) == source.replace("x + 1", "x + 2")


@pytest.mark.parametrize(
    "line, marker",
    [
        ("# ... existing code ...", True),
        ("    // ... rest of the code ...", True),
        ("<!-- ... -->", True),
        ("# rest of the file unchanged", True),
        ("# compute the area", False),
        ("...", False),  # Python's Ellipsis is code
        ("x = 1  # ...", False),
    ],
)
def test_markers(line, marker):
    assert is_marker(line) is marker


def test_the_shipped_apply_suite_merges_exactly():
    """The suite's snippets are written the way chat models write them (bench/README.md);
    every one of them says where its parts go."""
    tasks = load_tasks(suite="apply")
    assert len(tasks) >= 30
    for task in tasks:
        assert merge(task.input, task.instruction, task.language) == task.expected
