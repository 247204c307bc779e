"""A Python file's own tests: the asserts of its `if __name__ == "__main__":` block, its
top-level `test...` functions that take no argument, and its `unittest.TestCase` classes. Where
a file has them, they judge its candidates beside its docstrings' examples (editing/examples.py):
a fix that leaves the failure they show, or breaks what they guard, is wrong.

They run in the module's namespace after the module is imported under its own name, so that
importing it runs its `__main__` block no more than `python -m doctest` does; the block is then
run alone, and only where it asserts something and reads no command line (one that parses
its arguments is a program's entry point, not a test). A test that fails for want of what
its check withholds (a file, a third-party module, its standard input: an OSError, an
ImportError, an EOFError) says nothing of the code: `CannotJudge`, and where the input's tests
fail so they do not judge at all.

`tests_in` reads the file in the edit's process; the tests run in a child: the sandbox's, or,
run as a module, the `--examples` check's own: `python -m specedit.editing.file_tests FILE`.
"""

from __future__ import annotations

import ast
import importlib.machinery
import importlib.util
import io
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import CodeType, ModuleType

from specedit.editing.region import parsed

# What a test raises where its check withholds what it needs (a file, a package, its standard
# input), not where the code is wrong.
WITHHELD = (OSError, ImportError, EOFError)
# Names a `__main__` block reads its command line or options by: a program's entry point, whose
# asserts check what it was given rather than what the code does.
ARGUMENTS = {"argv", "argparse", "optparse", "getopt", "parse_args", "ArgumentParser"}


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


def _named(node: ast.AST) -> str | None:
    """The name a Name or an Attribute node ends in."""
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else None


def main_block(tree: ast.Module) -> list[ast.stmt]:
    """The body of the module's `__main__` block where it asserts something and reads no
    command line (ARGUMENTS), else nothing."""
    for node in tree.body:
        if _is_main_guard(node):
            inside = list(ast.walk(node))
            if any(isinstance(n, ast.Assert) for n in inside) and not any(
                _named(n) in ARGUMENTS for n in inside
            ):
                return node.body
    return []


def plain_tests(tree: ast.Module) -> list[str]:
    """The module's top-level functions named as pytest collects tests (`test...`) that take
    no argument (one with arguments wants fixtures), each once."""
    return list(
        dict.fromkeys(
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef)
            and node.name.startswith("test")
            and not (node.args.args or node.args.posonlyargs or node.args.kwonlyargs)
            and not (node.args.vararg or node.args.kwarg)
        )
    )


def _test_case_methods(tree: ast.Module) -> int:
    """How many `test...` methods the module's classes based on a `TestCase` define."""
    return sum(
        isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef)
        and method.name.startswith("test")
        for node in tree.body
        if isinstance(node, ast.ClassDef) and any(_named(b) == "TestCase" for b in node.bases)
        for method in node.body
    )


def tests_in(source: str) -> int:
    """How many tests `source` has of its own: the asserts of its `__main__` block, its plain
    test functions and its TestCase classes' test methods (0 where it does not parse)."""
    tree = parsed(source)
    if tree is None:
        return 0
    asserts = sum(isinstance(n, ast.Assert) for s in main_block(tree) for n in ast.walk(s))
    return asserts + len(plain_tests(tree)) + _test_case_methods(tree)


def run_tests(module: ModuleType, source: str) -> int:
    """Run the tests of `module` (imported from `source`) and print what failed: its plain
    test functions, its TestCase classes, then its `__main__` block; how many failed.
    CannotJudge where one failed for want of a file or a module."""
    tree = ast.parse(source)
    path = module.__file__ or "<file>"
    failed = 0
    for name in plain_tests(tree):
        test = getattr(module, name, None)
        if callable(test):
            failed += _failed(f"{name}()", test, path)
    failed += _unittests(module)
    if body := main_block(tree):
        code = compile(ast.Module(body=body, type_ignores=[]), path, "exec")
        failed += _failed("the __main__ block", lambda: _run_main(code, module), path)
    return failed


def _run_main(code: CodeType, module: ModuleType) -> None:
    """Run the `__main__` block's `code` in the module's namespace, as running the file would:
    an exit with 0 (or None) passes, any other fails."""
    try:
        exec(code, module.__dict__)  # in a child process: a check's, or the sandbox's
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise AssertionError(f"it exits with {exc.code!r}") from None


def _failed(what: str, test: Callable[[], object], path: str) -> int:
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
        """unittest's text result, noting the first test (or subtest) that raised for want of
        a file."""

        withheld = ""

        def _note(self, test, err) -> None:
            if err is not None and issubclass(err[0], WITHHELD) and not self.withheld:
                self.withheld = f"{test.id()} raised {err[0].__name__}: {err[1]}"

        def addError(self, test, err):
            self._note(test, err)
            super().addError(test, err)

        def addSubTest(self, test, subtest, err):
            self._note(subtest, err)
            super().addSubTest(test, subtest, err)

    suite = unittest.defaultTestLoader.loadTestsFromModule(module)
    if not suite.countTestCases():
        return 0
    report = io.StringIO()
    result = unittest.TextTestRunner(stream=report, resultclass=Result).run(suite)
    if result.withheld:
        raise CannotJudge(result.withheld)
    bad = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    if bad:
        print(report.getvalue().strip())
    return bad


def module_name(path: str) -> str:
    """The name a file's module is run under: its own, unless that is `__main__` (whose block
    would then run on import), a module already loaded here (`types.py`, `copy.py`), or no
    identifier (a script without a suffix)."""
    stem = Path(path).stem
    if stem.isidentifier() and stem != "__main__" and stem not in sys.modules:
        return stem
    return "candidate"


def main(path: str) -> int:
    """Run the file as a module from its path (its folder first on the path for its own
    imports) and its tests; 1 where one failed or could not run."""
    file = Path(path)
    sys.path.insert(0, str(file.parent))
    sys.argv = [path]
    name = module_name(path)
    loader = importlib.machinery.SourceFileLoader(name, str(file))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    sys.modules[name] = module
    try:
        loader.exec_module(module)
        return 1 if run_tests(module, file.read_text(encoding="utf-8")) else 0
    except (Exception, SystemExit) as exc:
        print(f"the file's tests could not run: {type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
