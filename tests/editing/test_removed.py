"""A definition of the input that an edit's answer removed where its instruction leaves it
alone."""

from __future__ import annotations

import pytest

from specedit.editing import removed, verdicts

CACHE = '''\
class Cache:
    def __init__(self):
        self._data = {}

    def get(self, key):
        return self._data.get(key)

    def keys(self):
        """Keys in insertion order."""
        return list(self._data)


def helper(value):
    return value
'''

# "add stats()" answered by writing stats() over keys()
OVERWRITTEN = CACHE.replace(
    '    def keys(self):\n        """Keys in insertion order."""\n        return list(self._data)',
    "    def stats(self):\n        return {'size': len(self._data)}",
)
ADDED = CACHE.replace(
    "\n\ndef helper",
    "\n    def stats(self):\n        return {'size': len(self._data)}\n\n\ndef helper",
)
MOVED = OVERWRITTEN.replace("def helper(value):\n    return value\n", "") + (
    "\n\nclass Keys:\n    def keys(self):\n        return []\n\n    def helper(self, value):\n"
    "        return value\n"
)
ADD_STATS = "Add a method `stats()` to `Cache` that returns a dict with the keys 'size'."
DROPPED_HELPER = CACHE.replace("def helper(value):\n    return value\n", "")


@pytest.mark.parametrize(
    ("answer", "instruction", "gone"),
    [
        (OVERWRITTEN, ADD_STATS, ["Cache.keys"]),  # "the keys" is a word, not `keys`
        (ADDED, ADD_STATS, []),
        (MOVED, ADD_STATS, []),  # defined elsewhere, at any depth: still there
        (OVERWRITTEN, "Replace `keys` with a method `stats()`.", []),  # named
        (OVERWRITTEN, "Add stats() and drop keys().", []),  # asks to remove
        (OVERWRITTEN, "Rename keys to stats and make it count the entries.", []),
        (OVERWRITTEN, "Use Cache.keys less and add stats.", []),  # named as an attribute
        (DROPPED_HELPER, ADD_STATS, ["helper"]),
        (DROPPED_HELPER, "Inline `helper`.", []),
        # a code-like name in the instruction names another definition, not this one
        (DROPPED_HELPER, "Use my_helper.", ["helper"]),
        ("class Cache(:\n", ADD_STATS, []),  # an answer that does not parse: the syntax check's
        # what the instruction's code says is no request: a new `merge_sort`, a uniform draw
        (OVERWRITTEN, "Add `stats()` and a `merge_sort(items)` function.", ["Cache.keys"]),
        (OVERWRITTEN, "Add stats() drawing from a uniform sample.", ["Cache.keys"]),
        (OVERWRITTEN, "Add a `delete(key)` method; and stats().", ["Cache.keys"]),
        # a removal word in the prose may ask to remove a definition: left alone
        (OVERWRITTEN, "Add a `discard(key)` that removes key; and stats().", []),
        # a name bound otherwise is still there: an assignment, an attribute, an import
        (DROPPED_HELPER + "helper = lambda value: value\n", ADD_STATS, []),
        (DROPPED_HELPER + "from ops import helper\n", ADD_STATS, []),
        (
            OVERWRITTEN.replace("self._data = {}", "self._data = {}\n        self.keys = []"),
            ADD_STATS,
            [],
        ),
    ],
)
def test_a_definition_the_answer_no_longer_has(answer, instruction, gone):
    assert removed.removed_definitions(CACHE, answer, instruction) == gone


POINT = """\
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return (self.x, self.y) == (other.x, other.y)

    def get_x(self):
        return self.x

    def norm(self):
        return (self.x**2 + self.y**2) ** 0.5
"""
DATACLASS = """\
@dataclass
class Point:
    x: float
    y: float

    def get_x(self):
        return self.x

    def norm(self):
        return (self.x**2 + self.y**2) ** 0.5
"""


@pytest.mark.parametrize(
    ("answer", "instruction", "gone"),
    [
        # special methods a decorator or a base class may write are not counted
        (DATACLASS, "Make the class store its fields with less code.", []),
        (
            DATACLASS.replace("    def get_x(self):\n        return self.x\n\n", ""),
            "Tidy it.",
            ["Point.get_x"],
        ),
        (
            DATACLASS.replace("    def get_x(self):\n        return self.x\n\n", ""),
            "Use a property for x.",
            [],
        ),
        (
            DATACLASS.replace("    def norm", "    def length").replace(
                "    def get_x", "    def gx"
            ),
            "Split norm into two steps.",
            [],
        ),
    ],
)
def test_reshaping_a_class(answer, instruction, gone):
    assert removed.removed_definitions(POINT, answer, instruction) == gone


def test_each_definition_is_named_once():
    overloads = "def f(x):\n    pass\n\n\ndef f(x, y):\n    pass\n\n\ndef g():\n    pass\n"
    assert removed.removed_definitions(overloads, "def g():\n    pass\n", "Tidy it.") == ["f"]


def test_a_code_like_name_counts_as_named_anywhere_in_the_instruction():
    assert removed.mentions("Merge nothing; stats go in _data_helper.", "_data_helper")
    assert removed.mentions("make getKeys faster", "getKeys")
    assert not removed.mentions("count the tokens at once", "tokens")
    assert removed.mentions("count the `tokens()` at once", "tokens")
    assert removed.mentions("call tokens() less", "tokens")


def test_judged_wrong_only_for_an_edit_of_python():
    edit = verdicts.unchanged_problem("edit", "python")
    judged = verdicts.judge(CACHE, OVERWRITTEN, ADD_STATS, "python", edit)
    assert judged.problem == "it removes `Cache.keys`, which the instruction does not ask to remove"
    assert judged.removed == ("Cache.keys",)
    assert verdicts.judge(CACHE, ADDED, ADD_STATS, "python", edit).acceptable
    # a fix's and a rewrite's answers are not judged so
    for mode in ("fix", "rewrite"):
        unchanged = verdicts.unchanged_problem(mode, "python")
        assert verdicts.judge(CACHE, OVERWRITTEN, ADD_STATS, "python", unchanged).acceptable
