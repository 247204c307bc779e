import ast as _ast
import random as _random

_rng = _random.Random(0)
_cases = ["-5", "+5", "-1.5", "1-2j", "-1+2j", "[-1, +2, (3, -4)]", "{'a': -1}",
          "set()", "{-1, 2}", "--1", "-(1)", "'x'", "b'y'", "None", "-True", "1+2",
          "-1e400", "(1,)", "{}", "[1, [2, [-3]]]"]
_cases += [
    repr([_rng.choice([-1, 1]) * _rng.randrange(100) for _ in range(_rng.randrange(5))])
    for _ in range(200)
]
for _src in _cases:
    try:
        _want = _ast.literal_eval(_src)
    except ValueError:
        try:
            literal_eval(_src)
        except ValueError:
            continue
        raise AssertionError(f"literal_eval({_src!r}) should raise ValueError")
    _got = literal_eval(_src)
    assert _got == _want and type(_got) is type(_want), (_src, _got, _want)
