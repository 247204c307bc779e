import inspect as _inspect
import typing as _typing


def _check_hints(func, param_type, return_check):
    _hints = _typing.get_type_hints(func)
    for _name in _inspect.signature(func).parameters:
        assert _name in _hints, (func.__name__, _name, "has no type hint")
        assert _hints[_name] is param_type, (func.__name__, _name, _hints[_name])
    assert "return" in _hints, (func.__name__, "has no return type")
    assert return_check(_hints["return"]), (func.__name__, "returns", _hints["return"])


def _tuple_of(item_type, size):
    def _check(hint):
        _args = _typing.get_args(hint)
        return _typing.get_origin(hint) is tuple and _args in (
            (item_type,) * size, (item_type, ...))
    return _check


for _func in (rgb_to_hsv, hsv_to_rgb):
    _check_hints(_func, float, _tuple_of(float, 3))

import colorsys as _ref
import math as _math
import random as _random

_rng = _random.Random(0)
_samples = [(0.8, 0.4, 0.2), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (0.5, 0.5, 0.5), (0.2, 0.9, 0.3)]
_samples += [(_rng.random(), _rng.random(), _rng.random()) for _ in range(500)]
_samples += [(_rng.choice([0.0, 0.25, 1.0]), _rng.random(), _rng.random()) for _ in range(200)]


def _close(a, b):
    return all(_math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12) for x, y in zip(a, b))


for _rgb in _samples:
    for _name in ("rgb_to_hls", "hls_to_rgb", "rgb_to_hsv", "hsv_to_rgb"):
        if _name in globals():
            _got, _want = globals()[_name](*_rgb), getattr(_ref, _name)(*_rgb)
            assert _close(_got, _want), (_name, _rgb, _got, _want)
