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
