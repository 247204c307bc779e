import difflib as _ref
import inspect as _inspect

_params = list(_inspect.signature(get_close_matches).parameters)
assert _params == ["word", "candidates", "n", "cutoff"], _params
assert "possibilities" not in get_close_matches.__code__.co_varnames
assert "possibilities" not in (get_close_matches.__doc__ or ""), "docstring not updated"
_words = ["ape", "apple", "peach", "puppy", "apply", "maple"]
for _word in ("appel", "pech", "zzz", "mapel"):
    _want = _ref.get_close_matches(_word, _words)
    assert get_close_matches(_word, _words) == _want, _word
    assert get_close_matches(word=_word, candidates=_words) == _want, _word
    assert get_close_matches(_word, _words, 1, 0.3) == _ref.get_close_matches(
        _word, _words, 1, 0.3), _word
try:
    get_close_matches("appel", possibilities=_words)
except TypeError:
    pass
else:
    raise AssertionError("the old keyword `possibilities` still works")
