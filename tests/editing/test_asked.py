"""Names an edit's instruction asks for that its answer never writes, and raises it never adds
(editing/asked.py)."""

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


CALCULATOR = """def divide(a, b):
    return a / b


def evaluate(token, a, b):
    if token not in "+-/":
        raise ValueError(f"unknown token {token!r}")
    return {"+": a + b, "-": a - b, "/": divide(a, b)}[token]
"""
DIVIDE_BY_ZERO = (
    "Fix the order. Dividing by zero should raise `ValueError` instead of leaking a "
    "ZeroDivisionError."
)


@pytest.mark.parametrize(
    ("answer", "absent"),
    [
        # the file raises ValueError already: a raise is asked for where there was none
        (CALCULATOR, ["raise ValueError"]),
        (
            CALCULATOR.replace(
                "return a / b", 'if not b:\n        raise ValueError("by zero")\n    return a / b'
            ),
            [],
        ),
        # one more in the function that raised it before counts too
        (
            CALCULATOR.replace(
                "    return {",
                '    if token == "/" and not b:\n        raise ValueError("by zero")\n    return {',
            ),
            [],
        ),
        # an answer that does not parse tells nothing
        (CALCULATOR.replace("return a / b", "return a /"), []),
    ],
)
def test_an_exception_asked_to_be_raised_is_left_out_unless_some_function_raises_it_more(
    answer, absent
):
    assert asked_for(CALCULATOR, answer, DIVIDE_BY_ZERO) == absent


@pytest.mark.parametrize(
    ("instruction", "raised"),
    [
        ("Make `divide` raise ValueError on a zero divisor.", ["raise ValueError"]),
        (
            "Add a `check(b)` helper that raises `ZeroDivisionError` for zero.",
            ["check", "raise ZeroDivisionError"],
        ),
        ("Also add `stop()`, raising `SystemExit` when done.", ["stop", "raise SystemExit"]),
        ("Division by zero should throw a `ValueError`.", ["raise ValueError"]),
        # what the input does now, in a bug report: nothing asked for
        ("`divide(1, 0)` raises ZeroDivisionError. Right now it raises TypeError too.", []),
        # a raise that is the condition of something else
        ("Make `evaluate` return None if `divide` raises ZeroDivisionError.", []),
        ("Make `evaluate` retry when `divide` would raise ZeroDivisionError.", []),
        # a raise the file has, quoted to be changed
        ("Replace the `raise ValueError` with a return of None.", []),
        # what stays as it was, and what is not wanted
        ("Rename it. Unknown tokens still raise `ValueError`.", []),
        ("Make `divide` return None instead of raising `ZeroDivisionError`.", []),
        # not an exception's name: a new name asked for, like any other
        ("Make `divide` raise `InsufficientFunds` on a zero divisor.", ["InsufficientFunds"]),
    ],
)
def test_what_counts_as_asked_to_be_raised(instruction, raised):
    assert asked_for(CALCULATOR, CALCULATOR, instruction) == raised


def test_an_exception_left_unraised_is_warned_of_and_its_sentences_asked_for_alone():
    absent = ("discontinue", "raise ValueError")
    assert warning(absent).startswith(
        "the answer never writes `discontinue` and adds no `raise ValueError`, which"
    )
    assert warning(absent[1:]).startswith("the answer adds no `raise ValueError`, which")
    assert sentences_naming(DIVIDE_BY_ZERO, absent[1:]) == (
        "Dividing by zero should raise `ValueError` instead of leaking a ZeroDivisionError."
    )


def test_a_raise_is_counted_in_the_function_that_makes_it_a_bare_one_as_what_it_handles():
    """A method's raise counts for that method (one more in `C.check` than the input's), and a
    bare `raise` in an `except ValueError:` raises `ValueError` again."""
    instruction = "Make `check` raise ValueError for a negative value."
    original = "class C:\n    def check(self, x):\n        return x\n"
    raising = original.replace(
        "return x", "if x < 0:\n            raise ValueError(x)\n        return x"
    )
    assert asked_for(original, original, instruction) == ["raise ValueError"]
    assert asked_for(original, raising, instruction) == []
    elsewhere = original + "\n\ndef other():\n    pass\n"
    moved = raising + "\n\ndef other():\n    raise ValueError\n"
    assert asked_for(moved, elsewhere, instruction) == ["raise ValueError"]
    reraised = original.replace(
        "return x", "try:\n            return int(x)\n        except ValueError:\n            raise"
    )
    assert asked_for(original, reraised, instruction) == []
