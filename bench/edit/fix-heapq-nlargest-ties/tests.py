import heapq as _ref
import random as _random
from operator import itemgetter as _itemgetter

_words = ["ab", "cd", "efg", "hi", "jkl", "mno", "p"]
_got = nlargest(2, iter(_words), key=len)
assert _got == ["efg", "jkl"], _got
_rng = _random.Random(0)
_first = _itemgetter(0)
for _ in range(400):
    _pairs = [(_rng.randrange(6), str(i)) for i in range(_rng.randrange(20))]
    _n = _rng.randrange(8)
    for _source in (list, iter):
        _got = nlargest(_n, _source(_pairs), key=_first)
        _want = sorted(_pairs, key=_first, reverse=True)[:_n]
        assert _got == _want, ("nlargest", _pairs, _n, _got, _want)
        _got = nsmallest(_n, _source(_pairs), key=_first)
        _want = sorted(_pairs, key=_first)[:_n]
        assert _got == _want, ("nsmallest", _pairs, _n, _got, _want)
        _nums = [p[0] for p in _pairs]
        assert nlargest(_n, _source(_nums)) == _ref.nlargest(_n, _nums), (_nums, _n)
        assert nsmallest(_n, _source(_nums)) == _ref.nsmallest(_n, _nums), (_nums, _n)
    _heap, _theirs = [p[0] for p in _pairs], [p[0] for p in _pairs]
    heapify(_heap)
    _ref.heapify(_theirs)
    assert _heap == _theirs, (_heap, _theirs)
    if _heap:
        assert heapreplace(_heap, 3) == _ref.heapreplace(_theirs, 3)
        assert _heap == _theirs, (_heap, _theirs)
