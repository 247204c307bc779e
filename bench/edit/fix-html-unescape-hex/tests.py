import html as _ref
import random as _random

_rng = _random.Random(0)
_refs = ["&#x41;", "&#X3e;", "&#65;", "&#0;", "&#x80;", "&#xD800;", "&#x110000;",
         "&amp;", "&gt", "&notin;", "&notit;", "&#x1F600;", "&#12", "&;", "&#xffff;",
         "&#x0d;", "&#13;", "&lt;", "&copy", "&#x", "&#"]
for _ in range(600):
    _s = "".join(_rng.choice(_refs + ["a", " ", "<", "\"", "'", "&"])
                 for _ in range(_rng.randrange(8)))
    _got, _want = unescape(_s), _ref.unescape(_s)
    assert _got == _want, (_s, _got, _want)
    for _quote in (True, False):
        assert escape(_s, _quote) == _ref.escape(_s, _quote), (_s, _quote)
