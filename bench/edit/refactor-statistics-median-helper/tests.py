import random as _random
import statistics as _ref

assert _sorted_nonempty([3, 1, 2]) == [1, 2, 3], _sorted_nonempty([3, 1, 2])
assert _sorted_nonempty(iter([2.5, -1])) == [-1, 2.5]
try:
    _sorted_nonempty([])
except StatisticsError as _error:
    assert str(_error) == "no median for empty data", str(_error)
else:
    raise AssertionError("_sorted_nonempty([]) should raise StatisticsError")
for _func in (median, median_low, median_high):
    _names = _func.__code__.co_names
    assert "_sorted_nonempty" in _names, (_func.__name__, "does not call the helper")
    assert "sorted" not in _names, (_func.__name__, "still sorts by itself")
    try:
        _func([])
    except StatisticsError:
        pass
    else:
        raise AssertionError((_func.__name__, "should raise StatisticsError"))
    _rng = _random.Random(0)
    for _ in range(200):
        _data = [_rng.randrange(-20, 20) for _ in range(_rng.randrange(1, 10))]
        _got, _want = _func(_data), getattr(_ref, _func.__name__)(_data)
        assert _got == _want, (_func.__name__, _data, _got, _want)
