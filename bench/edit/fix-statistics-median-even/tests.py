import random as _random
import statistics as _ref

assert median([1, 3, 5, 7]) == 4.0, median([1, 3, 5, 7])
_rng = _random.Random(0)
_names = ["median", "median_low", "median_high", "median_grouped", "mode", "multimode"]
for _ in range(400):
    _data = [_rng.randrange(-20, 20) for _ in range(_rng.randrange(1, 12))]
    for _name in _names:
        _got, _want = globals()[_name](_data), getattr(_ref, _name)(_data)
        assert _got == _want, (_name, _data, _got, _want)
    if len(_data) >= 2:
        for _method in ("exclusive", "inclusive"):
            for _n in (2, 4, 10):
                _got = quantiles(_data, n=_n, method=_method)
                _want = _ref.quantiles(_data, n=_n, method=_method)
                assert _got == _want, (_data, _n, _method, _got, _want)
for _name in _names[:5]:
    try:
        globals()[_name]([])
    except StatisticsError:
        pass
    else:
        raise AssertionError(f"{_name}([]) should raise StatisticsError")
assert multimode([]) == []
