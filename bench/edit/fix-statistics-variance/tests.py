import random as _random
import statistics as _ref
from decimal import Decimal as _D
from fractions import Fraction as _F

assert variance([1, 2, 3, 4]) == _ref.variance([1, 2, 3, 4]), variance([1, 2, 3, 4])
_rng = _random.Random(0)
for _ in range(300):
    _ints = [_rng.randrange(-50, 50) for _ in range(_rng.randrange(2, 15))]
    for _data in (_ints, [x / 4 for x in _ints], [_F(x, 3) for x in _ints],
                  [_D(x) / 8 for x in _ints]):
        for _name in ("variance", "pvariance"):
            _got, _want = globals()[_name](_data), getattr(_ref, _name)(_data)
            assert _got == _want and type(_got) is type(_want), (
                _name, _data, _got, _want)
for _call in (lambda: variance([1]), lambda: pvariance([])):
    try:
        _call()
    except StatisticsError:
        pass
    else:
        raise AssertionError("too little data should raise StatisticsError")
