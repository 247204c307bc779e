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
