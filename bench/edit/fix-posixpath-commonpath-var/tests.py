import posixpath as _ref
import random as _random

_rng = _random.Random(0)
_parts = ["usr", "lib", "local", "bin", ".", "a", "b"]
for _ in range(500):
    _lead = _rng.choice(["/", ""])
    _paths = [
        _lead + "/".join(_rng.choice(_parts) for _ in range(_rng.randrange(4)))
        for _ in range(_rng.randrange(1, 4))
    ]
    _got, _want = commonpath(_paths), _ref.commonpath(_paths)
    assert _got == _want, (_paths, _got, _want)
    _raw = [p.encode() for p in _paths]
    assert commonpath(_raw) == _ref.commonpath(_raw), _raw
for _bad in ([], ["/a", "b"]):
    try:
        commonpath(_bad)
    except ValueError:
        pass
    else:
        raise AssertionError(f"commonpath({_bad!r}) should raise ValueError")
