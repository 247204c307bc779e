import random as _random
import shlex as _ref

_rng = _random.Random(0)
_pieces = ["a", "bc", "d e", "'q x'", '"dq y"', "#", "# c", "\\ ", "$x", "f;g", "", "it's"]
_pieces += ["-", "=1"]
for _word in ["abc", "", "a b", "it's", "$HOME", "x=1,y=2", "tab\there", "naïve", "@%+=:,./-"]:
    assert quote(_word) == _ref.quote(_word), (_word, quote(_word), _ref.quote(_word))
for _ in range(500):
    _words = [_rng.choice(_pieces) for _ in range(_rng.randrange(5))]
    _line = " ".join(_words)
    assert join(_words) == _ref.join(_words), (_words, join(_words), _ref.join(_words))
    assert split(join(_words)) == _words, (_words, join(_words), split(join(_words)))
    for _kwargs in ({}, {"comments": True}, {"posix": False}, {"comments": True, "posix": False}):
        try:
            _want = _ref.split(_line, **_kwargs)
        except ValueError:
            continue
        _got = split(_line, **_kwargs)
        assert _got == _want, (_line, _kwargs, _got, _want)
