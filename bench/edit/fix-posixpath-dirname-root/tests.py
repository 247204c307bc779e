import posixpath as _ref
import random as _random

_rng = _random.Random(0)
_parts = ["", "", "a", "usr", "..", ".", "b.txt", ".bashrc", "x.tar.gz", "c."]
for _ in range(800):
    _path = "/".join(_rng.choice(_parts) for _ in range(_rng.randrange(1, 5)))
    for _p in (_path, _path.encode()):
        for _name in (
            "isabs", "split", "splitext", "splitdrive", "basename", "dirname"
        ):
            _got, _want = globals()[_name](_p), getattr(_ref, _name)(_p)
            assert _got == _want, (_name, _p, _got, _want)
    _more = [_rng.choice(_parts) for _ in range(_rng.randrange(3))]
    assert join(_path, *_more) == _ref.join(_path, *_more), (_path, _more)
