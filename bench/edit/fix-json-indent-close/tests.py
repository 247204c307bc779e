import json as _json
import random as _random
from json.encoder import encode_basestring_ascii as _encode_str

_rng = _random.Random(0)


def _value(depth):
    kind = _rng.randrange(9 if depth else 6)
    if kind == 0:
        return _rng.randrange(-100, 100)
    if kind == 1:
        return _rng.randrange(-40, 40) / 8
    if kind == 2:
        return _rng.choice(["", "a", "é", 'q"x', "line\nbreak"])
    if kind == 3:
        return _rng.choice([None, True, False])
    if kind in (4, 6):
        return [_value(depth - 1) for _ in range(_rng.randrange(4))]
    if kind == 5:
        return ()
    return {_rng.choice("abcdef"): _value(depth - 1) for _ in range(_rng.randrange(4))}


def _default(obj):
    raise TypeError(obj)


for _ in range(300):
    _obj = _value(3)
    for _indent in (None, 0, 2, "\t"):
        for _sort_keys in (False, True):
            _seps = (", ", ": ") if _indent is None else (",", ": ")
            _encode = _make_iterencode(
                {}, _default, _encode_str, _indent, float.__repr__,
                _seps[1], _seps[0], _sort_keys, False, False,
            )
            _got = "".join(_encode(_obj, 0))
            _want = _json.dumps(
                _obj, indent=_indent, sort_keys=_sort_keys, separators=_seps
            )
            assert _got == _want, (_obj, _indent, _sort_keys, _got, _want)
