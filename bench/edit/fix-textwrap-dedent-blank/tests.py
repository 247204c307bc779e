import random as _random
import textwrap as _ref

_rng = _random.Random(0)
_heads = ["", " ", "  ", "    ", "\t", "  \t", "\t  "]
_bodies = ["x", "hello world", "", "  ", "\t", "# c"]
for _ in range(600):
    _lines = [
        _rng.choice(_heads) + _rng.choice(_bodies) for _ in range(_rng.randrange(1, 7))
    ]
    _text = "\n".join(_lines) + _rng.choice(["", "\n"])
    _got, _want = dedent(_text), _ref.dedent(_text)
    assert _got == _want, (_text, _got, _want)
    _got, _want = indent(_text, "> "), _ref.indent(_text, "> ")
    assert _got == _want, (_text, _got, _want)
    _got = indent(_text, "+", lambda line: True)
    _want = _ref.indent(_text, "+", lambda line: True)
    assert _got == _want, (_text, _got, _want)
