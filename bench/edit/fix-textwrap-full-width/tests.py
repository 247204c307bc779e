import random as _random
import textwrap as _ref

assert wrap("aaa bbb ccc", width=7) == ["aaa bbb", "ccc"], wrap("aaa bbb ccc", width=7)
_rng = _random.Random(0)
_vocab = ["a", "to", "the", "word", "eleven", "wrapping", "extraordinarily", "x-y-z"]
for _ in range(300):
    _text = " ".join(_rng.choice(_vocab) for _ in range(_rng.randrange(1, 30)))
    _width = _rng.randrange(8, 40)
    _kwargs = _rng.choice([
        {},
        {"initial_indent": "* ", "subsequent_indent": "  "},
        {"break_long_words": False},
        {"max_lines": 2, "placeholder": " ..."},
        {"drop_whitespace": False},
        {"break_on_hyphens": False},
    ])
    _got = wrap(_text, _width, **_kwargs)
    _want = _ref.wrap(_text, _width, **_kwargs)
    assert _got == _want, (_text, _width, _kwargs, _got, _want)
    _got, _want = fill(_text, _width), _ref.fill(_text, _width)
    assert _got == _want, (_text, _width, _got, _want)
