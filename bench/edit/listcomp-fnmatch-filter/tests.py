import dis as _dis
import fnmatch as _ref
import random as _random


def _ops(code):
    for _instruction in _dis.get_instructions(code):
        yield _instruction.opname
    for _const in code.co_consts:
        if hasattr(_const, "co_code"):
            yield from _ops(_const)


assert "append" not in filter.__code__.co_names, "filter still calls result.append"
assert "LIST_APPEND" in set(_ops(filter.__code__)), "filter has no list comprehension"
_rng = _random.Random(0)
_names = ["a.py", "b.txt", "A.PY", "dir/c.py", ".hidden", "x", "a.py"]
for _pat in ("*.py", "*", "?", "[ab].*", "*.PY", "dir/*", "[!a]*", ""):
    for _ in range(20):
        _sample = [_rng.choice(_names) for _ in range(_rng.randrange(6))]
        _got, _want = filter(_sample, _pat), _ref.filter(_sample, _pat)
        assert _got == _want, (_sample, _pat, _got, _want)
        assert filter(iter(_sample), _pat) == _want, ("iterator", _sample, _pat)
    for _name in _names:
        assert fnmatch(_name, _pat) == _ref.fnmatch(_name, _pat), (_name, _pat)
