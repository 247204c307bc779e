"""Doctest as `python -m doctest FILE` runs it, with one example read as its writer meant: a
comparison with nothing after it (`>>> f([1, 2]) == 3`, a common way to write one), which
doctest expects to print nothing and so fails on every code, right or wrong, expects `True`.

Imported only where examples run (doctest brings pdb and more): the sandbox's child, and, run
as a module, the `--examples` check's own: `python -m specedit.editing.doctests FILE`.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import sys
from pathlib import Path
from types import ModuleType

from specedit.editing.stated import parses_as


class ComparisonsParser(doctest.DocTestParser):
    """Doctest's parser, a comparison that expects nothing read as expecting `True`."""

    def parse(self, string: str, name: str = "<string>") -> list[str | doctest.Example]:
        pieces = super().parse(string, name)
        for example in (piece for piece in pieces if isinstance(piece, doctest.Example)):
            if not example.want and parses_as(example.source, ast.Compare):
                example.want = "True\n"
        return pieces


def testmod(module: ModuleType) -> int:
    """`doctest.testmod(module)` with comparisons so read: how many examples failed, reported
    as testmod reports them."""
    runner = doctest.DocTestRunner(verbose=False)
    for test in doctest.DocTestFinder(parser=ComparisonsParser()).find(module, module.__name__):
        runner.run(test)
    runner.summarize(verbose=False)
    return runner.failures


def main(path: str) -> int:
    """Import the file as `python -m doctest` does (its folder first on the path, the module
    named after the file) and run its examples; 1 where one failed. Not a `.py` file: read as
    doctest reads a text file."""
    file = Path(path)
    if file.suffix != ".py":
        failed, _ = doctest.testfile(path, module_relative=False, parser=ComparisonsParser())
    else:
        sys.path.insert(0, str(file.parent))
        failed = testmod(importlib.import_module(file.stem))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
