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
