import heapq as _ref
import random as _random

_rng = _random.Random(0)
for _ in range(300):
    _mine, _theirs = [], []
    for _step in range(_rng.randrange(1, 30)):
        if _theirs and _rng.random() < 0.4:
            _got, _want = heappop(_mine), _ref.heappop(_theirs)
            assert _got == _want, ("heappop", _got, _want)
        else:
            _x = _rng.randrange(20)
            heappush(_mine, _x)
            _ref.heappush(_theirs, _x)
        assert _mine == _theirs, ("heap differs", _mine, _theirs)
        assert not _mine or _mine[0] == min(_mine), _mine
