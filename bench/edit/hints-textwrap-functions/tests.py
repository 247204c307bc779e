import inspect as _inspect
import textwrap as _ref

for _func in (wrap, fill, shorten, indent):
    _sig = _inspect.signature(_func)
    for _param in _sig.parameters.values():
        if _param.kind is not _param.VAR_KEYWORD:
            assert _param.annotation is not _param.empty, (_func.__name__, _param.name)
    assert _sig.return_annotation is not _sig.empty, (_func.__name__, "return")
_text = "The quick brown fox jumps over the lazy dog. " * 4
for _width in (12, 30, 70):
    assert wrap(_text, _width) == _ref.wrap(_text, _width), _width
    assert fill(_text, width=_width) == _ref.fill(_text, width=_width), _width
    assert shorten(_text, _width) == _ref.shorten(_text, _width), _width
    _got = wrap(_text, _width, initial_indent="> ")
    assert _got == _ref.wrap(_text, _width, initial_indent="> "), _width
for _lines in ("a\n\n  b\n   \nc", "x", "", "one\ntwo\n"):
    assert indent(_lines, "  ") == _ref.indent(_lines, "  "), _lines
    _pred = lambda line: line.startswith("a")  # noqa: E731
    assert indent(_lines, "# ", _pred) == _ref.indent(_lines, "# ", _pred), _lines
