_funcs = [_get_sep, split, basename, dirname, isabs]
for _func in _funcs:
    _doc = _func.__doc__
    assert _doc and len(_doc.split()) >= 6, (_func.__name__, _doc)
    assert "return" in _doc.lower(), (_func.__name__, "does not say what it returns")
assert len({_func.__doc__.strip() for _func in _funcs}) == len(_funcs), "same docstrings"

import posixpath as _ref
import random as _random

_rng = _random.Random(0)
_parts = ["", "a", "bc", ".", "..", "d.txt", "/", "//"]
for _ in range(500):
    _path = "/".join(_rng.choice(_parts) for _ in range(_rng.randrange(5)))
    for _p in (_path, _path.encode()):
        for _name in ("split", "basename", "dirname", "isabs"):
            _got, _want = globals()[_name](_p), getattr(_ref, _name)(_p)
            assert _got == _want, (_name, _p, _got, _want)
        assert _get_sep(_p) == ("/" if isinstance(_p, str) else b"/"), _p
