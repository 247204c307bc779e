import posixpath as _ref
import random as _random

_names = relpath.__code__.co_varnames
assert "relative_parts" in _names and "rel_list" not in _names, _names
_rng = _random.Random(0)
_parts = ["a", "b", "..", ".", "", "usr"]
for _ in range(500):
    _path = _rng.choice(["/", ""]) + "/".join(
        _rng.choice(_parts) for _ in range(_rng.randrange(1, 4)))
    _start = _rng.choice([None, "/", "/a/b", "a", "../x", "/usr/lib"])
    if not _path:
        continue
    _got, _want = relpath(_path, _start), _ref.relpath(_path, _start)
    assert _got == _want, (_path, _start, _got, _want)
    assert relpath(_path.encode(), b"/a") == _ref.relpath(_path.encode(), b"/a")
try:
    relpath("")
except ValueError:
    pass
else:
    raise AssertionError("relpath('') should raise ValueError")
