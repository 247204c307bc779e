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
