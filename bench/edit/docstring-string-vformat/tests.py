import string as _ref

_doc = _vformat.__doc__
assert _doc and _doc.strip(), "_vformat has no docstring"
for _param in ("format_string", "args", "kwargs", "used_args", "recursion_depth",
               "auto_arg_index"):
    assert _param in _doc, f"the docstring does not mention {_param}"
assert "return" in _doc.lower(), "the docstring does not say what is returned"
_formatter = _ref.Formatter()
_cases = [("{} and {}", (1, 2), {}), ("{0}{1}{0}", ("a", "b"), {}),
          ("{x:>{w}}", (), {"x": 3, "w": 5}), ("{0.real!r:}", (4,), {}),
          ("{:{}}", ("ab", 4), {}), ("no fields", (), {}), ("{{}}", (), {})]
for _fmt, _args, _kwargs in _cases:
    _used, _ref_used = set(), set()
    _got = _vformat(_formatter, _fmt, _args, _kwargs, _used, 2)
    _want = _formatter._vformat(_fmt, _args, _kwargs, _ref_used, 2)
    assert _got == _want and _used == _ref_used, (_fmt, _got, _want)
for _fmt in ("{}{0}", "{0}{}"):
    try:
        _vformat(_formatter, _fmt, (1, 2), {}, set(), 2)
    except ValueError:
        pass
    else:
        raise AssertionError(f"{_fmt!r} should raise ValueError")
