import graphlib as _ref
import random as _random

_rng = _random.Random(0)
for _ in range(400):
    _n = _rng.randrange(1, 9)
    _edges = [(a, b) for a in range(_n) for b in range(a) if _rng.random() < 0.35]
    _rng.shuffle(_edges)
    if _rng.random() < 0.2 and _n > 1:
        _edges.append((0, _n - 1))  # a cycle
    _mine, _theirs = TopologicalSorter(), _ref.TopologicalSorter()
    for _node in range(_n):
        _mine.add(_node)
        _theirs.add(_node)
    for _node, _pred in _edges:
        _mine.add(_node, _pred)
        _theirs.add(_node, _pred)
    try:
        _want = list(_theirs.static_order())
    except _ref.CycleError:
        try:
            list(_mine.static_order())
        except CycleError:
            continue
        raise AssertionError(("cycle not detected", _edges))
    _got = list(_mine.static_order())
    assert _got == _want, (_edges, _got, _want)
_ts = TopologicalSorter({"b": {"a"}, "c": {"a", "b"}})
_ts.prepare()
_seen = []
while _ts.is_active():
    _ready = _ts.get_ready()
    _seen.extend(_ready)
    _ts.done(*_ready)
assert _seen == ["a", "b", "c"], _seen
