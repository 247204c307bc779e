"""A Python file's own tests: the asserts of its `if __name__ == "__main__":` block, its
top-level `test_*` functions that take no argument, and its `unittest.TestCase` classes. Where
a file has them, they judge its candidates beside its docstrings' examples (editing/examples.py):
a fix that leaves the failure they show, or breaks what they guard, is wrong.

They run in the module's namespace after the module is imported under its own name, so that
importing it runs its `__main__` block no more than `python -m doctest` does; the block is then
run alone, and only where it asserts something (one that parses arguments, reads files or
serves requests is a program's entry point, not a test). A test that fails for want of what
its check withholds (a file, a third-party module, its standard input: an OSError, an
ImportError, an EOFError) says nothing of the code: `CannotJudge`, and where the input's tests
fail so they do not judge at all.

`has_tests` reads the file in the edit's process; the tests run in a child: the sandbox's, or,
run as a module, the `--examples` check's own: `python -m specedit.editing.file_tests FILE`.
"""

from __future__ import annotations

import ast
import importlib
import io
import sys
import traceback
from pathlib import Path
from types import ModuleType

from specedit.editing.region import UNPARSABLE

# What a test raises where its check withholds what it needs (a file, a package, its standard
# input), not where the code is wrong.
WITHHELD = (OSError, ImportError, EOFError)


class CannotJudge(Exception):
    """A test failed for want of what its check withholds (a file, a module)."""


def _is_main_guard(node: ast.stmt) -> bool:
    """`if __name__ == "__main__":`, either way round."""
    if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare)):
        return False
    test = node.test
    sides = [test.left, *test.comparators]
    if len(sides) != 2 or not isinstance(test.ops[0], ast.Eq):
        return False
    names = {side.id for side in sides if isinstance(side, ast.Name)}
    values = {side.value for side in sides if isinstance(side, ast.Constant)}
    return names == {"__name__"} and values == {"__main__"}


def main_block(tree: ast.Module) -> list[ast.stmt]:
    """The body of the module's `__main__` block where it asserts something, else nothing."""
    for node in tree.body:
        if _is_main_guard(node) and any(isinstance(n, ast.Assert) for n in ast.walk(node)):
            return node.body
    return []


def test_functions(tree: ast.Module) -> list[str]:
    """The module's top-level `test_*` functions that take no argument (pytest's way of
    writing a test; one with arguments wants fixtures)."""
    return [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and node.name.startswith("test")
        and not (node.args.args or node.args.posonlyargs or node.args.kwonlyargs)
        and not (node.args.vararg or node.args.kwarg)
    ]


def _test_cases(tree: ast.Module) -> bool:
    """Whether the module defines a class whose base is named `TestCase`."""
    return any(
        isinstance(node, ast.ClassDef)
        and any(ast.unparse(base).rpartition(".")[2] == "TestCase" for base in node.bases)
        for node in tree.body
    )


def has_tests(source: str) -> bool:
    """Whether `source` has tests of its own to run."""
    try:
        tree = ast.parse(source)
    except UNPARSABLE:
        return False
    return bool(main_block(tree) or test_functions(tree) or _test_cases(tree))


def run_tests(module: ModuleType, source: str) -> int:
    """Run the tests of `module` (imported from `source`) and print what failed: its test
    functions, its TestCase classes, then its `__main__` block; how many failed. CannotJudge
    where one failed for want of a file or a module."""
    tree = ast.parse(source)
    path = module.__file__ or "<file>"
    failed = 0
    for name in test_functions(tree):
        failed += _failed(f"{name}()", lambda name=name: module.__dict__[name](), path)
    failed += _unittests(module)
    if body := main_block(tree):
        code = compile(ast.Module(body=body, type_ignores=[]), path, "exec")
        failed += _failed("the __main__ block", lambda: _run_main(code, module), path)
    return failed


def _run_main(code, module: ModuleType) -> None:
    try:
        exec(code, module.__dict__)  # in a child process: a check's, or the sandbox's
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise AssertionError(f"it exits with {exc.code!r}") from None


def _failed(what: str, test, path: str) -> int:
    """1 where `test()` raised (its traceback printed from the first frame in the file at
    `path`), else 0; CannotJudge for WITHHELD."""
    try:
        test()
    except WITHHELD as exc:
        raise CannotJudge(f"{what} raised {type(exc).__name__}: {exc}") from None
    except (Exception, SystemExit) as exc:
        trace = exc.__traceback__
        while trace is not None and trace.tb_frame.f_code.co_filename != path:
            trace = trace.tb_next
        shown = "".join(traceback.format_exception(type(exc), exc, trace))
        print(f"{what} failed:\n{shown}")
        return 1
    return 0


def _unittests(module: ModuleType) -> int:
    """Run the module's TestCase classes; how many tests failed or raised."""
    import unittest  # imported before the sandbox's filter closes, where tests run

    class Result(unittest.TextTestResult):
        """unittest's text result, noting the first test that raised for want of a file."""

        withheld = ""

        def addError(self, test, err):
            if issubclass(err[0], WITHHELD) and not self.withheld:
                self.withheld = f"{test.id()} raised {err[0].__name__}: {err[1]}"
            super().addError(test, err)

    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    if not suite.countTestCases():
        return 0
    report = io.StringIO()
    runner = unittest.TextTestRunner(stream=report, resultclass=Result)
    result = runner.run(suite)
    if result.withheld:
        raise CannotJudge(result.withheld)
    bad = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    if bad:
        print(report.getvalue().strip())
    return bad


def main(path: str) -> int:
    """Import the file as doctest does (its folder first on the path, the module named after
    the file) and run its tests; 1 where one failed or could not run."""
    file = Path(path)
    sys.path.insert(0, str(file.parent))
    sys.argv = [path]
    try:
        module = importlib.import_module(file.stem)
        return 1 if run_tests(module, file.read_text(encoding="utf-8")) else 0
    except (Exception, SystemExit) as exc:
        print(f"the file's tests could not run: {type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
