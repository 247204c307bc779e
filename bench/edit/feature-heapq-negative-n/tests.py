import heapq as _ref
import random as _random

for _func in (nsmallest, nlargest):
    for _n in (-1, -3):
        for _data in ([3, 1, 2], iter([3, 1, 2]), [], range(10)):
            try:
                _func(_n, _data)
            except ValueError as _error:
                assert str(_error) == "n must be non-negative", str(_error)
            else:
                raise AssertionError((_func.__name__, _n, "should raise ValueError"))
        try:
            _func(_n, [5, 4], key=abs)
        except ValueError:
            pass
        else:
            raise AssertionError((_func.__name__, _n, "with key should raise"))
_rng = _random.Random(0)
for _ in range(300):
    _data = [_rng.randrange(-9, 9) for _ in range(_rng.randrange(12))]
    _n = _rng.randrange(8)
    for _key in (None, abs):
        for _source in (list, iter):
            _got = nsmallest(_n, _source(_data), key=_key)
            assert _got == _ref.nsmallest(_n, _data, key=_key), (_data, _n, _got)
            _got = nlargest(_n, _source(_data), key=_key)
            assert _got == _ref.nlargest(_n, _data, key=_key), (_data, _n, _got)
