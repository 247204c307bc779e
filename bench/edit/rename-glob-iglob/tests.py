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
