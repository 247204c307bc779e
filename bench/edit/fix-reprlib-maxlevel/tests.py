import random as _random
import reprlib as _ref

_rng = _random.Random(0)


def _value(depth):
    kind = _rng.randrange(8 if depth else 3)
    if kind == 0:
        return _rng.randrange(-10**60, 10**60)
    if kind == 1:
        return "".join(_rng.choice("ab'\"") for _ in range(_rng.randrange(50)))
    if kind == 2:
        return _rng.choice([None, 1.5, b"by"])
    if kind == 3:
        return [_value(depth - 1) for _ in range(_rng.randrange(9))]
    if kind == 4:
        return tuple(_value(depth - 1) for _ in range(_rng.randrange(9)))
    if kind == 5:
        return {_rng.randrange(50): _value(depth - 1) for _ in range(_rng.randrange(7))}
    if kind == 6:
        return set(_rng.sample(range(100), _rng.randrange(9)))
    return frozenset(_rng.sample(range(100), _rng.randrange(9)))


for _ in range(500):
    _obj = _value(4)
    _mine, _theirs = Repr(), _ref.Repr()
    _mine.maxlevel = _theirs.maxlevel = _rng.randrange(1, 5)
    _mine.maxlist = _theirs.maxlist = _rng.randrange(1, 7)
    _mine.maxstring = _theirs.maxstring = _rng.randrange(5, 40)
    _got, _want = _mine.repr(_obj), _theirs.repr(_obj)
    assert _got == _want, (_obj, _mine.maxlevel, _got, _want)
