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
