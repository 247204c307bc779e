"""Build the specedit benchmark task suite, ``specedit/bench/tasks.jsonl``.

Why this script exists instead of a hand-written task file:

* The inputs are real text that nobody on the team wrote: excerpts of Python
  standard-library modules and the README prose that installed packages ship in
  their metadata. A benchmark built from our own examples would reward prompts
  and drafting heuristics we tuned on exactly those examples. No public edit
  benchmark is used, so the suite stays independent of them.
* Every planted change (bug, typo, rename) is an explicit string replacement that
  is asserted to match exactly once, so when a different Python or package
  version changes the source text the script fails loudly instead of silently
  writing a task whose bug is missing.
* Code tasks carry ``tests``: Python source appended to the edited text and run
  with ``python -I`` in an empty temporary directory (exit status 0 = pass). The
  tests compare the edited code with the real standard-library function on many
  deterministic inputs, so they pin behaviour rather than text. This script runs
  every test twice and fails unless it passes on ``expected`` (or, for a task
  without one, on a hand-written reference answer kept in this script, see
  ``reference_answers``) and fails on ``input``.
* There is no randomness, so the same interpreter and the same installed packages
  give a byte-identical file. The text does depend on those versions (the
  committed file was made with CPython 3.11 and the packages installed in the
  project's ``.venv``); regenerate and review the diff when they change.

Task groups (the ``group`` field) and where each comes from:

* ``bug`` (kind ``fix``): one small planted bug (a comparison, an off-by-one, a
  wrong constant, swapped arguments, a wrong variable, a missing negation, a
  dropped statement) in a self-contained excerpt of a pure-Python stdlib module:
  the module's own import lines and constants, then several of its definitions.
  ``expected`` is the original source; the instruction describes the symptom the
  way a user would report it.
* ``feature`` (kind ``edit``): a small feature request or refactor (a new
  parameter, a rename, an extracted helper, type hints, a docstring) on stdlib
  code; ``expected`` is a reference solution made by a minimal change to the
  input, and the tests check the requested behaviour, not the text.
* ``doc`` (kind ``rewrite``): README / long-description prose from installed
  packages' metadata with 2-4 planted typos (transposed letters or a doubled
  word); ``expected`` is the original prose, ``tests`` is null and a run passes
  only on an exact match. Some excerpts keep fenced code blocks on purpose.
* ``insertion`` (kind ``edit``): edits whose answer must write new text that
  cannot be copied from the input, to compare a draft model with copy drafting.
  Short stdlib excerpts (25-90 lines): type hints for ``colorsys`` and
  ``calendar`` functions; docstrings for ``posixpath`` and ``shlex`` functions
  whose own docstrings are stripped (no ``expected``: wording varies, the tests
  check length, distinctness and that the return value is described); a new
  function (``colorsys``-style ``rgb_to_hex``, the ``bisect`` docs' ``index``
  recipe); and ``heapq`` / ``posixpath.realpath`` code whose comments we
  translated into German / French, to be translated back (``expected`` is the
  original). Every test also checks that the existing behaviour is unchanged;
  the translation tests read the program's comments with ``tokenize`` and
  compare each function's syntax tree with the input's.

Usage::

    python tools/make_bench_tasks.py [--output PATH]
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib
import importlib.metadata
import inspect
import io
import json
import re
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import tokenize
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

Kind = Literal["fix", "edit", "rewrite"]
Group = Literal["bug", "feature", "doc", "insertion"]

DEFAULT_OUTPUT = Path(__file__).resolve().parent.parent / "specedit" / "bench" / "tasks.jsonl"

# Input sizes: most tasks are 20-120 lines, a few long files test edits far from the start.
INPUT_LINES = range(20, 401)
# The first suite's three shortest README excerpts are kept as they were (other code uses them).
SHORT_LEGACY_IDS = frozenset({"typo-rich-readme", "typo-click-readme", "typo-flask-readme"})
# Insertion tasks are short, so that a small model on a CPU writes each answer in reasonable time.
INSERTION_LINES = range(25, 91)
TEST_TIMEOUT_S = 20

TYPO_INSTRUCTION = "Fix the typos."


@dataclass(frozen=True)
class Task:
    """One line of tasks.jsonl; field order is the order written to the file."""

    id: str
    kind: Kind
    group: Group
    instruction: str
    input: str
    language: str
    expected: str | None  # None: only the tests can judge (see reference_answers)
    tests: str | None


# --- reading source text -----------------------------------------------------


def normalize(text: str) -> str:
    """Dedent, strip trailing whitespace and blank edge lines, end with one newline."""
    lines = [line.rstrip() for line in textwrap.dedent(text).splitlines()]
    return "\n".join(lines).strip("\n") + "\n"


def join_sections(*sections: str) -> str:
    """Join normalized module sections (imports, constants, definitions) with two blank lines."""
    return "\n\n".join(normalize(section) for section in sections if section.strip())


@functools.cache
def _module_source(module_name: str) -> tuple[str, ast.Module]:
    """The source text of a stdlib module and its syntax tree."""
    text = inspect.getsource(importlib.import_module(module_name))
    return text, ast.parse(text)


def stdlib_source(module_name: str, *qualnames: str) -> str:
    """Return the source of the named top-level functions/classes or methods.

    ``inspect.getsource(func)`` fails for C-accelerated modules (``bisect`` and
    ``heapq`` replace their Python functions with builtins) and for frozen modules
    (``posixpath``), so we take the module's source and slice definitions with
    ``ast``. ``qualnames`` are like ``"indent"`` or ``"Formatter._vformat"``;
    several definitions are joined with two blank lines.
    """
    module_text, tree = _module_source(module_name)
    module_lines = module_text.splitlines()
    chunks = []
    for qualname in qualnames:
        node: ast.AST = tree
        for part in qualname.split("."):
            matches = [
                child
                for child in getattr(node, "body", [])
                if isinstance(child, (ast.FunctionDef, ast.ClassDef)) and child.name == part
            ]
            assert len(matches) == 1, f"{module_name}.{qualname}: found {len(matches)} defs"
            node = matches[0]
        assert isinstance(node, (ast.FunctionDef, ast.ClassDef))
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        assert node.end_lineno is not None
        chunks.append(normalize("\n".join(module_lines[start - 1 : node.end_lineno])))
    return "\n\n".join(chunks)


def stdlib_imports(module_name: str) -> str:
    """Return the module's top-level import statements, in order, as written in the module.

    Excerpts start with these so that they run on their own; unused imports are
    harmless and keeping all of them keeps the header real source text.
    """
    module_text, tree = _module_source(module_name)
    statements = [
        ast.get_source_segment(module_text, node)
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]
    assert statements, f"{module_name}: no imports"
    return normalize("\n".join(s for s in statements if s))


def stdlib_lines(module_name: str, *starts: str) -> str:
    """Return top-level statements (constants, calls) of a module, one per prefix, in order.

    Each prefix must begin exactly one top-level statement that is not a def or class,
    e.g. ``"ONE_THIRD ="`` or ``"Template.__init_subclass__()"``.
    """
    module_text, tree = _module_source(module_name)
    statements = [
        ast.get_source_segment(module_text, node) or ""
        for node in tree.body
        if not isinstance(node, (ast.FunctionDef, ast.ClassDef))
    ]
    picked = []
    for start in starts:
        matches = [s for s in statements if s.startswith(start)]
        assert len(matches) == 1, f"{module_name}: {len(matches)} statements start with {start!r}"
        picked.append(matches[0])
    return normalize("\n".join(picked))


def package_description(package: str) -> str:
    """The long description (README) an installed package ships in its metadata.

    Looked up in the running environment first, then in the base interpreter's
    site-packages: the project's venv does not install every package the first
    suite drew from (Flask), but the interpreter it was made from does.
    """
    try:
        metadata = importlib.metadata.metadata(package)
    except importlib.metadata.PackageNotFoundError:
        base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_prefix})
        dists = list(importlib.metadata.distributions(name=package, path=[base["purelib"]]))
        assert dists, f"{package}: not installed here or in {base['purelib']}"
        metadata = dists[0].metadata
    description = metadata["Description"] or metadata.get_payload()
    assert isinstance(description, str) and description, f"{package}: no description"
    return description


def readme_paragraphs(package: str, *starts: str) -> str:
    """Return the paragraphs of a package's README that begin with ``starts``, in order.

    Paragraphs are separated by blank lines; each prefix must pick exactly one.
    """
    description = package_description(package)
    paragraphs = [p.strip("\n") for p in re.split(r"\n[ \t]*\n", description)]
    picked = []
    for start in starts:
        matches = [p for p in paragraphs if p.startswith(start)]
        assert len(matches) == 1, f"{package}: {len(matches)} paragraphs start with {start!r}"
        picked.append(matches[0])
    return normalize("\n\n".join(picked))


def readme_lines(package: str, first: str, stop: str | None = None) -> str:
    """Return a README's lines from the one starting with ``first`` up to the one before ``stop``.

    Unlike ``readme_paragraphs`` this keeps fenced code blocks (which contain blank
    lines) whole. Both prefixes must start exactly one line; ``stop=None`` means
    the end of the README.
    """
    lines = package_description(package).splitlines()

    def find(prefix: str) -> int:
        matches = [i for i, line in enumerate(lines) if line.startswith(prefix)]
        assert len(matches) == 1, f"{package}: {len(matches)} lines start with {prefix!r}"
        return matches[0]

    begin = find(first)
    end = len(lines) if stop is None else find(stop)
    assert begin < end, f"{package}: {first!r} is not before {stop!r}"
    return normalize("\n".join(lines[begin:end]))


# --- planting changes --------------------------------------------------------


def plant(text: str, old: str, new: str, count: int = 1) -> str:
    """Replace ``old`` with ``new``; ``old`` must occur exactly ``count`` times."""
    found = text.count(old)
    assert found == count, f"expected {count} occurrence(s) of {old!r}, found {found}"
    return text.replace(old, new)


def rename(text: str, old: str, new: str) -> str:
    """Replace the identifier ``old`` with ``new`` as a whole word everywhere."""
    assert len(re.findall(rf"\b{re.escape(old)}\b", text)) >= 2, f"{old!r} barely used"
    assert not re.search(rf"\b{re.escape(new)}\b", text), f"{new!r} already present"
    return re.sub(rf"\b{re.escape(old)}\b", new, text)


def is_transposition(word: str, typo: str) -> bool:
    """Tell whether ``typo`` is ``word`` with two adjacent letters swapped."""
    return any(
        word[:i] + word[i + 1] + word[i] + word[i + 2 :] == typo
        for i in range(len(word) - 1)
        if word[i] != word[i + 1]
    )


def is_doubled_word(phrase: str, typo: str) -> bool:
    """Tell whether ``typo`` is ``phrase`` with one of its words written twice."""
    words = phrase.split(" ")
    return any(words[: i + 1] + words[i:] == typo.split(" ") for i in range(len(words)))


def plant_typos(text: str, typos: dict[str, str]) -> str:
    """Plant 2-4 typos: letter swaps in single words or a doubled word in a phrase.

    A single word must occur exactly once as a whole word; a phrase (with spaces)
    exactly once as a substring, so the typo's position is unambiguous.
    """
    assert 2 <= len(typos) <= 4, "doc tasks carry 2-4 typos"
    for word, typo in typos.items():
        if " " in word:
            assert is_doubled_word(word, typo), f"{typo!r} doubles no word of {word!r}"
            text = plant(text, word, typo)
            continue
        assert is_transposition(word, typo), f"{typo!r} is not a transposition of {word!r}"
        pattern = rf"\b{re.escape(word)}\b"
        count = len(re.findall(pattern, text))
        assert count == 1, f"expected 1 whole-word {word!r}, found {count}"
        text = re.sub(pattern, typo, text)
    return text


def tests(source: str) -> str:
    """Normalize a test program (the bench appends it to the edited text)."""
    return normalize(source)


# --- the suite: bugs -----------------------------------------------------------


def bug_task(
    task_id: str, original: str, bug: tuple[str, str], instruction: str, test_source: str
) -> Task:
    """Make a ``bug`` task: plant ``bug = (old, new)`` in ``original``, expect ``original``."""
    old, new = bug
    buggy = plant(original, old, new)
    return Task(task_id, "fix", "bug", instruction, buggy, "python", original, tests(test_source))


def legacy_bug_tasks() -> list[Task]:
    """The first suite's five bugs; their inputs gained the import lines they need to run."""
    return [
        bug_task(
            "fix-bisect-offbyone",
            stdlib_source("bisect", "insort_right", "bisect_right"),
            bug=(
                "    if key is None:\n        while lo < hi:",
                "    if key is None:\n        while lo <= hi:",
            ),
            instruction="`bisect_right` hangs or raises IndexError when called without a `key`. "
            "Fix the off-by-one error in the loop condition.",
            test_source=r"""
            import bisect as _ref
            import random as _random

            assert bisect_right([1, 2, 3], 5) == 3, bisect_right([1, 2, 3], 5)
            assert bisect_right([1, 2, 2, 3], 2) == 3, bisect_right([1, 2, 2, 3], 2)
            _rng = _random.Random(0)
            for _ in range(500):
                _a = sorted(_rng.randrange(10) for _ in range(_rng.randrange(12)))
                _x = _rng.randrange(-1, 11)
                _lo = _rng.randrange(len(_a) + 1)
                _got, _want = bisect_right(_a, _x, _lo), _ref.bisect_right(_a, _x, _lo)
                assert _got == _want, (_a, _x, _lo, _got, _want)
                _pairs = [(v, str(v)) for v in _a]
                _got = bisect_right(_pairs, _x, key=lambda p: p[0])
                _want = _ref.bisect_right(_pairs, _x, key=lambda p: p[0])
                assert _got == _want, (_pairs, _x, _got, _want)
                _mine, _theirs = list(_a), list(_a)
                insort_right(_mine, _x)
                _ref.insort_right(_theirs, _x)
                assert _mine == _theirs, (_a, _x, _mine, _theirs)
            """,
        ),
        bug_task(
            "fix-colorsys-operator",
            join_sections(
                stdlib_lines("colorsys", "ONE_THIRD =", "ONE_SIXTH =", "TWO_THIRD ="),
                stdlib_source("colorsys", "rgb_to_hls", "hls_to_rgb", "_v"),
            ),
            bug=("rangec = (maxc-minc)", "rangec = (maxc+minc)"),
            instruction="`rgb_to_hls` returns the wrong hue and saturation when no RGB "
            "component is zero: `hls_to_rgb(*rgb_to_hls(0.8, 0.4, 0.2))` gives about "
            "(1.0, 0.2, 0.0). One arithmetic operator is wrong; fix it.",
            test_source=COLORSYS_TESTS,
        ),
        bug_task(
            "fix-heapq-swapped-args",
            stdlib_source("heapq", "heappush", "heappop", "_siftdown", "_siftup"),
            bug=("_siftdown(heap, 0, len(heap)-1)", "_siftdown(heap, len(heap)-1, 0)"),
            instruction="After `heappush`, `heap[0]` is often not the smallest item. "
            "It looks like two arguments in a call are swapped; fix it.",
            test_source=r"""
            import heapq as _ref
            import random as _random

            _rng = _random.Random(0)
            for _ in range(300):
                _mine, _theirs = [], []
                for _step in range(_rng.randrange(1, 30)):
                    if _theirs and _rng.random() < 0.4:
                        _got, _want = heappop(_mine), _ref.heappop(_theirs)
                        assert _got == _want, ("heappop", _got, _want)
                    else:
                        _x = _rng.randrange(20)
                        heappush(_mine, _x)
                        _ref.heappush(_theirs, _x)
                    assert _mine == _theirs, ("heap differs", _mine, _theirs)
                    assert not _mine or _mine[0] == min(_mine), _mine
            """,
        ),
        bug_task(
            "fix-posixpath-commonpath-var",
            join_sections(
                "import os\nimport genericpath", stdlib_source("posixpath", "commonpath")
            ),
            bug=("if c != s2[i]:", "if c != s1[i]:"),
            instruction="`commonpath(['/usr/lib', '/usr/local'])` returns '/usr/lib' instead "
            "of '/usr'. The loop that compares path components uses the wrong variable.",
            test_source=r"""
            import posixpath as _ref
            import random as _random

            _rng = _random.Random(0)
            _parts = ["usr", "lib", "local", "bin", ".", "a", "b"]
            for _ in range(500):
                _lead = _rng.choice(["/", ""])
                _paths = [
                    _lead + "/".join(_rng.choice(_parts) for _ in range(_rng.randrange(4)))
                    for _ in range(_rng.randrange(1, 4))
                ]
                _got, _want = commonpath(_paths), _ref.commonpath(_paths)
                assert _got == _want, (_paths, _got, _want)
                _raw = [p.encode() for p in _paths]
                assert commonpath(_raw) == _ref.commonpath(_raw), _raw
            for _bad in ([], ["/a", "b"]):
                try:
                    commonpath(_bad)
                except ValueError:
                    pass
                else:
                    raise AssertionError(f"commonpath({_bad!r}) should raise ValueError")
            """,
        ),
        bug_task(
            "fix-shlex-quote-return",
            join_sections(
                "import re\nfrom shlex import shlex",
                stdlib_lines("shlex", "_find_unsafe ="),
                stdlib_source("shlex", "split", "join", "quote"),
            ),
            bug=(
                "    if _find_unsafe(s) is None:\n        return s\n",
                "    if _find_unsafe(s) is None:\n        s\n",
            ),
            instruction="`quote('abc')` returns \"'abc'\", but strings without unsafe "
            "characters should come back unchanged. A `return` seems to be missing.",
            test_source=SHLEX_TESTS,
        ),
    ]


COLORSYS_TESTS = r"""
import colorsys as _ref
import math as _math
import random as _random

_rng = _random.Random(0)
_samples = [(0.8, 0.4, 0.2), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (0.5, 0.5, 0.5), (0.2, 0.9, 0.3)]
_samples += [(_rng.random(), _rng.random(), _rng.random()) for _ in range(500)]
_samples += [(_rng.choice([0.0, 0.25, 1.0]), _rng.random(), _rng.random()) for _ in range(200)]


def _close(a, b):
    return all(_math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(a, b))


for _rgb in _samples:
    for _name in ("rgb_to_hls", "hls_to_rgb", "rgb_to_hsv", "hsv_to_rgb"):
        if _name in globals():
            _got, _want = globals()[_name](*_rgb), getattr(_ref, _name)(*_rgb)
            assert _close(_got, _want), (_name, _rgb, _got, _want)
"""

SHLEX_TESTS = r"""
import random as _random
import shlex as _ref

_rng = _random.Random(0)
_pieces = ["a", "bc", "d e", "'q x'", '"dq y"', "#", "# c", "\\ ", "$x", "f;g", "", "it's"]
_pieces += ["-", "=1"]
for _word in ["abc", "", "a b", "it's", "$HOME", "x=1,y=2", "tab\there", "naïve", "@%+=:,./-"]:
    assert quote(_word) == _ref.quote(_word), (_word, quote(_word), _ref.quote(_word))
for _ in range(500):
    _words = [_rng.choice(_pieces) for _ in range(_rng.randrange(5))]
    _line = " ".join(_words)
    assert join(_words) == _ref.join(_words), (_words, join(_words), _ref.join(_words))
    assert split(join(_words)) == _words, (_words, join(_words), split(join(_words)))
    for _kwargs in ({}, {"comments": True}, {"posix": False}, {"comments": True, "posix": False}):
        try:
            _want = _ref.split(_line, **_kwargs)
        except ValueError:
            continue
        _got = split(_line, **_kwargs)
        assert _got == _want, (_line, _kwargs, _got, _want)
"""


def heapq_bug_task() -> Task:
    """``heapq``'s heap primitives and nsmallest/nlargest; a tie-breaking bug in nlargest."""
    return bug_task(
        "fix-heapq-nlargest-ties",
        stdlib_source(
            "heapq",
            "heappush",
            "heappop",
            "heapreplace",
            "heapify",
            "_heapreplace_max",
            "_heapify_max",
            "_siftdown",
            "_siftup",
            "_siftdown_max",
            "_siftup_max",
            "nsmallest",
            "nlargest",
        ),
        bug=("        if top < k:\n", "        if top <= k:\n"),
        instruction="`nlargest(n, items, key=...)` is documented as equivalent to "
        "`sorted(items, key=key, reverse=True)[:n]`, but when several items have the same "
        "key it returns later ones instead of the first ones: "
        "`nlargest(2, iter(['ab', 'efg', 'hi', 'jkl', 'mno']), key=len)` gives "
        "['efg', 'mno'] instead of ['efg', 'jkl'].",
        test_source=r"""
        import heapq as _ref
        import random as _random
        from operator import itemgetter as _itemgetter

        _words = ["ab", "cd", "efg", "hi", "jkl", "mno", "p"]
        _got = nlargest(2, iter(_words), key=len)
        assert _got == ["efg", "jkl"], _got
        _rng = _random.Random(0)
        _first = _itemgetter(0)
        for _ in range(400):
            _pairs = [(_rng.randrange(6), str(i)) for i in range(_rng.randrange(20))]
            _n = _rng.randrange(8)
            for _source in (list, iter):
                _got = nlargest(_n, _source(_pairs), key=_first)
                _want = sorted(_pairs, key=_first, reverse=True)[:_n]
                assert _got == _want, ("nlargest", _pairs, _n, _got, _want)
                _got = nsmallest(_n, _source(_pairs), key=_first)
                _want = sorted(_pairs, key=_first)[:_n]
                assert _got == _want, ("nsmallest", _pairs, _n, _got, _want)
                _nums = [p[0] for p in _pairs]
                assert nlargest(_n, _source(_nums)) == _ref.nlargest(_n, _nums), (_nums, _n)
                assert nsmallest(_n, _source(_nums)) == _ref.nsmallest(_n, _nums), (_nums, _n)
            _heap, _theirs = [p[0] for p in _pairs], [p[0] for p in _pairs]
            heapify(_heap)
            _ref.heapify(_theirs)
            assert _heap == _theirs, (_heap, _theirs)
            if _heap:
                assert heapreplace(_heap, 3) == _ref.heapreplace(_theirs, 3)
                assert _heap == _theirs, (_heap, _theirs)
        """,
    )


def statistics_bug_tasks() -> list[Task]:
    """Two long ``statistics`` excerpts: the median family and the variance machinery."""
    medians = join_sections(
        stdlib_imports("statistics"),
        stdlib_source(
            "statistics",
            "StatisticsError",
            "median",
            "median_low",
            "median_high",
            "median_grouped",
            "mode",
            "multimode",
            "quantiles",
        ),
    )
    variances = join_sections(
        stdlib_imports("statistics"),
        stdlib_source(
            "statistics",
            "StatisticsError",
            "_ss",
            "_isfinite",
            "_coerce",
            "_exact_ratio",
            "_convert",
            "variance",
            "pvariance",
        ),
    )
    return [
        bug_task(
            "fix-statistics-median-even",
            medians,
            bug=(
                "        return (data[i - 1] + data[i]) / 2",
                "        return (data[i] + data[i]) / 2",
            ),
            instruction="`median` of an even-length list returns the upper middle value "
            "instead of the mean of the two middle values: `median([1, 3, 5, 7])` gives 5.0, "
            "not 4.0.",
            test_source=r"""
            import random as _random
            import statistics as _ref

            assert median([1, 3, 5, 7]) == 4.0, median([1, 3, 5, 7])
            _rng = _random.Random(0)
            _names = ["median", "median_low", "median_high", "median_grouped", "mode", "multimode"]
            for _ in range(400):
                _data = [_rng.randrange(-20, 20) for _ in range(_rng.randrange(1, 12))]
                for _name in _names:
                    _got, _want = globals()[_name](_data), getattr(_ref, _name)(_data)
                    assert _got == _want, (_name, _data, _got, _want)
                if len(_data) >= 2:
                    for _method in ("exclusive", "inclusive"):
                        for _n in (2, 4, 10):
                            _got = quantiles(_data, n=_n, method=_method)
                            _want = _ref.quantiles(_data, n=_n, method=_method)
                            assert _got == _want, (_data, _n, _method, _got, _want)
            for _name in _names[:5]:
                try:
                    globals()[_name]([])
                except StatisticsError:
                    pass
                else:
                    raise AssertionError(f"{_name}([]) should raise StatisticsError")
            assert multimode([]) == []
            """,
        ),
        bug_task(
            "fix-statistics-variance",
            variances,
            bug=("    return _convert(ss / (n - 1), T)", "    return _convert(ss / n, T)"),
            instruction="`variance([1, 2, 3, 4])` returns 1.25, the same as `pvariance`; the "
            "sample variance of that data is 1.6666666666666667.",
            test_source=r"""
            import random as _random
            import statistics as _ref
            from decimal import Decimal as _D
            from fractions import Fraction as _F

            assert variance([1, 2, 3, 4]) == _ref.variance([1, 2, 3, 4]), variance([1, 2, 3, 4])
            _rng = _random.Random(0)
            for _ in range(300):
                _ints = [_rng.randrange(-50, 50) for _ in range(_rng.randrange(2, 15))]
                for _data in (_ints, [x / 4 for x in _ints], [_F(x, 3) for x in _ints],
                              [_D(x) / 8 for x in _ints]):
                    for _name in ("variance", "pvariance"):
                        _got, _want = globals()[_name](_data), getattr(_ref, _name)(_data)
                        assert _got == _want and type(_got) is type(_want), (
                            _name, _data, _got, _want)
            for _call in (lambda: variance([1]), lambda: pvariance([])):
                try:
                    _call()
                except StatisticsError:
                    pass
                else:
                    raise AssertionError("too little data should raise StatisticsError")
            """,
        ),
    ]


def textwrap_bug_tasks() -> list[Task]:
    """``textwrap``: the whole TextWrapper class (the longest input) and dedent/indent."""
    wrapper = join_sections(
        stdlib_imports("textwrap"),
        stdlib_lines("textwrap", "_whitespace ="),
        stdlib_source("textwrap", "TextWrapper", "wrap", "fill"),
    )
    dedent = join_sections(
        stdlib_imports("textwrap"),
        stdlib_lines("textwrap", "_whitespace_only_re =", "_leading_whitespace_re ="),
        stdlib_source("textwrap", "dedent", "indent"),
    )
    return [
        bug_task(
            "fix-textwrap-full-width",
            wrapper,
            bug=(
                "                if cur_len + l <= width:",
                "                if cur_len + l < width:",
            ),
            instruction="`wrap` never fills a line completely: a word that would end exactly "
            "at column `width` is moved to the next line, so "
            "`wrap('aaa bbb ccc', width=7)` gives ['aaa', 'bbb', 'ccc'] instead of "
            "['aaa bbb', 'ccc'].",
            test_source=r"""
            import random as _random
            import textwrap as _ref

            assert wrap("aaa bbb ccc", width=7) == ["aaa bbb", "ccc"], wrap("aaa bbb ccc", width=7)
            _rng = _random.Random(0)
            _vocab = ["a", "to", "the", "word", "eleven", "wrapping", "extraordinarily", "x-y-z"]
            for _ in range(300):
                _text = " ".join(_rng.choice(_vocab) for _ in range(_rng.randrange(1, 30)))
                _width = _rng.randrange(8, 40)
                _kwargs = _rng.choice([
                    {},
                    {"initial_indent": "* ", "subsequent_indent": "  "},
                    {"break_long_words": False},
                    {"max_lines": 2, "placeholder": " ..."},
                    {"drop_whitespace": False},
                    {"break_on_hyphens": False},
                ])
                _got = wrap(_text, _width, **_kwargs)
                _want = _ref.wrap(_text, _width, **_kwargs)
                assert _got == _want, (_text, _width, _kwargs, _got, _want)
                _got, _want = fill(_text, _width), _ref.fill(_text, _width)
                assert _got == _want, (_text, _width, _got, _want)
            """,
        ),
        bug_task(
            "fix-textwrap-dedent-blank",
            dedent,
            bug=("    text = _whitespace_only_re.sub('', text)\n", ""),
            instruction="`dedent` leaves whitespace on lines that contain only spaces or tabs: "
            "`dedent('  a\\n    \\n  b')` returns 'a\\n  \\nb', but blank lines should come "
            "back empty.",
            test_source=r"""
            import random as _random
            import textwrap as _ref

            _rng = _random.Random(0)
            _heads = ["", " ", "  ", "    ", "\t", "  \t", "\t  "]
            _bodies = ["x", "hello world", "", "  ", "\t", "# c"]
            for _ in range(600):
                _lines = [
                    _rng.choice(_heads) + _rng.choice(_bodies) for _ in range(_rng.randrange(1, 7))
                ]
                _text = "\n".join(_lines) + _rng.choice(["", "\n"])
                _got, _want = dedent(_text), _ref.dedent(_text)
                assert _got == _want, (_text, _got, _want)
                _got, _want = indent(_text, "> "), _ref.indent(_text, "> ")
                assert _got == _want, (_text, _got, _want)
                _got = indent(_text, "+", lambda line: True)
                _want = _ref.indent(_text, "+", lambda line: True)
                assert _got == _want, (_text, _got, _want)
            """,
        ),
    ]


def graphlib_bug_task() -> Task:
    """All of ``graphlib``: repeated ``add`` calls for one node must accumulate."""
    return bug_task(
        "fix-graphlib-add-union",
        join_sections(
            stdlib_imports("graphlib"),
            stdlib_lines("graphlib", "_NODE_OUT =", "_NODE_DONE ="),
            stdlib_source("graphlib", "_NodeInfo", "CycleError", "TopologicalSorter"),
        ),
        bug=(
            "        nodeinfo.npredecessors += len(predecessors)",
            "        nodeinfo.npredecessors = len(predecessors)",
        ),
        instruction="When I call `add` more than once for the same node, `static_order()` "
        "sometimes yields that node before some of its predecessors, leaves nodes out, or "
        "raises ValueError. The docstring says repeated calls take the union of the dependencies.",
        test_source=r"""
        import graphlib as _ref
        import random as _random

        _rng = _random.Random(0)
        for _ in range(400):
            _n = _rng.randrange(1, 9)
            _edges = [(a, b) for a in range(_n) for b in range(a) if _rng.random() < 0.35]
            _rng.shuffle(_edges)
            if _rng.random() < 0.2 and _n > 1:
                _edges.append((0, _n - 1))  # a cycle
            _mine, _theirs = TopologicalSorter(), _ref.TopologicalSorter()
            for _node in range(_n):
                _mine.add(_node)
                _theirs.add(_node)
            for _node, _pred in _edges:
                _mine.add(_node, _pred)
                _theirs.add(_node, _pred)
            try:
                _want = list(_theirs.static_order())
            except _ref.CycleError:
                try:
                    list(_mine.static_order())
                except CycleError:
                    continue
                raise AssertionError(("cycle not detected", _edges))
            _got = list(_mine.static_order())
            assert _got == _want, (_edges, _got, _want)
        _ts = TopologicalSorter({"b": {"a"}, "c": {"a", "b"}})
        _ts.prepare()
        _seen = []
        while _ts.is_active():
            _ready = _ts.get_ready()
            _seen.extend(_ready)
            _ts.done(*_ready)
        assert _seen == ["a", "b", "c"], _seen
        """,
    )


def json_bug_task() -> Task:
    """``json.encoder._make_iterencode``: the pure-Python encoder used when ``indent`` is set."""
    return bug_task(
        "fix-json-indent-close",
        stdlib_source("json.encoder", "_make_iterencode"),
        bug=(
            "            _current_indent_level -= 1\n"
            "            yield '\\n' + _indent * _current_indent_level\n"
            "        yield ']'",
            "            yield '\\n' + _indent * _current_indent_level\n        yield ']'",
        ),
        instruction="With an indent, the closing `]` of every non-empty list is indented one "
        "level too deep (at the level of the items), while `}` of dicts is placed correctly.",
        test_source=r"""
        import json as _json
        import random as _random
        from json.encoder import encode_basestring_ascii as _encode_str

        _rng = _random.Random(0)


        def _value(depth):
            kind = _rng.randrange(9 if depth else 6)
            if kind == 0:
                return _rng.randrange(-100, 100)
            if kind == 1:
                return _rng.randrange(-40, 40) / 8
            if kind == 2:
                return _rng.choice(["", "a", "é", 'q"x', "line\nbreak"])
            if kind == 3:
                return _rng.choice([None, True, False])
            if kind in (4, 6):
                return [_value(depth - 1) for _ in range(_rng.randrange(4))]
            if kind == 5:
                return ()
            return {_rng.choice("abcdef"): _value(depth - 1) for _ in range(_rng.randrange(4))}


        def _default(obj):
            raise TypeError(obj)


        for _ in range(300):
            _obj = _value(3)
            for _indent in (None, 0, 2, "\t"):
                for _sort_keys in (False, True):
                    _seps = (", ", ": ") if _indent is None else (",", ": ")
                    _encode = _make_iterencode(
                        {}, _default, _encode_str, _indent, float.__repr__,
                        _seps[1], _seps[0], _sort_keys, False, False,
                    )
                    _got = "".join(_encode(_obj, 0))
                    _want = _json.dumps(
                        _obj, indent=_indent, sort_keys=_sort_keys, separators=_seps
                    )
                    assert _got == _want, (_obj, _indent, _sort_keys, _got, _want)
        """,
    )


def random_bug_task() -> Task:
    """``random.Random``'s sequence methods as plain functions of ``self``; a one-line bug."""
    return bug_task(
        "fix-random-shuffle",
        join_sections(
            stdlib_imports("random"),
            stdlib_source(
                "random", "Random.choice", "Random.shuffle", "Random.sample", "Random.choices"
            ),
        ),
        bug=("        j = randbelow(i + 1)", "        j = randbelow(i)"),
        instruction="`shuffle` never leaves any element where it was: shuffling a two-element "
        "list always swaps the two, and some orderings can never come out. (These are the "
        "`Random` methods; call them as `shuffle(random.Random(seed), items)`.)",
        test_source=r"""
        import random as _random

        for _seed in range(300):
            _x = list(range(_seed % 9))
            _y = list(_x)
            shuffle(_random.Random(_seed), _x)
            _random.Random(_seed).shuffle(_y)
            assert _x == _y, ("shuffle", _seed, _x, _y)
            _pop = list("abcdefghij")
            _k = _seed % 11
            _got = sample(_random.Random(_seed), _pop, _k)
            _want = _random.Random(_seed).sample(_pop, _k)
            assert _got == _want, ("sample", _seed, _got, _want)
            _got = sample(_random.Random(_seed), range(10**6), 30)
            _want = _random.Random(_seed).sample(range(10**6), 30)
            assert _got == _want, ("sample range", _seed, _got, _want)
            _got = sample(_random.Random(_seed), "ab", 3, counts=[2, 3])
            _want = _random.Random(_seed).sample("ab", 3, counts=[2, 3])
            assert _got == _want, ("sample counts", _seed, _got, _want)
            _got = choices(_random.Random(_seed), _pop, k=5)
            _want = _random.Random(_seed).choices(_pop, k=5)
            assert _got == _want, ("choices", _seed, _got, _want)
            _weights = list(range(1, 11))
            _got = choices(_random.Random(_seed), _pop, _weights, k=4)
            _want = _random.Random(_seed).choices(_pop, _weights, k=4)
            assert _got == _want, ("choices weights", _seed, _got, _want)
            _got = choice(_random.Random(_seed), _pop)
            _want = _random.Random(_seed).choice(_pop)
            assert _got == _want, ("choice", _seed, _got, _want)
        """,
    )


def difflib_bug_task() -> Task:
    """``difflib``'s unified/context diff writers and ``get_close_matches``."""
    return bug_task(
        "fix-difflib-unified-hunk",
        join_sections(
            stdlib_imports("difflib") + "from difflib import SequenceMatcher\n",
            stdlib_source(
                "difflib",
                "get_close_matches",
                "_format_range_unified",
                "unified_diff",
                "_format_range_context",
                "context_diff",
                "_check_types",
            ),
        ),
        bug=(
            "        file2_range = _format_range_unified(first[3], last[4])",
            "        file2_range = _format_range_unified(first[3], last[2])",
        ),
        instruction="The `+` range in the `@@ ... @@` hunk headers of `unified_diff` is wrong "
        "whenever lines were inserted or deleted: for `a = ['x\\n']` and "
        "`b = ['x\\n', 'y\\n']` the header is `@@ -1 +1 @@` instead of `@@ -1 +1,2 @@`, so "
        "`patch` rejects the diff. The `-` range is fine.",
        test_source=r"""
        import difflib as _ref
        import random as _random

        _got = list(unified_diff(["x\n"], ["x\n", "y\n"]))
        assert _got[2] == "@@ -1 +1,2 @@\n", _got
        _rng = _random.Random(0)
        for _ in range(300):
            _a = [_rng.choice("abcde") + "\n" for _ in range(_rng.randrange(12))]
            _b = list(_a)
            for _edit in range(_rng.randrange(1, 4)):
                _at = _rng.randrange(len(_b) + 1)
                _op = _rng.randrange(3)
                if _op == 0 or not _b[_at:]:
                    _b.insert(_at, _rng.choice("xyz") + "\n")
                elif _op == 1:
                    del _b[_at]
                else:
                    _b[_at] = _rng.choice("xyz") + "\n"
            _n = _rng.randrange(4)
            _got = list(unified_diff(_a, _b, "old", "new", n=_n))
            _want = list(_ref.unified_diff(_a, _b, "old", "new", n=_n))
            assert _got == _want, (_a, _b, _n, _got, _want)
            _got = list(context_diff(_a, _b, "old", "new", n=_n))
            _want = list(_ref.context_diff(_a, _b, "old", "new", n=_n))
            assert _got == _want, (_a, _b, _n, _got, _want)
        _words = ["ape", "apple", "peach", "puppy", "apply", "maple"]
        for _word in ["appel", "pech", "zzz", "mapel"]:
            _got, _want = get_close_matches(_word, _words), _ref.get_close_matches(_word, _words)
            assert _got == _want, (_word, _got, _want)
        """,
    )


# The date helpers at the top of ``calendar``: the input of two tasks.
CALENDAR_DATE_HELPERS = (
    "IllegalMonthError",
    "isleap",
    "leapdays",
    "weekday",
    "monthrange",
    "_monthlen",
    "_prevmonth",
    "_nextmonth",
)


def calendar_bug_task() -> Task:
    """``calendar``'s date helpers and the ``Calendar`` class (no formatting)."""
    return bug_task(
        "fix-calendar-leading-days",
        join_sections(
            stdlib_imports("calendar"),
            stdlib_lines("calendar", "January =", "February =", "mdays ="),
            stdlib_source(
                "calendar",
                *CALENDAR_DATE_HELPERS,
                "Calendar",
            ),
        ),
        bug=("        end = _monthlen(y, m) + 1\n", "        end = _monthlen(y, m)\n"),
        instruction="`Calendar().monthdatescalendar(2024, 5)` starts with April 28 and 29 "
        "instead of April 29 and 30: the days shown from the previous month are off by one. "
        "`monthdayscalendar` is fine.",
        test_source=r"""
        import calendar as _ref

        for _first in range(7):
            _mine, _theirs = Calendar(_first), _ref.Calendar(_first)
            for _year in (1, 1900, 1999, 2000, 2023, 2024, 2100, 9999):
                for _month in range(1, 13):
                    for _method in ("monthdays2calendar", "monthdayscalendar"):
                        _got = getattr(_mine, _method)(_year, _month)
                        _want = getattr(_theirs, _method)(_year, _month)
                        assert _got == _want, (_method, _first, _year, _month, _got, _want)
                    _got = list(_mine.itermonthdays4(_year, _month))
                    _want = list(_theirs.itermonthdays4(_year, _month))
                    assert _got == _want, ("itermonthdays4", _first, _year, _month, _got, _want)
                    if 1 < _year < 9999:
                        _got = _mine.monthdatescalendar(_year, _month)
                        _want = _theirs.monthdatescalendar(_year, _month)
                        assert _got == _want, (_first, _year, _month, _got, _want)
                    assert monthrange(_year, _month) == _ref.monthrange(_year, _month)
        for _year in range(1, 3000):
            assert isleap(_year) == _ref.isleap(_year), _year
            assert leapdays(_year, 2024) == _ref.leapdays(_year, 2024), _year
        """,
    )


def reprlib_bug_task() -> Task:
    """``reprlib.Repr``: size- and depth-limited reprs."""
    return bug_task(
        "fix-reprlib-maxlevel",
        join_sections(
            stdlib_imports("reprlib"),
            stdlib_source("reprlib", "recursive_repr", "Repr", "_possibly_sorted"),
        ),
        bug=("        if level <= 0 and n:", "        if level < 0 and n:"),
        instruction="`Repr` nests lists, tuples and sets one level deeper than `maxlevel` "
        "allows: with `maxlevel = 1`, `r.repr([[1, 2], 3])` gives '[[1, 2], 3]' instead of "
        "'[[...], 3]'. Dicts are cut off at the right depth.",
        test_source=r"""
        import random as _random
        import reprlib as _ref

        _rng = _random.Random(0)


        def _value(depth):
            kind = _rng.randrange(8 if depth else 3)
            if kind == 0:
                return _rng.randrange(-10**60, 10**60)
            if kind == 1:
                return "".join(_rng.choice("ab'\"") for _ in range(_rng.randrange(50)))
            if kind == 2:
                return _rng.choice([None, 1.5, b"by"])
            if kind == 3:
                return [_value(depth - 1) for _ in range(_rng.randrange(9))]
            if kind == 4:
                return tuple(_value(depth - 1) for _ in range(_rng.randrange(9)))
            if kind == 5:
                return {_rng.randrange(50): _value(depth - 1) for _ in range(_rng.randrange(7))}
            if kind == 6:
                return set(_rng.sample(range(100), _rng.randrange(9)))
            return frozenset(_rng.sample(range(100), _rng.randrange(9)))


        for _ in range(500):
            _obj = _value(4)
            _mine, _theirs = Repr(), _ref.Repr()
            _mine.maxlevel = _theirs.maxlevel = _rng.randrange(1, 5)
            _mine.maxlist = _theirs.maxlist = _rng.randrange(1, 7)
            _mine.maxstring = _theirs.maxstring = _rng.randrange(5, 40)
            _got, _want = _mine.repr(_obj), _theirs.repr(_obj)
            assert _got == _want, (_obj, _mine.maxlevel, _got, _want)
        """,
    )


def base64_bug_task() -> Task:
    """``base64``'s pure-Python base32 encoder and decoder."""
    return bug_task(
        "fix-base64-b32-padding",
        join_sections(
            stdlib_imports("base64"),
            stdlib_lines("base64", "bytes_types =", "_b32alphabet =", "_b32hexalphabet ="),
            stdlib_lines("base64", "_b32tab2 =", "_b32rev ="),
            stdlib_source(
                "base64",
                "_bytes_from_decode_data",
                "_b32encode",
                "_b32decode",
                "b32encode",
                "b32decode",
                "b32hexencode",
                "b32hexdecode",
            ),
        ),
        bug=("        encoded[-3:] = b'==='", "        encoded[-4:] = b'===='"),
        instruction="`b32encode(b'abc')` returns b'MFRG====', which decodes back to b'ab': "
        "whenever 3 bytes are left over for the last 5-byte group, the last byte is lost. "
        "Other lengths round-trip fine.",
        test_source=r"""
        import base64 as _ref
        import binascii as _binascii
        import random as _random

        _rng = _random.Random(0)
        for _ in range(600):
            _data = bytes(_rng.randrange(256) for _ in range(_rng.randrange(21)))
            for _enc, _dec in (("b32encode", "b32decode"), ("b32hexencode", "b32hexdecode")):
                _got, _want = globals()[_enc](_data), getattr(_ref, _enc)(_data)
                assert _got == _want, (_enc, _data, _got, _want)
                assert globals()[_dec](_want) == _data, (_dec, _want, _data)
            _text = _ref.b32encode(_data).decode()
            assert b32decode(_text.lower(), casefold=True) == _data, _text
        for _bad in (b"MFRGG", b"MFRGG=", b"MFR====="):
            try:
                b32decode(_bad)
            except _binascii.Error:
                pass
            else:
                raise AssertionError(f"b32decode({_bad!r}) should fail")
        """,
    )


def functools_bug_task() -> Task:
    """``functools``' pure-Python ``lru_cache`` (the C version replaces it at import)."""
    return bug_task(
        "fix-lru-cache-maxsize",
        join_sections(
            stdlib_imports("functools"),
            stdlib_lines("functools", "WRAPPER_ASSIGNMENTS =", "WRAPPER_UPDATES =", "_CacheInfo ="),
            stdlib_source(
                "functools",
                "update_wrapper",
                "_HashedSeq",
                "_make_key",
                "lru_cache",
                "_lru_cache_wrapper",
            ),
        ),
        bug=(
            "                    full = (cache_len() >= maxsize)",
            "                    full = (cache_len() > maxsize)",
        ),
        instruction="A function decorated with `@lru_cache(maxsize=2)` keeps three results: "
        "`cache_info().currsize` goes one above `maxsize`, and the hit/miss counts differ "
        "from `functools.lru_cache`.",
        test_source=r"""
        import functools as _ref
        import random as _random

        _rng = _random.Random(0)
        for _maxsize in (0, 1, 2, 3, 8, None):
            for _typed in (False, True):

                @lru_cache(maxsize=_maxsize, typed=_typed)
                def _mine(x, y=0):
                    return (x, y)

                @_ref.lru_cache(maxsize=_maxsize, typed=_typed)
                def _theirs(x, y=0):
                    return (x, y)

                for _ in range(300):
                    _x = _rng.choice([_rng.randrange(10), float(_rng.randrange(3))])
                    _kwargs = _rng.choice([{}, {"y": 1}])
                    assert _mine(_x, **_kwargs) == _theirs(_x, **_kwargs), (_x, _kwargs)
                    _got, _want = tuple(_mine.cache_info()), tuple(_theirs.cache_info())
                    assert _got == _want, (_maxsize, _typed, _got, _want)
                    if _maxsize is not None:
                        assert _got[3] <= _maxsize, (_maxsize, _got)
                _mine.cache_clear()
                assert tuple(_mine.cache_info())[::2] == (0, _maxsize), _mine.cache_info()


        @lru_cache
        def _square(x):
            return x * x


        assert _square(3) == 9 and _square.__name__ == "_square", _square
        assert _square.cache_parameters() == {"maxsize": 128, "typed": False}
        """,
    )


def small_bug_tasks() -> list[Task]:
    """Shorter excerpts (20-130 lines) with one planted bug each."""
    return [
        bug_task(
            "fix-colorsys-hsv",
            join_sections(
                stdlib_lines("colorsys", "ONE_THIRD =", "ONE_SIXTH =", "TWO_THIRD ="),
                stdlib_source(
                    "colorsys", "rgb_to_hls", "hls_to_rgb", "_v", "rgb_to_hsv", "hsv_to_rgb"
                ),
            ),
            bug=(
                "    if i == 4:\n        return t, p, v",
                "    if i == 4:\n        return p, t, v",
            ),
            instruction="`hsv_to_rgb(0.75, 1.0, 1.0)` should be purple (0.5, 0.0, 1.0) but comes "
            "out blue (0.0, 0.5, 1.0); hues between 240 and 300 degrees are wrong, the others "
            "are fine.",
            test_source=COLORSYS_TESTS,
        ),
        bug_task(
            "fix-bisect-left-key",
            join_sections(
                stdlib_source(
                    "bisect", "insort_right", "bisect_right", "insort_left", "bisect_left"
                ),
                stdlib_lines("bisect", "bisect =", "insort ="),
            ),
            bug=("            if key(a[mid]) < x:", "            if key(a[mid]) <= x:"),
            instruction="`bisect_left(a, x, key=...)` returns the position after the items whose "
            "key equals `x`, like `bisect_right` would; without `key` it works.",
            test_source=r"""
            import bisect as _ref
            import random as _random

            _rng = _random.Random(0)
            _key = lambda p: p[0]  # noqa: E731
            for _ in range(500):
                _a = sorted(_rng.randrange(8) for _ in range(_rng.randrange(12)))
                _pairs = [(v, i) for i, v in enumerate(_a)]
                _x = _rng.randrange(-1, 9)
                _lo = _rng.randrange(len(_a) + 1)
                _hi = _rng.randrange(_lo, len(_a) + 1)
                for _name in ("bisect_left", "bisect_right"):
                    _got = globals()[_name](_a, _x, _lo, _hi)
                    _want = getattr(_ref, _name)(_a, _x, _lo, _hi)
                    assert _got == _want, (_name, _a, _x, _lo, _hi, _got, _want)
                    _got = globals()[_name](_pairs, _x, _lo, _hi, key=_key)
                    _want = getattr(_ref, _name)(_pairs, _x, _lo, _hi, key=_key)
                    assert _got == _want, (_name, "key", _pairs, _x, _lo, _hi, _got, _want)
                for _name in ("insort_left", "insort_right", "insort"):
                    _mine, _theirs = list(_pairs), list(_pairs)
                    globals()[_name](_mine, (_x, -1), key=_key)
                    getattr(_ref, _name)(_theirs, (_x, -1), key=_key)
                    assert _mine == _theirs, (_name, _pairs, _x, _mine, _theirs)
            """,
        ),
        bug_task(
            "fix-html-unescape-hex",
            join_sections(
                stdlib_imports("html"),
                stdlib_lines("html", "_invalid_charrefs =", "_invalid_codepoints ="),
                stdlib_source("html", "escape", "_replace_charref"),
                stdlib_lines("html", "_charref ="),
                stdlib_source("html", "unescape"),
            ),
            bug=(
                "            num = int(s[2:].rstrip(';'), 16)",
                "            num = int(s[2:].rstrip(';'), 10)",
            ),
            instruction="`unescape('&#x41;')` returns ')' instead of 'A', and "
            "`unescape('&#x3e;')` raises ValueError. Decimal references like '&#65;' and named "
            "ones like '&gt;' work.",
            test_source=r"""
            import html as _ref
            import random as _random

            _rng = _random.Random(0)
            _refs = ["&#x41;", "&#X3e;", "&#65;", "&#0;", "&#x80;", "&#xD800;", "&#x110000;",
                     "&amp;", "&gt", "&notin;", "&notit;", "&#x1F600;", "&#12", "&;", "&#xffff;",
                     "&#x0d;", "&#13;", "&lt;", "&copy", "&#x", "&#"]
            for _ in range(600):
                _s = "".join(_rng.choice(_refs + ["a", " ", "<", "\"", "'", "&"])
                             for _ in range(_rng.randrange(8)))
                _got, _want = unescape(_s), _ref.unescape(_s)
                assert _got == _want, (_s, _got, _want)
                for _quote in (True, False):
                    assert escape(_s, _quote) == _ref.escape(_s, _quote), (_s, _quote)
            """,
        ),
        bug_task(
            "fix-fnmatch-negated-class",
            join_sections(
                stdlib_imports("fnmatch"),
                stdlib_source(
                    "fnmatch", "fnmatch", "_compile_pattern", "filter", "fnmatchcase", "translate"
                ),
            ),
            bug=(
                "                        stuff = '^' + stuff[1:]",
                "                        stuff = '^' + stuff",
            ),
            instruction="Negated character classes also exclude '!': `fnmatchcase('!', '[!abc]')` "
            "returns False, but '!' is not one of a, b, c so it should match.",
            test_source=r"""
            import fnmatch as _ref
            import random as _random

            assert fnmatchcase("!", "[!abc]"), "fnmatchcase('!', '[!abc]') should be True"
            _rng = _random.Random(0)
            _atoms = ["a", "b", "!", "-", "*", "?", "[", "]", "[!a]", "[a-c]", "[!b-d]", "[]]",
                      "[!]", "\\", "^", ".", "[z-a]", "[^b]", "&&", "~"]
            _names = ["", "a", "b", "!", "-", "ab", "ba!", "a-c", "]", "[", "^", ".a", "x\n"]
            for _ in range(500):
                _pat = "".join(_rng.choice(_atoms) for _ in range(_rng.randrange(4)))
                _got, _want = translate(_pat), _ref.translate(_pat)
                assert _got == _want, (_pat, _got, _want)
                for _name in _names:
                    _got, _want = fnmatchcase(_name, _pat), _ref.fnmatchcase(_name, _pat)
                    assert _got == _want, (_name, _pat, _got, _want)
                assert filter(_names, _pat) == _ref.filter(_names, _pat), _pat
            """,
        ),
        bug_task(
            "fix-ast-literal-eval-sign",
            join_sections(
                stdlib_imports("ast") + "from ast import parse\n",
                stdlib_source("ast", "literal_eval"),
            ),
            bug=(
                "            if isinstance(node.op, UAdd):",
                "            if isinstance(node.op, USub):",
            ),
            instruction="`literal_eval('-5')` returns 5 and `literal_eval('+5')` returns -5; "
            "negative numbers inside lists and dicts come out positive too.",
            test_source=r"""
            import ast as _ast
            import random as _random

            _rng = _random.Random(0)
            _cases = ["-5", "+5", "-1.5", "1-2j", "-1+2j", "[-1, +2, (3, -4)]", "{'a': -1}",
                      "set()", "{-1, 2}", "--1", "-(1)", "'x'", "b'y'", "None", "-True", "1+2",
                      "-1e400", "(1,)", "{}", "[1, [2, [-3]]]"]
            _cases += [
                repr([_rng.choice([-1, 1]) * _rng.randrange(100) for _ in range(_rng.randrange(5))])
                for _ in range(200)
            ]
            for _src in _cases:
                try:
                    _want = _ast.literal_eval(_src)
                except ValueError:
                    try:
                        literal_eval(_src)
                    except ValueError:
                        continue
                    raise AssertionError(f"literal_eval({_src!r}) should raise ValueError")
                _got = literal_eval(_src)
                assert _got == _want and type(_got) is type(_want), (_src, _got, _want)
            """,
        ),
        bug_task(
            "fix-string-template-braced",
            join_sections(
                "import re as _re\nfrom collections import ChainMap as _ChainMap",
                stdlib_lines("string", "_sentinel_dict ="),
                stdlib_source("string", "Template"),
                stdlib_lines("string", "Template.__init_subclass__()"),
            ),
            bug=(
                "            # Check the most common path first.\n"
                "            named = mo.group('named') or mo.group('braced')",
                "            # Check the most common path first.\n"
                "            named = mo.group('named')",
            ),
            instruction="`Template('${who} likes $what').substitute(who='tim', what='kung pao')` "
            "raises `ValueError: ('Unrecognized named group in pattern', ...)` although "
            "`${who}` is a valid placeholder; `$who` works, and `safe_substitute` handles "
            "braces fine.",
            test_source=r"""
            import random as _random
            import string as _ref

            _rng = _random.Random(0)
            _pieces = ["$who", "${who}", "$what", "${what}", "$$", "text ", "$", "${", "$1",
                       "${missing}", "$missing", " ", "\n"]
            _mapping = {"who": "tim", "what": "kung pao"}
            for _ in range(600):
                _source = "".join(_rng.choice(_pieces) for _ in range(_rng.randrange(6)))
                _mine, _theirs = Template(_source), _ref.Template(_source)
                for _method in ("substitute", "safe_substitute"):
                    try:
                        _want = getattr(_theirs, _method)(_mapping)
                    except (KeyError, ValueError) as _error:
                        try:
                            getattr(_mine, _method)(_mapping)
                        except type(_error):
                            continue
                        raise AssertionError((_method, _source, "should raise", _error))
                    _got = getattr(_mine, _method)(_mapping)
                    assert _got == _want, (_method, _source, _got, _want)
                    assert getattr(_mine, _method)(**_mapping) == _want, (_method, _source)
                assert _mine.get_identifiers() == _theirs.get_identifiers(), _source
                assert _mine.is_valid() == _theirs.is_valid(), _source
            """,
        ),
        bug_task(
            "fix-posixpath-dirname-root",
            join_sections(
                stdlib_lines(
                    "posixpath",
                    "curdir =",
                    "pardir =",
                    "extsep =",
                    "sep =",
                    "pathsep =",
                    "defpath =",
                    "altsep =",
                    "devnull =",
                ),
                stdlib_imports("posixpath"),
                stdlib_source(
                    "posixpath",
                    "_get_sep",
                    "isabs",
                    "join",
                    "split",
                    "splitext",
                    "splitdrive",
                    "basename",
                    "dirname",
                ),
            ),
            bug=(
                "    i = p.rfind(sep) + 1\n    head = p[:i]\n",
                "    i = p.rfind(sep)\n    head = p[:i]\n",
            ),
            instruction="`dirname('/usr')` returns '' instead of '/', and `dirname('//x')` "
            "returns '/' instead of '//'. Deeper paths like '/usr/lib' work.",
            test_source=r"""
            import posixpath as _ref
            import random as _random

            _rng = _random.Random(0)
            _parts = ["", "", "a", "usr", "..", ".", "b.txt", ".bashrc", "x.tar.gz", "c."]
            for _ in range(800):
                _path = "/".join(_rng.choice(_parts) for _ in range(_rng.randrange(1, 5)))
                for _p in (_path, _path.encode()):
                    for _name in (
                        "isabs", "split", "splitext", "splitdrive", "basename", "dirname"
                    ):
                        _got, _want = globals()[_name](_p), getattr(_ref, _name)(_p)
                        assert _got == _want, (_name, _p, _got, _want)
                _more = [_rng.choice(_parts) for _ in range(_rng.randrange(3))]
                assert join(_path, *_more) == _ref.join(_path, *_more), (_path, _more)
            """,
        ),
    ]


def shlex_bug_task() -> Task:
    """All of ``shlex`` (the lexer class and the helpers): a missing negation in ``split``."""
    return bug_task(
        "fix-shlex-split-comments",
        join_sections(
            stdlib_imports("shlex"),
            stdlib_source("shlex", "shlex", "split", "join"),
            stdlib_lines("shlex", "_find_unsafe ="),
            stdlib_source("shlex", "quote"),
        ),
        bug=(
            "    if not comments:\n        lex.commenters = ''",
            "    if comments:\n        lex.commenters = ''",
        ),
        instruction="`split('a # b')` returns ['a'] although comments are off by default, and "
        "`split('a # b', comments=True)` keeps the comment. It is the other way round.",
        test_source=SHLEX_TESTS,
    )


def bug_tasks() -> list[Task]:
    """All ``bug`` tasks, the first suite's five first."""
    return (
        legacy_bug_tasks()
        + statistics_bug_tasks()
        + [heapq_bug_task()]
        + textwrap_bug_tasks()
        + [
            graphlib_bug_task(),
            json_bug_task(),
            random_bug_task(),
            difflib_bug_task(),
            calendar_bug_task(),
            reprlib_bug_task(),
            base64_bug_task(),
            functools_bug_task(),
            shlex_bug_task(),
        ]
        + small_bug_tasks()
    )


# --- the suite: features -------------------------------------------------------


def feature_task(
    task_id: str, instruction: str, original: str, expected: str, test_source: str
) -> Task:
    """Make a ``feature`` task: ``expected`` is a reference solution, the tests pin behaviour."""
    return Task(
        task_id, "edit", "feature", instruction, original, "python", expected, tests(test_source)
    )


TEXTWRAP_HINTED = {
    "def wrap(text, width=70, **kwargs):": (
        "def wrap(text: str, width: int = 70, **kwargs: Any) -> list[str]:"
    ),
    "def fill(text, width=70, **kwargs):": (
        "def fill(text: str, width: int = 70, **kwargs: Any) -> str:"
    ),
    "def shorten(text, width, **kwargs):": (
        "def shorten(text: str, width: int, **kwargs: Any) -> str:"
    ),
    "def indent(text, prefix, predicate=None):": (
        "def indent(\n    text: str, prefix: str, predicate: Callable[[str], bool] | None = None\n"
        ") -> str:"
    ),
}

VFORMAT_DOCSTRING = '''
    """Format ``format_string`` with ``args`` and ``kwargs``, the work behind ``vformat``.

    ``used_args`` is a set that collects the index or name of every argument a
    replacement field refers to. ``recursion_depth`` limits how deeply nested
    format specs (like ``{0:{1}}``) are expanded; ValueError is raised when it
    drops below zero. ``auto_arg_index`` is the next index for automatically
    numbered fields (``{}``), or False once a field was numbered by hand.

    Returns a tuple ``(formatted_string, auto_arg_index)`` so that nested calls
    can continue the automatic numbering.
    """
'''


def legacy_feature_tasks() -> list[Task]:
    """The first suite's five refactors, now with reference solutions and tests."""
    hints_input = join_sections(
        "from textwrap import TextWrapper",
        stdlib_source("textwrap", "wrap", "fill", "shorten", "indent"),
    )
    hints_expected = plant(
        hints_input,
        "from textwrap import TextWrapper\n",
        "from collections.abc import Callable\n"
        "from textwrap import TextWrapper\n"
        "from typing import Any\n",
    )
    for old, new in TEXTWRAP_HINTED.items():
        hints_expected = plant(hints_expected, old, new)
    relpath = join_sections(
        "import os\nimport genericpath\nfrom posixpath import abspath, commonprefix, join",
        stdlib_source("posixpath", "relpath"),
    )
    iglob = join_sections(
        "import os\n"
        "from glob import _glob0, _glob1, _glob2, _isdir, _isrecursive, _join, _lexists, has_magic",
        stdlib_source("glob", "_iglob"),
    )
    vformat = stdlib_source("string", "Formatter._vformat")
    vformat_expected = plant(
        vformat,
        "             auto_arg_index=0):\n",
        "             auto_arg_index=0):\n" + VFORMAT_DOCSTRING.strip("\n") + "\n",
    )
    fnmatch_input = join_sections(
        "import os\nimport posixpath\nfrom fnmatch import _compile_pattern",
        stdlib_source("fnmatch", "fnmatch", "filter", "fnmatchcase"),
    )
    fnmatch_expected = plant(
        fnmatch_input,
        "    result = []\n    pat = os.path.normcase(pat)\n",
        "    pat = os.path.normcase(pat)\n",
    )
    fnmatch_expected = plant(
        fnmatch_expected,
        "        for name in names:\n"
        "            if match(name):\n"
        "                result.append(name)\n",
        "        result = [name for name in names if match(name)]\n",
    )
    fnmatch_expected = plant(
        fnmatch_expected,
        "        for name in names:\n"
        "            if match(os.path.normcase(name)):\n"
        "                result.append(name)\n",
        "        result = [name for name in names if match(os.path.normcase(name))]\n",
    )
    return [
        feature_task(
            "hints-textwrap-functions",
            "Add type hints to the function signatures.",
            hints_input,
            hints_expected,
            r"""
            import inspect as _inspect
            import textwrap as _ref

            for _func in (wrap, fill, shorten, indent):
                _sig = _inspect.signature(_func)
                for _param in _sig.parameters.values():
                    if _param.kind is not _param.VAR_KEYWORD:
                        assert _param.annotation is not _param.empty, (_func.__name__, _param.name)
                assert _sig.return_annotation is not _sig.empty, (_func.__name__, "return")
            _text = "The quick brown fox jumps over the lazy dog. " * 4
            for _width in (12, 30, 70):
                assert wrap(_text, _width) == _ref.wrap(_text, _width), _width
                assert fill(_text, width=_width) == _ref.fill(_text, width=_width), _width
                assert shorten(_text, _width) == _ref.shorten(_text, _width), _width
                _got = wrap(_text, _width, initial_indent="> ")
                assert _got == _ref.wrap(_text, _width, initial_indent="> "), _width
            for _lines in ("a\n\n  b\n   \nc", "x", "", "one\ntwo\n"):
                assert indent(_lines, "  ") == _ref.indent(_lines, "  "), _lines
                _pred = lambda line: line.startswith("a")  # noqa: E731
                assert indent(_lines, "# ", _pred) == _ref.indent(_lines, "# ", _pred), _lines
            """,
        ),
        feature_task(
            "rename-posixpath-relpath",
            "Rename the variable `rel_list` to `relative_parts`.",
            relpath,
            rename(relpath, "rel_list", "relative_parts"),
            r"""
            import posixpath as _ref
            import random as _random

            _names = relpath.__code__.co_varnames
            assert "relative_parts" in _names and "rel_list" not in _names, _names
            _rng = _random.Random(0)
            _parts = ["a", "b", "..", ".", "", "usr"]
            for _ in range(500):
                _path = _rng.choice(["/", ""]) + "/".join(
                    _rng.choice(_parts) for _ in range(_rng.randrange(1, 4)))
                _start = _rng.choice([None, "/", "/a/b", "a", "../x", "/usr/lib"])
                if not _path:
                    continue
                _got, _want = relpath(_path, _start), _ref.relpath(_path, _start)
                assert _got == _want, (_path, _start, _got, _want)
                assert relpath(_path.encode(), b"/a") == _ref.relpath(_path.encode(), b"/a")
            try:
                relpath("")
            except ValueError:
                pass
            else:
                raise AssertionError("relpath('') should raise ValueError")
            """,
        ),
        feature_task(
            "rename-glob-iglob",
            "Rename the variable `glob_in_dir` to `scan_in_dir`.",
            iglob,
            rename(iglob, "glob_in_dir", "scan_in_dir"),
            r"""
            import glob as _ref
            import os as _os

            _names = _iglob.__code__.co_varnames
            assert "scan_in_dir" in _names and "glob_in_dir" not in _names, _names
            for _dir in ("src/pkg/sub", "src/.hidden", "docs", "empty"):
                _os.makedirs(_dir, exist_ok=True)
            for _file in ("src/a.py", "src/b.txt", "src/pkg/c.py", "src/pkg/sub/d.py",
                          "src/.hidden/e.py", "docs/index.md", "top.py", ".dot.py"):
                with open(_file, "w") as _handle:
                    _handle.write("x")
            _patterns = ["*.py", "src/*.py", "src/*", "src/**/*.py", "**", "**/", "src/pkg",
                         "src/*/", "*/*/*.py", "docs/index.md", "missing/*.py", "src/p?g/*",
                         "src/[ab].*", "src/**", "empty/"]
            for _pattern in _patterns:
                for _recursive in (False, True):
                    for _hidden in (False, True):
                        _got = list(_iglob(_pattern, None, None, _recursive, False, _hidden))
                        _want = list(_ref._iglob(_pattern, None, None, _recursive, False, _hidden))
                        assert _got == _want, (_pattern, _recursive, _hidden, _got, _want)
            """,
        ),
        feature_task(
            "docstring-string-vformat",
            "Add a docstring to `_vformat` that explains its parameters and what it returns.",
            vformat,
            vformat_expected,
            r"""
            import string as _ref

            _doc = _vformat.__doc__
            assert _doc and _doc.strip(), "_vformat has no docstring"
            for _param in ("format_string", "args", "kwargs", "used_args", "recursion_depth",
                           "auto_arg_index"):
                assert _param in _doc, f"the docstring does not mention {_param}"
            assert "return" in _doc.lower(), "the docstring does not say what is returned"
            _formatter = _ref.Formatter()
            _cases = [("{} and {}", (1, 2), {}), ("{0}{1}{0}", ("a", "b"), {}),
                      ("{x:>{w}}", (), {"x": 3, "w": 5}), ("{0.real!r:}", (4,), {}),
                      ("{:{}}", ("ab", 4), {}), ("no fields", (), {}), ("{{}}", (), {})]
            for _fmt, _args, _kwargs in _cases:
                _used, _ref_used = set(), set()
                _got = _vformat(_formatter, _fmt, _args, _kwargs, _used, 2)
                _want = _formatter._vformat(_fmt, _args, _kwargs, _ref_used, 2)
                assert _got == _want and _used == _ref_used, (_fmt, _got, _want)
            for _fmt in ("{}{0}", "{0}{}"):
                try:
                    _vformat(_formatter, _fmt, (1, 2), {}, set(), 2)
                except ValueError:
                    pass
                else:
                    raise AssertionError(f"{_fmt!r} should raise ValueError")
            """,
        ),
        feature_task(
            "listcomp-fnmatch-filter",
            "Convert the for loops in `filter` to list comprehensions.",
            fnmatch_input,
            fnmatch_expected,
            r"""
            import dis as _dis
            import fnmatch as _ref
            import random as _random


            def _ops(code):
                for _instruction in _dis.get_instructions(code):
                    yield _instruction.opname
                for _const in code.co_consts:
                    if hasattr(_const, "co_code"):
                        yield from _ops(_const)


            assert "append" not in filter.__code__.co_names, "filter still calls result.append"
            assert "LIST_APPEND" in set(_ops(filter.__code__)), "filter has no list comprehension"
            _rng = _random.Random(0)
            _names = ["a.py", "b.txt", "A.PY", "dir/c.py", ".hidden", "x", "a.py"]
            for _pat in ("*.py", "*", "?", "[ab].*", "*.PY", "dir/*", "[!a]*", ""):
                for _ in range(20):
                    _sample = [_rng.choice(_names) for _ in range(_rng.randrange(6))]
                    _got, _want = filter(_sample, _pat), _ref.filter(_sample, _pat)
                    assert _got == _want, (_sample, _pat, _got, _want)
                    assert filter(iter(_sample), _pat) == _want, ("iterator", _sample, _pat)
                for _name in _names:
                    assert fnmatch(_name, _pat) == _ref.fnmatch(_name, _pat), (_name, _pat)
            """,
        ),
    ]


def heapq_feature_task() -> Task:
    """Reject a negative ``n`` in ``nsmallest``/``nlargest`` instead of returning ``[]``."""
    original = join_sections(
        "from heapq import _heapify_max, _heapreplace_max, heapify, heapreplace",
        stdlib_source("heapq", "nsmallest", "nlargest"),
    )
    expected = original
    for doc_line in (
        "    Equivalent to:  sorted(iterable, key=key)[:n]\n",
        "    Equivalent to:  sorted(iterable, key=key, reverse=True)[:n]\n",
    ):
        expected = plant(
            expected,
            doc_line + '    """\n',
            doc_line
            + '    """\n    if n < 0:\n        raise ValueError("n must be non-negative")\n',
        )
    return feature_task(
        "feature-heapq-negative-n",
        'Make `nsmallest` and `nlargest` raise `ValueError("n must be non-negative")` when '
        "`n` is negative; right now they silently return an empty list.",
        original,
        expected,
        r"""
        import heapq as _ref
        import random as _random

        for _func in (nsmallest, nlargest):
            for _n in (-1, -3):
                for _data in ([3, 1, 2], iter([3, 1, 2]), [], range(10)):
                    try:
                        _func(_n, _data)
                    except ValueError as _error:
                        assert str(_error) == "n must be non-negative", str(_error)
                    else:
                        raise AssertionError((_func.__name__, _n, "should raise ValueError"))
                try:
                    _func(_n, [5, 4], key=abs)
                except ValueError:
                    pass
                else:
                    raise AssertionError((_func.__name__, _n, "with key should raise"))
        _rng = _random.Random(0)
        for _ in range(300):
            _data = [_rng.randrange(-9, 9) for _ in range(_rng.randrange(12))]
            _n = _rng.randrange(8)
            for _key in (None, abs):
                for _source in (list, iter):
                    _got = nsmallest(_n, _source(_data), key=_key)
                    assert _got == _ref.nsmallest(_n, _data, key=_key), (_data, _n, _got)
                    _got = nlargest(_n, _source(_data), key=_key)
                    assert _got == _ref.nlargest(_n, _data, key=_key), (_data, _n, _got)
        """,
    )


def genericpath_feature_task() -> Task:
    """``genericpath.commonprefix`` indexes its argument; make it take any iterable."""
    original = join_sections(
        stdlib_imports("genericpath"),
        stdlib_source(
            "genericpath",
            "exists",
            "isfile",
            "isdir",
            "getsize",
            "getmtime",
            "getatime",
            "getctime",
            "commonprefix",
            "samestat",
            "samefile",
            "sameopenfile",
        ),
    )
    expected = plant(
        original, "    if not m: return ''\n", "    m = list(m)\n    if not m: return ''\n"
    )
    return feature_task(
        "feature-commonprefix-iterable",
        "Make `commonprefix` accept any iterable of paths (a generator, a set, `dict.keys()`), "
        "not only lists and tuples. Right now a generator raises TypeError.",
        original,
        expected,
        r"""
        import os as _os
        import posixpath as _ref

        _groups = [["/usr/lib", "/usr/local", "/usr/bin"], ["abc", "abd"], ["x"], [],
                   ["same", "same"], ["/a/b", "/c"], [b"/usr/x", b"/usr/y"]]
        for _paths in _groups:
            _want = _ref.commonprefix(list(_paths))
            for _wrap in (list, tuple, iter, set, lambda p: dict.fromkeys(p).keys(),
                          lambda p: (x for x in p)):
                _got = commonprefix(_wrap(_paths))
                assert _got == _want, (_paths, _wrap, _got, _want)
        _parts = [["usr", "lib"], ["usr", "local"]]
        assert commonprefix(_parts) == ["usr"], commonprefix(_parts)
        assert commonprefix(iter(_parts)) == ["usr"], commonprefix(iter(_parts))
        with open("f.txt", "w") as _handle:
            _handle.write("data")
        _os.mkdir("d")
        assert exists("f.txt") and isfile("f.txt") and not isdir("f.txt")
        assert isdir("d") and not isfile("d") and not exists("nope")
        assert getsize("f.txt") == 4 and samefile("f.txt", "./f.txt")
        """,
    )


def statistics_feature_task() -> Task:
    """Extract the median functions' repeated sort-and-check block into a helper."""
    original = join_sections(
        stdlib_imports("statistics"),
        stdlib_source("statistics", "StatisticsError", "median", "median_low", "median_high"),
    )
    block = (
        "    data = sorted(data)\n"
        "    n = len(data)\n"
        "    if n == 0:\n"
        '        raise StatisticsError("no median for empty data")\n'
    )
    expected = plant(original, block, "    data = _sorted_nonempty(data)\n    n = len(data)\n", 3)
    expected = plant(
        expected,
        "def median(data):\n",
        "def _sorted_nonempty(data):\n"
        "    data = sorted(data)\n"
        "    if not data:\n"
        '        raise StatisticsError("no median for empty data")\n'
        "    return data\n\n\n"
        "def median(data):\n",
    )
    return feature_task(
        "refactor-statistics-median-helper",
        "`median`, `median_low` and `median_high` repeat the same block that sorts the data "
        "and raises for empty data. Extract it into a helper `_sorted_nonempty(data)` that "
        'returns the sorted data (raising `StatisticsError("no median for empty data")` when '
        "there is none) and use it in all three.",
        original,
        expected,
        r"""
        import random as _random
        import statistics as _ref

        assert _sorted_nonempty([3, 1, 2]) == [1, 2, 3], _sorted_nonempty([3, 1, 2])
        assert _sorted_nonempty(iter([2.5, -1])) == [-1, 2.5]
        try:
            _sorted_nonempty([])
        except StatisticsError as _error:
            assert str(_error) == "no median for empty data", str(_error)
        else:
            raise AssertionError("_sorted_nonempty([]) should raise StatisticsError")
        for _func in (median, median_low, median_high):
            _names = _func.__code__.co_names
            assert "_sorted_nonempty" in _names, (_func.__name__, "does not call the helper")
            assert "sorted" not in _names, (_func.__name__, "still sorts by itself")
            try:
                _func([])
            except StatisticsError:
                pass
            else:
                raise AssertionError((_func.__name__, "should raise StatisticsError"))
            _rng = _random.Random(0)
            for _ in range(200):
                _data = [_rng.randrange(-20, 20) for _ in range(_rng.randrange(1, 10))]
                _got, _want = _func(_data), getattr(_ref, _func.__name__)(_data)
                assert _got == _want, (_func.__name__, _data, _got, _want)
        """,
    )


def difflib_feature_task() -> Task:
    """Rename a parameter of ``get_close_matches`` everywhere, docstring included."""
    original = join_sections(
        stdlib_imports("difflib") + "from difflib import SequenceMatcher\n",
        stdlib_source("difflib", "get_close_matches"),
    )
    return feature_task(
        "rename-difflib-possibilities",
        "Rename the parameter `possibilities` of `get_close_matches` to `candidates` "
        "everywhere, including the docstring.",
        original,
        rename(original, "possibilities", "candidates"),
        r"""
        import difflib as _ref
        import inspect as _inspect

        _params = list(_inspect.signature(get_close_matches).parameters)
        assert _params == ["word", "candidates", "n", "cutoff"], _params
        assert "possibilities" not in get_close_matches.__code__.co_varnames
        assert "possibilities" not in (get_close_matches.__doc__ or ""), "docstring not updated"
        _words = ["ape", "apple", "peach", "puppy", "apply", "maple"]
        for _word in ("appel", "pech", "zzz", "mapel"):
            _want = _ref.get_close_matches(_word, _words)
            assert get_close_matches(_word, _words) == _want, _word
            assert get_close_matches(word=_word, candidates=_words) == _want, _word
            assert get_close_matches(_word, _words, 1, 0.3) == _ref.get_close_matches(
                _word, _words, 1, 0.3), _word
        try:
            get_close_matches("appel", possibilities=_words)
        except TypeError:
            pass
        else:
            raise AssertionError("the old keyword `possibilities` still works")
        """,
    )


def bisect_feature_task() -> Task:
    """Make the insort functions return the index they inserted at."""
    original = join_sections(
        stdlib_source("bisect", "insort_right", "bisect_right", "insort_left", "bisect_left"),
        stdlib_lines("bisect", "bisect =", "insort ="),
    )
    expected = plant(original, "    a.insert(lo, x)\n", "    a.insert(lo, x)\n    return lo\n", 2)
    return feature_task(
        "feature-bisect-insort-index",
        "Make `insort_left` and `insort_right` return the index at which `x` was inserted "
        "(they return None now).",
        original,
        expected,
        r"""
        import bisect as _ref
        import random as _random

        _rng = _random.Random(0)
        _key = lambda p: p[0]  # noqa: E731
        for _ in range(500):
            _a = sorted(_rng.randrange(8) for _ in range(_rng.randrange(10)))
            _x = _rng.randrange(-1, 9)
            _lo = _rng.randrange(len(_a) + 1)
            for _name, _where in (("insort_left", "bisect_left"), ("insort_right", "bisect_right"),
                                  ("insort", "bisect_right")):
                _mine, _theirs = list(_a), list(_a)
                _got = globals()[_name](_mine, _x, _lo)
                _want = getattr(_ref, _where)(_a, _x, _lo)
                getattr(_ref, _name)(_theirs, _x, _lo)
                assert _got == _want, (_name, _a, _x, _lo, _got, _want)
                assert _mine == _theirs, (_name, _a, _x, _mine, _theirs)
                _pairs = [(v, i) for i, v in enumerate(_a)]
                _got = globals()[_name](_pairs, (_x, -1), key=_key)
                _want = getattr(_ref, _where)([(v, i) for i, v in enumerate(_a)], _x, key=_key)
                assert _got == _want and _pairs[_got] == (_x, -1), (_name, "key", _got, _want)
        """,
    )


def fnmatch_feature_task() -> Task:
    """Add an ``invert`` flag to ``fnmatch.filter``."""
    original = join_sections(
        stdlib_imports("fnmatch") + "from fnmatch import translate\n",
        stdlib_source("fnmatch", "fnmatch", "_compile_pattern", "filter", "fnmatchcase"),
    )
    expected = plant(original, "def filter(names, pat):", "def filter(names, pat, invert=False):")
    expected = plant(
        expected, "            if match(name):", "            if (match(name) is None) == invert:"
    )
    expected = plant(
        expected,
        "            if match(os.path.normcase(name)):",
        "            if (match(os.path.normcase(name)) is None) == invert:",
    )
    return feature_task(
        "feature-fnmatch-filter-invert",
        "Add an optional `invert=False` parameter to `filter`; when it is true, return the "
        "names that do NOT match `pat` instead, in their original order.",
        original,
        expected,
        r"""
        import fnmatch as _ref
        import random as _random

        _rng = _random.Random(0)
        _names = ["a.py", "b.txt", "A.PY", "dir/c.py", ".hidden", "x", "a.py", ""]
        for _pat in ("*.py", "*", "?", "[ab].*", "*.PY", "dir/*", "[!a]*", ""):
            for _ in range(30):
                _sample = [_rng.choice(_names) for _ in range(_rng.randrange(7))]
                _matching = _ref.filter(_sample, _pat)
                _rest = [n for n in _sample if not _ref.fnmatch(n, _pat)]
                assert filter(_sample, _pat) == _matching, (_sample, _pat)
                assert filter(_sample, _pat, invert=False) == _matching, (_sample, _pat)
                _got = filter(_sample, _pat, invert=True)
                assert _got == _rest, (_sample, _pat, _got, _rest)
                assert filter(iter(_sample), _pat, True) == _rest, ("iterator", _sample, _pat)
            for _name in _names:
                assert fnmatch(_name, _pat) == _ref.fnmatch(_name, _pat), (_name, _pat)
        """,
    )


def feature_tasks() -> list[Task]:
    """All ``feature`` tasks, the first suite's five first."""
    return legacy_feature_tasks() + [
        heapq_feature_task(),
        genericpath_feature_task(),
        statistics_feature_task(),
        difflib_feature_task(),
        bisect_feature_task(),
        fnmatch_feature_task(),
    ]


# --- the suite: docs -----------------------------------------------------------


def doc_task(
    task_id: str,
    prose: str,
    typos: dict[str, str],
    instruction: str = TYPO_INSTRUCTION,
    language: str = "markdown",
) -> Task:
    """Make a ``doc`` task: plant ``typos`` in ``prose``, expect ``prose``; no tests."""
    typoed = plant_typos(prose, typos)
    return Task(task_id, "rewrite", "doc", instruction, typoed, language, prose, None)


def legacy_doc_tasks() -> list[Task]:
    """The first suite's four README excerpts, unchanged."""
    specs = [
        (
            "typo-rich-readme",
            readme_paragraphs(
                "rich",
                "Rich is a Python library",
                "The [Rich API]",
                "## Compatibility",
                "Rich works with Linux",
                "Rich works with [Jupyter",
                "## Rich REPL",
                "Rich can be installed in the Python REPL",
            ),
            {
                "beautiful": "beuatiful",
                "tracebacks": "tracebakcs",
                "configuration": "configuraiton",
            },
        ),
        (
            "typo-click-readme",
            readme_paragraphs(
                "click",
                "# Click",
                "Click is a Python package",
                "It aims to make",
                "Click in three points:",
                "-   Arbitrary nesting",
            ),
            {"composable": "compsoable", "frustration": "frustartion", "Automatic": "Autoamtic"},
        ),
        (
            "typo-jinja-readme",
            readme_paragraphs(
                "Jinja2",
                "# Jinja",
                "Jinja is a fast",
                "It includes:",
                "-   Template inheritance",
                "Jinja's philosophy",
            ),
            {
                "expressive": "epxressive",
                "inheritance": "inhertiance",
                "sandboxed": "sanbdoxed",
                "philosophy": "philsoophy",
            },
        ),
        (
            "typo-flask-readme",
            readme_paragraphs(
                "Flask",
                "# Flask",
                "Flask is a lightweight",
                "Flask offers suggestions",
                "[WSGI]: ",
            ),
            {"lightweight": "lihgtweight", "enforce": "enfroce", "extensions": "extnesions"},
        ),
    ]
    return [doc_task(task_id, prose, typos) for task_id, prose, typos in specs]


def new_doc_tasks() -> list[Task]:
    """Longer README excerpts, several with fenced code blocks (kept byte for byte)."""
    return [
        doc_task(
            "typo-typer-readme",
            readme_lines("typer", "Typer is a library for building", "## Example upgrade"),
            {
                "arbitrarily": "arbitrairly",
                "This script doesn't even use": "This script doesn't even even use",
                "duplication": "dupilcation",
            },
            "Fix the spelling mistakes; change nothing else.",
        ),
        doc_task(
            "typo-huggingface-hub-readme",
            readme_lines("huggingface_hub", "## Use the Python library", "## Integrating with"),
            {
                "recommend": "reocmmend",
                "reliable": "relaible",
                "Files will be downloaded in": "Files will be be downloaded in",
            },
        ),
        doc_task(
            "typo-safetensors-readme",
            readme_lines("safetensors", "## Installation"),
            {"Should be enough": "Should be be enough", "library": "lirbary"},
            "Please fix the typos in this README.",
        ),
        doc_task(
            "typo-gguf-readme",
            readme_lines("gguf", "## Development", "## TODO"),
            {
                "Maintainers": "Maintaienrs",
                "automatically": "automatcially",
                "Upload the generated": "Upload the the generated",
                "semantic": "semnatic",
            },
        ),
        doc_task(
            "typo-requests-readme",
            readme_lines("requests", "**Requests** is a simple", "---"),
            {
                "officially": "officailly",
                "Persistence": "Persistnece",
                "you may need to add": "you may need to to add",
            },
            "Correct the typos, nothing else.",
        ),
        doc_task(
            "typo-pytest-readme",
            readme_lines("pytest", "The ``pytest`` framework", "Bugs/Requests"),
            {
                "introspection": "introspetcion",
                "parametrized": "parmaetrized",
                "thriving": "thrivign",
            },
            language="rst",
        ),
        doc_task(
            "typo-numpy-readme",
            readme_lines("numpy", "NumPy is the fundamental package"),
            {
                "sophisticated": "sophsiticated",
                "enthusiasm": "enthusaism",
                "We also have a biweekly": "We also have a a biweekly",
                "presentations": "presentatoins",
            },
            "Fix the typos and the doubled word.",
        ),
    ]


def doc_tasks() -> list[Task]:
    """All ``doc`` tasks, the first suite's four first."""
    return legacy_doc_tasks() + new_doc_tasks()


# --- the suite: insertions -------------------------------------------------------

# The hand-written comment translations are checked against these words: none may be left in
# the edited program's comments. Each list holds only words that no English comment would use.
GERMAN_WORDS = (
    "und der das ist wenn nach oben unten leer wurzel blatt eltern kleinere kleineren kindes "
    "jetzt dort bis eine einem gerade ungerade größte wieder setzen passt stelle folgen platz"
)
FRENCH_WORDS = (
    "le la les des est pas une nous avons donc répertoire courant résoudre lien liens "
    "symbolique chemin déjà vu utiliser valeur boucle lever renvoyer partie résolue reste "
    "inchangé résolu"
)

HEAPQ_GERMAN = {
    "    # raises appropriate IndexError if heap is empty\n": (
        "    # löst den passenden IndexError aus, wenn der Heap leer ist\n"
    ),
    "    # Transform bottom-up.  The largest index there's any point to looking at\n"
    "    # is the largest with a child index in-range, so must have 2*i + 1 < n,\n"
    "    # or i < (n-1)/2.  If n is even = 2*j, this is (2*j-1)/2 = j-1/2 so\n"
    "    # j-1 is the largest, which is n//2 - 1.  If n is odd = 2*j+1, this is\n"
    "    # (2*j+1-1)/2 = j so j-1 is the largest, and that's again n//2-1.\n": (
        "    # Von unten nach oben umwandeln.  Der größte Index, den anzusehen sich lohnt,\n"
        "    # ist der größte mit einem gültigen Kindindex, also muss 2*i + 1 < n gelten,\n"
        "    # d.h. i < (n-1)/2.  Ist n gerade = 2*j, so ist das (2*j-1)/2 = j-1/2, also\n"
        "    # ist j-1 der größte, und das ist n//2 - 1.  Ist n ungerade = 2*j+1, so ist\n"
        "    # das (2*j+1-1)/2 = j, also ist j-1 der größte, und das ist wieder n//2-1.\n"
    ),
    "    # Follow the path to the root, moving parents down until finding a place\n"
    "    # newitem fits.\n": (
        "    # Dem Pfad zur Wurzel folgen und dabei Eltern nach unten schieben, bis eine\n"
        "    # Stelle gefunden ist, an die newitem passt.\n"
    ),
    "    # Bubble up the smaller child until hitting a leaf.\n": (
        "    # Das kleinere Kind nach oben steigen lassen, bis ein Blatt erreicht ist.\n"
    ),
    "    # leftmost child position\n": "    # Position des linken Kindes\n",
    "        # Set childpos to index of smaller child.\n": (
        "        # childpos auf den Index des kleineren Kindes setzen.\n"
    ),
    "        # Move the smaller child up.\n": (
        "        # Das kleinere Kind nach oben verschieben.\n"
    ),
    "    # The leaf at pos is empty now.  Put newitem there, and bubble it up\n"
    "    # to its final resting place (by sifting its parents down).\n": (
        "    # Das Blatt an pos ist jetzt leer.  newitem dort ablegen und nach oben an\n"
        "    # seinen endgültigen Platz steigen lassen (indem seine Eltern nach unten sinken).\n"
    ),
}

REALPATH_FRENCH = {
    "            # current dir\n": "            # répertoire courant\n",
    "            # parent dir\n": "            # répertoire parent\n",
    "        # Resolve the symbolic link\n": "        # Résoudre le lien symbolique\n",
    "            # Already seen this path\n": "            # Chemin déjà vu\n",
    "                # use cached value\n": "                # utiliser la valeur en cache\n",
    "            # The symlink is not resolved, so we must have a symlink loop.\n": (
        "            # Le lien symbolique n'est pas résolu, nous avons donc une boucle de liens.\n"
    ),
    "                # Raise OSError(errno.ELOOP)\n": (
        "                # Lever OSError(errno.ELOOP)\n"
    ),
    "                # Return already resolved part + rest of the path unchanged.\n": (
        "                # Renvoyer la partie déjà résolue + le reste du chemin inchangé.\n"
    ),
    "# not resolved symlink\n": "# lien symbolique non résolu\n",
    "# resolved symlink\n": "# lien symbolique résolu\n",
}

# Reference docstrings for the docstring tasks: they show the tests can be met, but wording
# varies too much for an exact answer, so these tasks have no ``expected``.
POSIXPATH_DOCSTRINGS = {
    "def _get_sep(path):\n": (
        "Return the path separator for ``path``: b'/' for a bytes path, '/' for a str."
    ),
    "def split(p):\n": (
        "Split the path ``p`` at its last slash and return the tuple (head, tail).\n\n"
        "    Trailing slashes are removed from head unless it consists only of slashes.\n    "
    ),
    "def basename(p):\n": "Return the final component of ``p``: everything after the last slash.",
    "def dirname(p):\n": (
        "Return the directory part of ``p``, without trailing slashes unless it is the root."
    ),
    "def isabs(s):\n": (
        "Return True if the path ``s`` is absolute (starts with a slash), else False."
    ),
}
SHLEX_DOCSTRINGS = {
    "def split(s, comments=False, posix=True):\n": (
        "Split the string ``s`` with shell-like syntax and return the list of words.\n\n"
        "    Comments are dropped unless ``comments`` is true; ``posix`` selects POSIX rules.\n    "
    ),
    "def join(split_command):\n": (
        "Quote each item of ``split_command`` and return them joined with spaces."
    ),
    "def quote(s):\n": (
        "Return a shell-escaped version of ``s`` that a shell reads back as a single word."
    ),
}


def strip_docstrings(source: str) -> str:
    """Remove the docstring of every function in ``source``; each must stand on its own lines."""
    lines = source.splitlines(keepends=True)
    drop: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and ast.get_docstring(node) is not None:
            doc = node.body[0]
            assert len(node.body) > 1 and doc.lineno > node.lineno, node.name
            assert doc.end_lineno is not None
            drop.update(range(doc.lineno - 1, doc.end_lineno))
    return "".join(line for number, line in enumerate(lines) if number not in drop)


def add_docstrings(source: str, docstrings: dict[str, str]) -> str:
    """Put a docstring (one level of indentation) under each given ``def`` line."""
    for def_line, doc in docstrings.items():
        source = plant(source, def_line, f'{def_line}    """{doc}"""\n')
    return source


def translate_tests(original: str, foreign_words: str, english_words: str, behaviour: str) -> str:
    """Tests for a comment translation task: no word of ``foreign_words`` is left in a comment,
    the comments still hold at least half as many words as ``original``'s, 3+ of
    ``english_words`` appear in them, every function's syntax tree is unchanged (the input is
    embedded to compare with), and ``behaviour`` (more test code) passes."""
    comments = [
        token.string
        for token in tokenize.generate_tokens(io.StringIO(original).readline)
        if token.type == tokenize.COMMENT
    ]
    n_words = len(re.findall(r"[^\W\d_]+", " ".join(comments)))
    assert n_words >= 20, f"only {n_words} words in comments"
    checks = tests(
        rf"""
        import ast as _ast
        import io as _io
        import re as _re
        import tokenize as _tokenize

        _FOREIGN = set({foreign_words!r}.split())
        _ENGLISH = set({english_words!r}.split())
        with open(__file__, encoding="utf-8") as _handle:
            _program = _handle.read()
        _comments = [
            _token.string
            for _token in _tokenize.generate_tokens(_io.StringIO(_program).readline)
            if _token.type == _tokenize.COMMENT
        ]
        _words = _re.findall(r"[^\W\d_]+", " ".join(_comments).lower())
        _left = sorted(set(_words) & _FOREIGN)
        assert not _left, f"comments still hold untranslated words: {{_left}}"
        assert len(_words) >= {n_words // 2}, f"comments were dropped: {{_comments}}"
        assert len(set(_words) & _ENGLISH) >= 3, f"comments are not in English: {{_comments}}"


        def _functions(source):
            return {{
                _node.name: _ast.dump(_node)
                for _node in _ast.parse(source).body
                if isinstance(_node, _ast.FunctionDef)
            }}


        _mine = _functions(_program)
        for _name, _dump in _functions(_INPUT).items():
            assert _mine.get(_name) == _dump, f"the code of {{_name}} changed"
        """
    )
    return checks + "\n" + tests(behaviour)


def embed_input(test_source: str, text: str) -> str:
    """Define ``_INPUT`` (the task's input, as a string) at the start of ``test_source``."""
    assert "'''" not in text and "\\" not in text
    return f"_INPUT = r'''{text}'''\n\n" + test_source


def insertion_task(
    task_id: str, instruction: str, original: str, expected: str | None, test_source: str
) -> Task:
    """Make an ``insertion`` task; ``expected`` is None where only the tests can judge."""
    return Task(
        task_id, "edit", "insertion", instruction, original, "python", expected, test_source
    )


HINT_TESTS = r"""
import inspect as _inspect
import typing as _typing


def _check_hints(func, param_type, return_check):
    _hints = _typing.get_type_hints(func)
    for _name in _inspect.signature(func).parameters:
        assert _name in _hints, (func.__name__, _name, "has no type hint")
        assert _hints[_name] is param_type, (func.__name__, _name, _hints[_name])
    assert "return" in _hints, (func.__name__, "has no return type")
    assert return_check(_hints["return"]), (func.__name__, "returns", _hints["return"])


def _tuple_of(item_type, size):
    def _check(hint):
        _args = _typing.get_args(hint)
        return _typing.get_origin(hint) is tuple and _args in (
            (item_type,) * size, (item_type, ...))
    return _check
"""


def hint_tests(checks: str) -> str:
    """The type-hint helpers, then `checks` (which call them and pin the behaviour)."""
    return tests(HINT_TESTS) + "\n\n" + tests(checks)


def hints_colorsys_task() -> tuple[Task, str]:
    """Type hints for ``colorsys``'s HSV conversions."""
    original = stdlib_source("colorsys", "rgb_to_hsv", "hsv_to_rgb")
    expected = plant(
        original,
        "def rgb_to_hsv(r, g, b):",
        "def rgb_to_hsv(r: float, g: float, b: float) -> tuple[float, float, float]:",
    )
    expected = plant(
        expected,
        "def hsv_to_rgb(h, s, v):",
        "def hsv_to_rgb(h: float, s: float, v: float) -> tuple[float, float, float]:",
    )
    task = insertion_task(
        "insert-hints-colorsys-hsv",
        "Add type hints to every parameter and the return value of `rgb_to_hsv` and "
        "`hsv_to_rgb`. All color components are floats in [0.0, 1.0], and both functions "
        "return a tuple of three floats.",
        original,
        expected,
        hint_tests(
            r"""
            for _func in (rgb_to_hsv, hsv_to_rgb):
                _check_hints(_func, float, _tuple_of(float, 3))
            """
        )
        + "\n"
        + tests(COLORSYS_TESTS),
    )
    return task, expected


def hints_calendar_task() -> tuple[Task, str]:
    """Type hints for ``calendar``'s date helpers."""
    original = join_sections(
        stdlib_imports("calendar"),
        stdlib_lines("calendar", "January =", "February =", "mdays ="),
        stdlib_source("calendar", *CALENDAR_DATE_HELPERS),
    )
    expected = original
    for old, new in {
        "def isleap(year):": "def isleap(year: int) -> bool:",
        "def leapdays(y1, y2):": "def leapdays(y1: int, y2: int) -> int:",
        "def weekday(year, month, day):": "def weekday(year: int, month: int, day: int) -> int:",
        "def monthrange(year, month):": "def monthrange(year: int, month: int) -> tuple[int, int]:",
        "def _monthlen(year, month):": "def _monthlen(year: int, month: int) -> int:",
        "def _prevmonth(year, month):": "def _prevmonth(year: int, month: int) -> tuple[int, int]:",
        "def _nextmonth(year, month):": "def _nextmonth(year: int, month: int) -> tuple[int, int]:",
    }.items():
        expected = plant(expected, old, new)
    task = insertion_task(
        "insert-hints-calendar-dates",
        "Add type hints to every parameter and the return value of the module-level "
        "functions (`isleap`, `leapdays`, `weekday`, `monthrange`, `_monthlen`, `_prevmonth` "
        "and `_nextmonth`; not the methods of `IllegalMonthError`). Years, months and days "
        "are ints; give each function the precise type it returns.",
        original,
        expected,
        hint_tests(
            r"""
            import calendar as _ref

            _check_hints(isleap, int, lambda hint: hint is bool)
            for _func in (leapdays, weekday, _monthlen):
                _check_hints(_func, int, lambda hint: hint is int)
            for _func in (monthrange, _prevmonth, _nextmonth):
                _check_hints(_func, int, _tuple_of(int, 2))
            for _year in list(range(1895, 1905)) + list(range(1995, 2030)) + [1, 2400, 9999]:
                assert isleap(_year) == _ref.isleap(_year), _year
                assert leapdays(_year, 2100) == _ref.leapdays(_year, 2100), _year
                for _month in range(1, 13):
                    assert monthrange(_year, _month) == _ref.monthrange(_year, _month)
                    assert weekday(_year, _month, 28) == _ref.weekday(_year, _month, 28)
                    assert _monthlen(_year, _month) == _ref._monthlen(_year, _month)
                    assert _prevmonth(_year, _month) == _ref._prevmonth(_year, _month)
                    assert _nextmonth(_year, _month) == _ref._nextmonth(_year, _month)
            assert weekday(10000, 1, 1) == _ref.weekday(10000, 1, 1)
            for _month in (0, 13):
                try:
                    monthrange(2024, _month)
                except IllegalMonthError as _error:
                    assert str(_error) == f"bad month number {_month}; must be 1-12", str(_error)
                else:
                    raise AssertionError(f"monthrange(2024, {_month}) should raise")
            """
        ),
    )
    return task, expected


def docstring_tests(names: str, min_words: int) -> str:
    """Every function in ``names`` has its own docstring of ``min_words``+ words that says
    what it returns."""
    return tests(
        rf"""
        _funcs = [{", ".join(names.split())}]
        for _func in _funcs:
            _doc = _func.__doc__
            assert _doc and len(_doc.split()) >= {min_words}, (_func.__name__, _doc)
            assert "return" in _doc.lower(), (_func.__name__, "does not say what it returns")
        assert len({{_func.__doc__.strip() for _func in _funcs}}) == len(_funcs), "same docstrings"
        """
    )


def docstring_posixpath_task() -> tuple[Task, str]:
    """Docstrings for ``posixpath``'s path splitting functions (stripped from the source)."""
    original = join_sections(
        "import os",
        strip_docstrings(
            stdlib_source("posixpath", "_get_sep", "split", "basename", "dirname", "isabs")
        ),
    )
    reference = add_docstrings(original, POSIXPATH_DOCSTRINGS)
    task = insertion_task(
        "insert-docstring-posixpath-split",
        "Add a docstring to each function (`_get_sep`, `split`, `basename`, `dirname` and "
        "`isabs`) that says what the function does and what it returns. Do not change the "
        "code.",
        original,
        None,
        docstring_tests("_get_sep split basename dirname isabs", 6)
        + "\n"
        + tests(
            r"""
            import posixpath as _ref
            import random as _random

            _rng = _random.Random(0)
            _parts = ["", "a", "bc", ".", "..", "d.txt", "/", "//"]
            for _ in range(500):
                _path = "/".join(_rng.choice(_parts) for _ in range(_rng.randrange(5)))
                for _p in (_path, _path.encode()):
                    for _name in ("split", "basename", "dirname", "isabs"):
                        _got, _want = globals()[_name](_p), getattr(_ref, _name)(_p)
                        assert _got == _want, (_name, _p, _got, _want)
                    assert _get_sep(_p) == ("/" if isinstance(_p, str) else b"/"), _p
            """
        ),
    )
    return task, reference


def docstring_shlex_task() -> tuple[Task, str]:
    """Docstrings for ``shlex.split``, ``join`` and ``quote`` (stripped from the source)."""
    original = join_sections(
        "import re\nfrom shlex import shlex",
        stdlib_lines("shlex", "_find_unsafe ="),
        strip_docstrings(stdlib_source("shlex", "split", "join", "quote")),
    )
    reference = add_docstrings(original, SHLEX_DOCSTRINGS)
    task = insertion_task(
        "insert-docstring-shlex-quote",
        "Add a docstring to each of `split`, `join` and `quote` that says what the function "
        "does with its arguments and what it returns. Do not change the code.",
        original,
        None,
        docstring_tests("split join quote", 8) + "\n" + tests(SHLEX_TESTS),
    )
    return task, reference


def function_colorsys_task() -> tuple[Task, str]:
    """A new ``rgb_to_hex`` next to ``colorsys``'s HLS conversions."""
    original = join_sections(
        stdlib_lines("colorsys", "ONE_THIRD =", "ONE_SIXTH =", "TWO_THIRD ="),
        stdlib_source("colorsys", "rgb_to_hls", "hls_to_rgb", "_v"),
    )
    expected = (
        original
        + "\n\n"
        + normalize(
            """
            def rgb_to_hex(r, g, b):
                return '#%02x%02x%02x' % (round(r*255), round(g*255), round(b*255))
            """
        )
    )
    task = insertion_task(
        "insert-function-colorsys-hex",
        "Add a function `rgb_to_hex(r, g, b)` that returns the color as a string like "
        "`'#ff8000'`: each component (a float in [0.0, 1.0]) is multiplied by 255, rounded "
        "to the nearest integer and written as two lowercase hexadecimal digits.",
        original,
        expected,
        tests(
            r"""
            import random as _random

            for _rgb, _want in [((1.0, 0.0, 0.0), "#ff0000"), ((0.0, 0.0, 0.0), "#000000"),
                                ((1.0, 1.0, 1.0), "#ffffff"), ((1.0, 0.5, 0.0), "#ff8000"),
                                ((0.2, 0.4, 0.6), "#336699"), ((0.004, 0.996, 0.5), "#01fe80")]:
                assert rgb_to_hex(*_rgb) == _want, (_rgb, rgb_to_hex(*_rgb), _want)
            _rng = _random.Random(1)
            for _ in range(500):
                _levels = [_rng.randrange(256) for _ in range(3)]
                _rgb = [min(1.0, max(0.0, (k + _rng.uniform(-0.4, 0.4)) / 255)) for k in _levels]
                _want = "#%02x%02x%02x" % tuple(_levels)
                assert rgb_to_hex(*_rgb) == _want, (_rgb, rgb_to_hex(*_rgb), _want)
            _hls = rgb_to_hls(0.8, 0.4, 0.2)
            assert rgb_to_hex(*hls_to_rgb(*_hls)) == "#cc6633", _hls
            """
        )
        + "\n"
        + tests(COLORSYS_TESTS),
    )
    return task, expected


def function_bisect_task() -> tuple[Task, str]:
    """The ``bisect`` documentation's ``index`` recipe, added next to ``bisect_left``."""
    original = stdlib_source("bisect", "insort_left", "bisect_left")
    expected = (
        original
        + "\n\n"
        + normalize(
            """
            def index(a, x):
                i = bisect_left(a, x)
                if i != len(a) and a[i] == x:
                    return i
                raise ValueError
            """
        )
    )
    task = insertion_task(
        "insert-function-bisect-index",
        "Add a function `index(a, x)` that returns the index of the leftmost item equal to "
        "`x` in the sorted list `a`, found with `bisect_left` (not a linear search), and "
        "raises `ValueError` when `x` is not in `a`.",
        original,
        expected,
        tests(
            r"""
            import bisect as _ref
            import random as _random

            assert "bisect_left" in index.__code__.co_names, "index does not call bisect_left"
            assert index([1, 2, 2, 3], 2) == 1 and index([5], 5) == 0
            _rng = _random.Random(0)
            _key = lambda p: p[0]  # noqa: E731
            for _ in range(500):
                _a = sorted(_rng.randrange(10) for _ in range(_rng.randrange(12)))
                _x = _rng.randrange(-1, 11)
                if _x in _a:
                    assert index(_a, _x) == _a.index(_x), (_a, _x, index(_a, _x))
                else:
                    try:
                        index(_a, _x)
                    except ValueError:
                        pass
                    else:
                        raise AssertionError(f"index({_a}, {_x}) should raise ValueError")
                _lo = _rng.randrange(len(_a) + 1)
                _got, _want = bisect_left(_a, _x, _lo), _ref.bisect_left(_a, _x, _lo)
                assert _got == _want, (_a, _x, _lo, _got, _want)
                _pairs = [(v, i) for i, v in enumerate(_a)]
                _got = bisect_left(_pairs, _x, key=_key)
                assert _got == _ref.bisect_left(_pairs, _x, key=_key), (_pairs, _x, _got)
                _mine, _theirs = list(_a), list(_a)
                insort_left(_mine, _x)
                _ref.insort_left(_theirs, _x)
                assert _mine == _theirs, (_a, _x, _mine, _theirs)
            """
        ),
    )
    return task, expected


def translation_task(
    task_id: str,
    language: str,
    docstrings: str,
    original: str,
    translations: dict[str, str],
    tests_for: Callable[[str], str],
) -> tuple[Task, str]:
    """A task whose comments were put into `language` (each English phrase replaced by its
    translation) and must be put back; `tests_for(foreign input)` makes its tests."""
    foreign = original
    for english, translation in translations.items():
        foreign = plant(foreign, english, translation)
    task = insertion_task(
        task_id,
        f"The comments in this code are written in {language}. Translate the comments into "
        f"English; do not change the code or the {docstrings}.",
        foreign,
        original,
        tests_for(foreign),
    )
    return task, original


def translate_heapq_task() -> tuple[Task, str]:
    """``heapq``'s core functions with their comments put into German."""
    original = stdlib_source("heapq", "heappush", "heappop", "heapify", "_siftdown", "_siftup")
    return translation_task(
        "translate-comments-heapq-siftup",
        "German",
        "docstrings",
        original,
        HEAPQ_GERMAN,
        lambda foreign: embed_input(
            translate_tests(
                original,
                GERMAN_WORDS,
                "heap child smaller leaf root parent parents index largest empty position",
                r"""
                import heapq as _ref
                import random as _random

                _rng = _random.Random(0)
                for _ in range(300):
                    _data = [_rng.randrange(20) for _ in range(_rng.randrange(15))]
                    _mine, _theirs = list(_data), list(_data)
                    heapify(_mine)
                    _ref.heapify(_theirs)
                    assert _mine == _theirs, (_data, _mine, _theirs)
                    for _step in range(_rng.randrange(1, 20)):
                        if _theirs and _rng.random() < 0.4:
                            assert heappop(_mine) == _ref.heappop(_theirs), _data
                        else:
                            _x = _rng.randrange(20)
                            heappush(_mine, _x)
                            _ref.heappush(_theirs, _x)
                        assert _mine == _theirs, (_data, _mine, _theirs)
                try:
                    heappop([])
                except IndexError:
                    pass
                else:
                    raise AssertionError("heappop([]) should raise IndexError")
                """,
            ),
            foreign,
        ),
    )


def translate_realpath_task() -> tuple[Task, str]:
    """``posixpath.realpath`` with its comments put into French."""
    original = join_sections(
        "import os\nimport stat\nfrom posixpath import abspath, isabs, join, split",
        stdlib_source("posixpath", "realpath", "_joinrealpath"),
    )
    return translation_task(
        "translate-comments-posixpath-realpath",
        "French",
        "docstring",
        original,
        REALPATH_FRENCH,
        lambda foreign: embed_input(
            translate_tests(
                original,
                FRENCH_WORDS,
                "current parent directory dir resolve resolved symbolic link symlink path "
                "seen cached value loop rest unchanged",
                r"""
                import os as _os
                import posixpath as _ref

                _os.makedirs("real/sub")
                _os.symlink("real", "link")
                _os.symlink("sub/../..", "real/up")
                _os.symlink("loop2", "loop1")
                _os.symlink("loop1", "loop2")
                _os.symlink("missing/x", "dangling")
                _paths = ["link", "link/sub", "link/up/link", "real/./sub/..", "loop1",
                          "loop1/x", "dangling", "dangling/y", "nope/..", "/", "", ".", "..",
                          "//a", b"link/sub", "link/../link/sub/"]
                for _path in _paths:
                    assert realpath(_path) == _ref.realpath(_path), _path
                    try:
                        _want = _ref.realpath(_path, strict=True)
                    except OSError as _error:
                        try:
                            realpath(_path, strict=True)
                        except OSError as _mine:
                            assert _mine.errno == _error.errno, (_path, _mine, _error)
                        else:
                            raise AssertionError(f"realpath({_path!r}, strict=True) should raise")
                    else:
                        assert realpath(_path, strict=True) == _want, _path
                """,
            ),
            foreign,
        ),
    )


def insertion_tasks_and_answers() -> list[tuple[Task, str]]:
    """Each ``insertion`` task with an answer its tests must pass: ``expected``, or for the
    docstring tasks a hand-written reference that is not written to the file."""
    return [
        hints_colorsys_task(),
        hints_calendar_task(),
        docstring_posixpath_task(),
        docstring_shlex_task(),
        function_colorsys_task(),
        function_bisect_task(),
        translate_heapq_task(),
        translate_realpath_task(),
    ]


def insertion_tasks() -> list[Task]:
    """All ``insertion`` tasks."""
    return [task for task, _ in insertion_tasks_and_answers()]


def reference_answers() -> dict[str, str]:
    """The hand-written answers of the tasks without ``expected``, by task id."""
    return {task.id: answer for task, answer in insertion_tasks_and_answers() if not task.expected}


# --- checks --------------------------------------------------------------------


def run_program(source: str) -> tuple[int, str]:
    """Run ``source`` as the bench does: ``python -I`` in an empty temp dir; (status, stderr)."""
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "program.py").write_text(source, encoding="utf-8")
        try:
            done = subprocess.run(
                [sys.executable, "-I", "program.py"],
                cwd=tmp,
                capture_output=True,
                text=True,
                timeout=TEST_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return -1, f"timed out after {TEST_TIMEOUT_S} s"
        return done.returncode, done.stderr


def test_problem(task: Task, answer: str) -> str | None:
    """Why the tests are unfit: they must pass on ``answer`` (``expected`` or a reference
    answer) and fail on ``input``."""
    assert task.tests is not None
    status, stderr = run_program(answer + "\n" + task.tests)
    if status != 0:
        return f"{task.id}: tests fail on the answer:\n{stderr[-3000:]}"
    status, _ = run_program(task.input + "\n" + task.tests)
    if status == 0:
        return f"{task.id}: tests pass on the unedited input"
    return None


def check(task: Task) -> None:
    """Fail loudly on a malformed task (the slow test runs are in ``check_tests``)."""
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", task.id), task.id
    for text in (task.input, task.expected or task.input):
        assert text.endswith("\n") and not text.endswith("\n\n"), task.id
        assert all(line == line.rstrip() for line in text.splitlines()), task.id
    n_lines = len(task.input.splitlines())
    if task.id not in SHORT_LEGACY_IDS:
        assert n_lines in INPUT_LINES, f"{task.id}: {n_lines} lines"
    if task.group == "insertion":
        assert n_lines in INSERTION_LINES, f"{task.id}: {n_lines} lines"
    assert task.input != task.expected, f"{task.id}: nothing planted"
    assert (task.group == "doc") == (task.tests is None), f"{task.id}: tests vs group"
    kinds = {"bug": "fix", "feature": "edit", "doc": "rewrite", "insertion": "edit"}
    assert task.kind == kinds[task.group], task.id
    assert task.expected is not None or task.group == "insertion", f"{task.id}: no expected"
    if task.language == "python":
        ast.parse(task.input)  # planted bugs must still be valid Python
        ast.parse(task.expected or "")


def build_tasks() -> list[Task]:
    """Build and check the whole suite, in file order."""
    tasks = bug_tasks() + doc_tasks() + feature_tasks() + insertion_tasks()
    assert len({t.id for t in tasks}) == len(tasks), "duplicate task ids"
    for task in tasks:
        check(task)
    references = reference_answers()
    tested = [t for t in tasks if t.tests is not None]
    answers = [references[t.id] if t.expected is None else t.expected for t in tested]
    with ThreadPoolExecutor(max_workers=2) as pool:
        problems = pool.map(test_problem, tested, answers)
    problems = [p for p in problems if p]
    assert not problems, "\n\n".join(problems)
    return tasks


def main() -> None:
    """Write the suite and print one summary line per task."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    args = parser.parse_args()

    tasks = build_tasks()
    lines = [json.dumps(asdict(task), ensure_ascii=False) + "\n" for task in tasks]
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text("".join(lines), encoding="utf-8")
    for task in tasks:
        print(f"{task.id:38} {task.group:9} {len(task.input.splitlines()):3} lines")
    print(f"wrote {len(tasks)} tasks to {args.output}")


if __name__ == "__main__":
    main()
