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
