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
