import functools as _ref
import random as _random

_rng = _random.Random(0)
for _maxsize in (0, 1, 2, 3, 8, None):
    for _typed in (False, True):

        @lru_cache(maxsize=_maxsize, typed=_typed)
        def _mine(x, y=0):
            return (x, y)

        @_ref.lru_cache(maxsize=_maxsize, typed=_typed)
        def _theirs(x, y=0):
            return (x, y)

        for _ in range(300):
            _x = _rng.choice([_rng.randrange(10), float(_rng.randrange(3))])
            _kwargs = _rng.choice([{}, {"y": 1}])
            assert _mine(_x, **_kwargs) == _theirs(_x, **_kwargs), (_x, _kwargs)
            _got, _want = tuple(_mine.cache_info()), tuple(_theirs.cache_info())
            assert _got == _want, (_maxsize, _typed, _got, _want)
            if _maxsize is not None:
                assert _got[3] <= _maxsize, (_maxsize, _got)
        _mine.cache_clear()
        assert tuple(_mine.cache_info())[::2] == (0, _maxsize), _mine.cache_info()


@lru_cache
def _square(x):
    return x * x


assert _square(3) == 9 and _square.__name__ == "_square", _square
assert _square.cache_parameters() == {"maxsize": 128, "typed": False}
