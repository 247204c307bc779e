import base64 as _ref
import binascii as _binascii
import random as _random

_rng = _random.Random(0)
for _ in range(600):
    _data = bytes(_rng.randrange(256) for _ in range(_rng.randrange(21)))
    for _enc, _dec in (("b32encode", "b32decode"), ("b32hexencode", "b32hexdecode")):
        _got, _want = globals()[_enc](_data), getattr(_ref, _enc)(_data)
        assert _got == _want, (_enc, _data, _got, _want)
        assert globals()[_dec](_want) == _data, (_dec, _want, _data)
    _text = _ref.b32encode(_data).decode()
    assert b32decode(_text.lower(), casefold=True) == _data, _text
for _bad in (b"MFRGG", b"MFRGG=", b"MFR====="):
    try:
        b32decode(_bad)
    except _binascii.Error:
        pass
    else:
        raise AssertionError(f"b32decode({_bad!r}) should fail")
