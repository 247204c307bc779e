"""Names an edit's instruction asks for that its answer never writes (editing/asked.py)."""

from __future__ import annotations

import pytest

from specedit.editing import verdicts
from specedit.editing.asked import asked_for, sentences_naming, warning

INVENTORY = '''class Inventory:
    """Items by SKU."""

    def __init__(self):
        self.items = []

    def add_item(self, item):
        self.items.append(item)
'''
# The refactor made, the new method left out: the model's answer to a request of two parts.
REFACTORED = INVENTORY.replace("self.items = []", "self.items = {}").replace(
    "self.items.append(item)", "self.items[item.sku] = item"
)
COMPLETE = (
    REFACTORED
    + """
    def discontinue(self, sku):
        return self.items.pop(sku)
"""
)


@pytest.mark.parametrize(
    ("instruction", "absent"),
    [
        ("Make `items` a dict and add a `discontinue(sku)` method.", ["discontinue"]),
        ("Make items a dict; also add discontinue(sku) returning the item.", ["discontinue"]),
        ("Add a wrap=False option to Inventory.", ["wrap"]),
        ("Add `Inventory.discontinue` and `count_by(kind)`.", ["discontinue", "count_by"]),
        # prose in parentheses, a library's dotted name, names the input has: none asked for
        ("Make items a dict (keyed by SKU), as `dict.keys()` reads them.", []),
        ("Use `time.monotonic()` in `add_item`.", []),
        # words that say not to write it
        ("Don't use `eval()`, and rather than `sorted()` keep the order.", []),
        # a plural, a flag, a query: not code to write
        ("Handle the key(s) as --dry-run=true does for ?page=2&size=10.", []),
    ],
)
def test_the_new_names_the_instruction_writes_as_code_are_asked_for(instruction, absent):
    assert asked_for(INVENTORY, REFACTORED, instruction) == absent


def test_a_name_the_answer_writes_anywhere_in_its_code_is_not_absent():
    instruction = "Make `items` a dict and add a `discontinue(sku)` method."
    assert asked_for(INVENTORY, COMPLETE, instruction) == []
    mentioned = REFACTORED + "    # discontinue(sku) comes later\n"
    assert asked_for(INVENTORY, mentioned, instruction) == ["discontinue"]  # a comment's
    keyed = "def totals():\n    return {'total': 1, \"status\": 'ok'}\n"
    asked = "Return a dict with a `total` key and a `status` field."
    assert asked_for("x = 1\n", keyed, asked) == []  # a string that is the name alone


def test_an_edit_of_python_that_leaves_out_what_is_asked_for_is_noted_not_refused():
    """The verdict of an edit of Python notes what it left out and stays acceptable (told, the
    model leaves it out again); a fix's instruction describes a symptom (`f(2)` returns 3),
    not new code, and is not read so."""
    instruction = "Make `items` a dict and add a `discontinue(sku)` method."
    edit = verdicts.UNCHANGED_EDIT
    verdict = verdicts.judge(INVENTORY, REFACTORED, instruction, "python", edit)
    assert verdict.acceptable and verdict.absent == ("discontinue",)
    assert "never writes `discontinue`, which" in warning(verdict.absent)
    assert verdicts.judge(INVENTORY, COMPLETE, instruction, "python", edit).absent == ()
    fix = verdicts.judge(INVENTORY, REFACTORED, instruction, "python", verdicts.UNCHANGED_FIX)
    assert fix.absent == ()


def test_the_sentences_that_name_what_was_left_out_make_an_instruction_of_their_own():
    instruction = (
        "Make `items` a dict keyed by SKU. Also add a `discontinue(sku)` method that returns "
        "the item. A `discontinue` of an unknown SKU raises `KeyError`."
    )
    assert sentences_naming(instruction, ("discontinue",)) == (
        "Also add a `discontinue(sku)` method that returns the item. "
        "A `discontinue` of an unknown SKU raises `KeyError`."
    )
    assert sentences_naming(instruction, ("count_by",)) is None  # no sentence names it
    assert sentences_naming("Add `discontinue(sku)`.", ("discontinue",)) is None  # all of it
    going_on = "Refactor it. Add `trim(s)`. It strips both ends. Keep the rest."
    assert sentences_naming(going_on, ("trim",)) == "Add `trim(s)`. It strips both ends."
    abbreviated = "Refactor it. Add a helper, e.g. `trim(s)`, for the ends."
    assert sentences_naming(abbreviated, ("trim",)) == "Add a helper, e.g. `trim(s)`, for the ends."
