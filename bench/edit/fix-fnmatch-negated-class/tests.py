import fnmatch as _ref
import random as _random

assert fnmatchcase("!", "[!abc]"), "fnmatchcase('!', '[!abc]') should be True"
_rng = _random.Random(0)
_atoms = ["a", "b", "!", "-", "*", "?", "[", "]", "[!a]", "[a-c]", "[!b-d]", "[]]",
          "[!]", "\\", "^", ".", "[z-a]", "[^b]", "&&", "~"]
_names = ["", "a", "b", "!", "-", "ab", "ba!", "a-c", "]", "[", "^", ".a", "x\n"]
for _ in range(500):
    _pat = "".join(_rng.choice(_atoms) for _ in range(_rng.randrange(4)))
    _got, _want = translate(_pat), _ref.translate(_pat)
    assert _got == _want, (_pat, _got, _want)
    for _name in _names:
        _got, _want = fnmatchcase(_name, _pat), _ref.fnmatchcase(_name, _pat)
        assert _got == _want, (_name, _pat, _got, _want)
    assert filter(_names, _pat) == _ref.filter(_names, _pat), _pat
