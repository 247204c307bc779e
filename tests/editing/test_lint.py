"""What an answer writes that cannot run (editing/lint.py): names nothing defines, calls and
attributes that do not match their definition; and what a candidate with one gets: refused,
and redrawn from the line that writes it (editing/selection.py)."""

from __future__ import annotations

import pytest

from specedit.editing import lint, selection, verdicts
from specedit.editing.editor import EditRequest, EditResult
from specedit.editing.prompts import EditPrompt
from specedit.engine.events import Generation, Stats

SOURCE = (
    "import os\n"
    "from typing import List\n"
    "\n"
    "\n"
    "def names(folder: str) -> List[str]:\n"
    "    found = os.listdir(folder)\n"
    "    return sorted(found)\n"
)


def _new(edited: str, original: str = SOURCE) -> list[tuple[str, int]]:
    return [(f.name, f.line) for f in lint.new_findings(original, edited)]


def test_what_an_answer_brings_in_is_found_with_its_line():
    helper = SOURCE.replace("sorted(found)", "_natural(sorted(found))")
    assert _new(helper) == [("_natural", 7)]
    no_import = SOURCE.replace("List[str]", "Dict[str, int]")
    assert _new(no_import) == [("Dict", 5)]
    import_dropped = SOURCE.replace("import os\n", "")
    assert _new(import_dropped) == [("os", 5)]
    renamed_once = SOURCE.replace("found = os", "entries = os")
    assert _new(renamed_once) == [("found", 7)]
    assert _new(SOURCE.replace("sorted(found)", "sorted(found, reverse=True)")) == []


def test_the_input_s_own_undefined_names_and_unparsable_text_are_set_aside():
    injected = SOURCE.replace("sorted(found)", "sorted(found, key=_)")  # gettext's _ say
    assert _new(injected.replace("reverse", "x"), original=injected) == []
    twice = injected.replace("found = os", "found = _ and os")
    assert _new(twice, original=injected) == []  # wherever it is used
    assert lint.findings("def f(:\n") == []
    assert lint.findings("\ufeffx = y\n")[0].name == "y"


CLASS = (
    "class Counter:\n"
    "    def __init__(self, start):\n"
    "        self.count = start\n"
    "\n"
    "    def bump(self, step):\n"
    "        self.count += step\n"
    "        return self.count\n"
    "\n"
    "\n"
    "def twice(start):\n"
    "    counter = Counter(start)\n"
    "    counter.bump(1)\n"
    "    return counter.bump(1)\n"
    "\n"
    "\n"
    "print(twice(0))\n"
)


def _inferred(edited: str, original: str = CLASS) -> list[tuple[str, str, int]]:
    return [(f.kind, f.name, f.line) for f in lint.new_findings(original, edited)]


def test_calls_and_attributes_that_no_longer_match_their_definition_are_found():
    """pylint's inference, where pyflakes sees nothing: a parameter the callers do not pass, a
    call with one argument too many or a keyword nobody takes, an attribute or a method renamed
    in one place only."""
    new_parameter = CLASS.replace("def bump(self, step):", "def bump(self, step, times):")
    assert _inferred(new_parameter) == [
        ("call", "counter.bump(1)", 12),
        ("call", "counter.bump(1)", 13),
    ]
    assert _inferred(CLASS.replace("return counter.bump(1)", "return counter.bump(1, 2)")) == [
        ("call", "counter.bump(1, 2)", 13)
    ]
    keyword = CLASS.replace("return counter.bump(1)", "return counter.bump(size=1)")
    assert [kind for kind, _, _ in _inferred(keyword)] == ["call", "call"]  # size, and no step
    assert _inferred(CLASS.replace("return self.count", "return self.total")) == [
        ("member", "self.total", 7)
    ]
    assert _inferred(CLASS.replace("def bump(", "def increment(")) == [
        ("member", "counter.bump", 12),
        ("member", "counter.bump", 13),
    ]
    assert _inferred(CLASS.replace("bump(1)", "bump(step=1)")) == []
    accented = CLASS.replace("    return counter.bump(1)", "    café = counter.bump(1, 2)")
    assert _inferred(accented) == [("call", "counter.bump(1, 2)", 13)]


def test_the_input_s_own_call_and_attribute_findings_are_set_aside():
    """An attribute set where inference cannot see (a framework's, `setattr`) is the input's
    own business on every line that uses it; an answer that uses it once more brings in nothing
    new, one that breaks another call does."""
    dynamic = CLASS.replace("return self.count", "return self.label")
    assert _inferred(dynamic.replace("(1)", "(2)"), original=dynamic) == []
    broken = dynamic.replace("return counter.bump(1)", "return counter.bump()")
    assert _inferred(broken, original=dynamic) == [("call", "counter.bump()", 13)]


MODULE = (
    "import fractions\n"
    "\n"
    "\n"
    "def ratio(a, b):\n"
    "    return fractions.Fraction(a, b)\n"
    "\n"
    "\n"
    "def half(a):\n"
    '    """Half of a."""\n'
    "    return a / 2\n"
    "\n"
    "\n"
    "def third(a): return ratio(a, 3)\n"
    "\n"
    "\n"
    "def quarter(a):\n"
    "    return ratio(a, 4)\n"
)


def test_functions_that_cannot_bring_in_a_finding_are_read_without_their_bodies():
    """Where an answer changed function bodies alone, pylint reads it without the bodies
    nothing changed can be inferred through (inferring them builds every module the file
    imports); each line keeps its number."""
    fixed = MODULE.replace("return a / 2", "return a * 0.5")
    read = lint.set_aside(MODULE, fixed)
    assert "fractions.Fraction" not in read and "return a * 0.5" in read
    assert "return ratio(a, 3)" in read  # a one-line body stays
    assert len(read.splitlines()) == len(fixed.splitlines())
    assert read.splitlines()[4] == "    raise NotImplementedError"
    # a function the changed body calls is read whole: what it returns is inferred from it
    calls = MODULE.replace("return a / 2", "return ratio(a, 2).numeratorr")
    assert "fractions.Fraction" in lint.set_aside(MODULE, calls)
    assert _inferred(calls, MODULE) == [("member", "ratio(a, 2).numeratorr", 10)]
    # so is a function that calls a changed one: it may use what that now returns
    returns = MODULE.replace("return fractions.Fraction(a, b)", "return None")
    read = lint.set_aside(MODULE, returns)
    assert "return ratio(a, 4)" in read and "return a / 2" not in read
    # a call the changed body gets wrong still meets the signature it calls
    assert _inferred(MODULE.replace("a / 2", "ratio(a)"), MODULE) == [("call", "ratio(a)", 10)]


def test_top_level_statements_nothing_changed_reaches_are_left_out():
    """A class or a statement the changed bodies do not reach is read as blank lines (a
    module-level call would build the module it calls into); one that shares a line with
    another, and a `from __future__` import, stay."""
    original = (
        "from __future__ import annotations\n"
        "import collections\n"
        "\n"
        "Pair = collections.namedtuple('Pair', 'a b')\n"
        "\n"
        "\n"
        "@dataclass\n"
        "class Unused:\n"
        "    size: int = 1\n"
        "LIMIT = 3; TOP = Pair(1, 2)\n"
        "\n"
        "\n"
        "def half(a):\n"
        "    return a / 2\n"
    )
    fixed = original.replace("a / 2", "a * 0.5")
    read = lint.set_aside(original, fixed)
    assert len(read.splitlines()) == len(fixed.splitlines())
    assert "__future__" in read and "return a * 0.5" in read
    assert "class Unused" not in read and "@dataclass" not in read
    assert "LIMIT = 3; TOP = Pair(1, 2)" in read and "namedtuple" in read  # TOP reads Pair
    assert "collections" in read


@pytest.mark.parametrize(
    "edited",
    [
        MODULE.replace("def ratio(a, b):", "def ratio(a, b, c):"),  # its callers may not pass c
        MODULE.replace("import fractions", "import fractions as f"),
        MODULE.replace("def half(a):", "@staticmethod\ndef half(a):"),
        MODULE + "x = half(1)\n",
        MODULE.replace("def half", "async def half"),
    ],
)
def test_every_line_is_read_where_more_than_function_bodies_changed(edited):
    assert lint.set_aside(MODULE, edited) == edited


def test_a_changed_signature_is_read_at_its_callers():
    """The callers' lines are the unchanged functions' bodies: they are read in full."""
    new_parameter = MODULE.replace("def ratio(a, b):", "def ratio(a, b, c):")
    assert [f.line for f in lint.new_findings(MODULE, new_parameter)] == [13, 17]


SHARED = (
    "import collections\n\n\nclass Box:\n    pass\n\n\n"
    "Pair = collections.namedtuple('Pair', 'a b')\nPair(1, 2); Box.label = 'x'\n\n\n"
)
HELPER = "def helper():\n    return [1]\n\n\n"
CONFIG = "class Config:\n    pass\n\n\ndef register():\n    Config.debug = True\n\n\n"
OWN = "class Box:\n    pass\n\n\ndef report():\n    return Box().label\n\n\n"


@pytest.mark.parametrize(
    "original, edited",
    [
        # what the changed function uses through a class's method, or a module's statement
        (
            "class C:\n    def m(self):\n        return helper()\n\n\n"
            + HELPER
            + "def changed():\n    return C().m().count(1)\n",
            "class C:\n    def m(self):\n        return helper()\n\n\n"
            + HELPER
            + "def changed():\n    return C().m().cnt(1)\n",
        ),
        (
            HELPER + "X = helper()\n\n\ndef changed():\n    return X.count(1)\n",
            HELPER + "X = helper()\n\n\ndef changed():\n    return X.cnt(1)\n",
        ),
        # a caller of a caller of the changed function: what it returns changed for both
        (
            "def a():\n    return [1]\n\n\ndef b():\n    return a()\n\n\n"
            "def c():\n    return b().append(2)\n",
            "def a():\n    return 1\n\n\ndef b():\n    return a()\n\n\n"
            "def c():\n    return b().append(2)\n",
        ),
        # an attribute a left-alone function assigns, read by the changed one
        (
            CONFIG + "def show():\n    return 1\n",
            CONFIG + "def show():\n    return Config.debug\n",
        ),
        # the input's own finding, in a function the answer left alone
        (OWN + "def show():\n    return 1\n", OWN + "def show():\n    return Box().label\n"),
        # a comprehension's own variable does not hide the module's name from the function
        (
            HELPER + "def changed():\n    return [helper for helper in (1,)], helper().count(1)\n",
            HELPER + "def changed():\n    return [helper for helper in (1,)], helper().cnt(1)\n",
        ),
        # an attribute a module statement assigns from a function, or from a changed one
        (
            "class Config:\n    pass\n\n\n" + HELPER + "Config.debug = helper()\n\n\n"
            "def changed():\n    return Config.debug.count(1)\n",
            "class Config:\n    pass\n\n\n" + HELPER + "Config.debug = helper()\n\n\n"
            "def changed():\n    return Config.debug.cnt(1)\n",
        ),
        (
            "X = 0\n\n\ndef changed():\n    global X\n    X = [1]\n\n\n"
            "def user():\n    return X.append(2)\n",
            "X = 0\n\n\ndef changed():\n    global X\n    X = 2\n\n\n"
            "def user():\n    return X.append(2)\n",
        ),
        # a pattern's capture binds a module name
        (
            HELPER + "match helper():\n    case y:\n        pass\n\n\n"
            "def changed():\n    return y.count(1)\n",
            HELPER + "match helper():\n    case y:\n        pass\n\n\n"
            "def changed():\n    return y.cnt(1)\n",
        ),
        # statements the changed function does not reach are left out, not one on a line
        # shared with one it reaches
        (
            SHARED + "def show():\n    return 1\n",
            SHARED + "def show():\n    return Box().label\n",
        ),
        # a body set aside that opens with a decorated function, or holds a line separator
        (
            "import functools\n\n\ndef deco(f):\n    @functools.wraps(f)\n"
            "    def wrapper(*a):\n        return f(*a)\n    return wrapper\n\n\n"
            + OWN.replace("def report", "def show")
            + "def unrelated():\n    return 1\n",
            "import functools\n\n\ndef deco(f):\n    @functools.wraps(f)\n"
            "    def wrapper(*a):\n        return f(*a)\n    return wrapper\n\n\n"
            + OWN.replace("def report", "def show")
            + "def unrelated():\n    return Box().size\n",
        ),
        (
            OWN.replace("return Box().label", "s = 'a\u2028b'\n    return s")
            + "def show():\n    return Box().label\n",
            OWN.replace("return Box().label", "s = 'a\u2028b'\n    return s")
            + "def show():\n    return Box().label or 1\n",
        ),
    ],
    ids=[
        "through a class",
        "through a statement",
        "a caller's caller",
        "assigned",
        "own",
        "comprehension",
        "a statement assigns",
        "a changed global",
        "a capture",
        "a shared line",
        "decorated",
        "line separator",
    ],
)
def test_what_the_bodies_set_aside_would_find_is_found_without_them(original, edited):
    """The findings are those of reading the whole answer, whatever is set aside."""

    def keys(found: list[lint.Finding]) -> list[tuple[str, str, int]]:
        return [(f.kind, f.name, f.line) for f in found]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lint, "set_aside", lambda original, edited: edited)
        whole = keys(lint.new_findings(original, edited))
    lint._keys.cache_clear()
    assert keys(lint.new_findings(original, edited)) == whole


SIGN = "def sign(x):\n    if x > 0:\n        s = 1\n    else:\n        s = -1\n    return s\n"


def test_a_variable_read_where_no_assignment_may_have_run_is_found():
    """A branch that assigned it dropped: an UnboundLocalError for some inputs (a read moved
    above every assignment is pyflakes' undefined name); the input's own set aside; a loop's
    left to run time."""
    one_branch = SIGN.replace("    else:\n        s = -1\n", "")
    assert _inferred(one_branch, SIGN) == [("unbound", "s", 4)]
    assert _inferred(SIGN.replace("    if x", "    print(s)\n    if x"), SIGN) == [
        ("undefined", "s", 2)
    ]
    assert _inferred(one_branch.replace("x > 0", "x >= 0"), one_branch) == []
    assert _inferred(SIGN.replace("s = -1", "s = 0"), SIGN) == []
    looped = "def last(xs):\n    for x in xs:\n        found = x\n    return found\n"
    assert _inferred(looped, "def last(xs):\n    return xs[-1]\n") == []


def test_a_cloned_project_s_pylint_settings_are_not_read(tmp_path, monkeypatch):
    """A repository's pylintrc or pyproject.toml may name code to run when pylint starts
    (`init-hook`, `load-plugins`); reading an answer never runs it."""
    ran = tmp_path / "ran"
    hook = f"init-hook=open({str(ran)!r}, 'w').write('ran')\n"
    (tmp_path / "pylintrc").write_text("[MAIN]\n" + hook)
    (tmp_path / ".pylintrc").write_text("[MAIN]\n" + hook)
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.pylint.main]\ninit-hook = \"open({str(ran)!r}, 'w').write('ran')\"\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYLINTRC", str(tmp_path / "pylintrc"))
    assert _inferred(CLASS.replace("return self.count", "return self.total")) != []
    assert not ran.exists()


@pytest.mark.parametrize(
    "original,answer,problem,kind",
    [
        (
            SOURCE,
            SOURCE.replace("sorted(found)", "_natural(sorted(found))"),
            "it uses '_natural', which nothing defines (line 7: return _natural(sorted(found)))",
            "undefined",
        ),
        (
            CLASS,
            CLASS.replace("def bump(self, step):", "def bump(self, step, times):"),
            "it writes 'counter.bump(1)', which cannot run: No value for argument 'times' in "
            "method call (line 12: counter.bump(1))",
            "call",
        ),
        (
            SIGN,
            SIGN.replace("    else:\n        s = -1\n", ""),
            "it reads 's' where it may not be assigned: Possibly using variable 's' before "
            "assignment (line 4: return s)",
            "unbound",
        ),
    ],
    ids=["undefined name", "call", "variable read before assignment"],
)
def test_a_candidate_with_a_finding_is_not_acceptable_in_python_only(
    original, answer, problem, kind
):
    verdict = verdicts.judge(original, answer, "change it", "python", verdicts.UNCHANGED_FIX)
    assert verdict.problem == problem
    assert verdict.finding.kind == kind
    assert verdicts.judge(original, answer, "change it", "", None).acceptable  # not Python


REDRAWS = {
    # A fix using a name nothing defines: the other token where the first answer was least
    # sure, between the start of the line that first uses the name and the name itself (a
    # token after the name, less sure still, cannot undo it); the first answer elsewhere.
    "undefined name, a fix": dict(
        original="import math\n\n\ndef area(r):\n    return r * r\n",
        request=("area() must use pi", "fix"),
        vocabulary=[
            "import math\n\n\n",
            "def area(r):\n",
            "    return",
            " pi",
            " * r * r\n",
            " math.pi",
            " r",
            " * r ** 2\n",
        ],
        first=([0, 1, 2, 3, 4], [1.0, 1.0, 0.9, 0.5, 0.3], [0, 1, 6, 5, 7]),
        redrawn=[0, 1, 2, 5, 4],
        problem="it uses 'pi', which nothing defines (line 5: return pi * r * r)",
        delivered="import math\n\n\ndef area(r):\n    return math.pi * r * r\n",
    ),
    # A parameter added where a caller does not pass it: the other token where the answer was
    # least sure on the call's line, up to the call's end (its arguments, not the less sure
    # line before); an edit goes on as the model answers from there.
    "call that cannot run, an edit": dict(
        original="def area(r):\n    return 3.14 * r * r\n\n\nprint(area(2))\n",
        request=("area() takes pi", "edit"),
        vocabulary=[
            "def area(r",
            ", pi",
            "):\n    return pi * r * r\n\n\n",
            "print(area(2",
            "))\n",
            ", pi=3.14",
            "print(area(2, 3.14",
        ],
        first=([0, 1, 2, 3, 4], [1.0, 0.4, 1.0, 0.6, 0.9], [0, 5, 2, 6, 4]),
        redrawn=[0, 1, 2, 6, 4],
        problem="it writes 'area(2)', which cannot run: No value for argument 'pi' in "
        "function call (line 5: print(area(2)))",
        delivered="def area(r, pi):\n    return pi * r * r\n\n\nprint(area(2, 3.14))\n",
    ),
}


@pytest.mark.parametrize("case", REDRAWS.values(), ids=REDRAWS.keys())
def test_an_answer_that_cannot_run_is_redrawn_from_the_line_that_writes_it(case):
    vocabulary = case["vocabulary"]
    decode = lambda tokens: "".join(vocabulary[t] for t in tokens)  # noqa: E731
    tokens, probabilities, runners_up = case["first"]
    answers = iter([decode(tokens), decode(case["redrawn"])])
    prompt = EditPrompt([len(vocabulary)], "```", case["original"], 0, 1)
    asked: list[EditRequest] = []

    def run(request: EditRequest) -> EditResult:
        asked.append(request)
        generation = Generation(tokens, "eos", Stats(), probabilities, runners_up)
        return EditResult(next(answers), generation, prompt)

    instruction, mode = case["request"]
    request = EditRequest(case["original"], instruction, prompt=mode, language="python")
    drawn = selection.draw_edits(run, request, str, selection.Samples(2), decode)
    assert [r.steering.forced for r in asked] == [(), tuple(case["redrawn"][:4])]
    assert drawn.problems == [case["problem"]]
    assert drawn.chosen.text == case["delivered"]


def test_an_edit_whose_every_candidate_uses_one_is_written_with_a_warning(tmp_path, capsys):
    """Not refused (a name may be defined where pyflakes cannot see, e.g. by `exec`), but the
    redraw was told why the first could not be used, the user is warned, and the stats say so."""
    import json

    from helpers import ScriptedEditor
    from rich.console import Console

    from specedit.cli.deliver import edit_file
    from specedit.cli.exits import Exit
    from specedit.cli.output import Delivery

    path, stats = tmp_path / "names.py", tmp_path / "stats.json"
    path.write_text(SOURCE)
    editor = ScriptedEditor(lambda text: text.replace("sorted(found)", "_natural(found)"))
    code = edit_file(
        editor,
        str(path),
        EditRequest("", "sort names naturally", prompt="fix"),
        Delivery(in_place=True, stats_file=stats),
        Console(stderr=True),
        samples=selection.Samples(2),
    )
    assert code == Exit.OK and "_natural(found)" in path.read_text()
    _, redraw = editor.requests
    assert "'_natural', which nothing defines" in redraw.feedback
    assert "'_natural', which nothing defines (line 7" in capsys.readouterr().err
    finding = {"kind": "undefined", "name": "_natural", "line": 7}
    assert json.loads(stats.read_text())["finding"] == finding
