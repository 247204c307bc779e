import random as _random

for _rgb, _want in [((1.0, 0.0, 0.0), "#ff0000"), ((0.0, 0.0, 0.0), "#000000"),
                    ((1.0, 1.0, 1.0), "#ffffff"), ((1.0, 0.5, 0.0), "#ff8000"),
                    ((0.2, 0.4, 0.6), "#336699"), ((0.004, 0.996, 0.5), "#01fe80")]:
    assert rgb_to_hex(*_rgb) == _want, (_rgb, rgb_to_hex(*_rgb), _want)
_rng = _random.Random(1)
for _ in range(500):
    _levels = [_rng.randrange(256) for _ in range(3)]
    _rgb = [min(1.0, max(0.0, (k + _rng.uniform(-0.4, 0.4)) / 255)) for k in _levels]
    _want = "#%02x%02x%02x" % tuple(_levels)
    assert rgb_to_hex(*_rgb) == _want, (_rgb, rgb_to_hex(*_rgb), _want)
_hls = rgb_to_hls(0.8, 0.4, 0.2)
assert rgb_to_hex(*hls_to_rgb(*_hls)) == "#cc6633", _hls

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
