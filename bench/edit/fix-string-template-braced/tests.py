import random as _random
import string as _ref

_rng = _random.Random(0)
_pieces = ["$who", "${who}", "$what", "${what}", "$$", "text ", "$", "${", "$1",
           "${missing}", "$missing", " ", "\n"]
_mapping = {"who": "tim", "what": "kung pao"}
for _ in range(600):
    _source = "".join(_rng.choice(_pieces) for _ in range(_rng.randrange(6)))
    _mine, _theirs = Template(_source), _ref.Template(_source)
    for _method in ("substitute", "safe_substitute"):
        try:
            _want = getattr(_theirs, _method)(_mapping)
        except (KeyError, ValueError) as _error:
            try:
                getattr(_mine, _method)(_mapping)
            except type(_error):
                continue
            raise AssertionError((_method, _source, "should raise", _error))
        _got = getattr(_mine, _method)(_mapping)
        assert _got == _want, (_method, _source, _got, _want)
        assert getattr(_mine, _method)(**_mapping) == _want, (_method, _source)
    assert _mine.get_identifiers() == _theirs.get_identifiers(), _source
    assert _mine.is_valid() == _theirs.is_valid(), _source
