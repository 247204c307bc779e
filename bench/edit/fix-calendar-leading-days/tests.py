import calendar as _ref

for _first in range(7):
    _mine, _theirs = Calendar(_first), _ref.Calendar(_first)
    for _year in (1, 1900, 1999, 2000, 2023, 2024, 2100, 9999):
        for _month in range(1, 13):
            for _method in ("monthdays2calendar", "monthdayscalendar"):
                _got = getattr(_mine, _method)(_year, _month)
                _want = getattr(_theirs, _method)(_year, _month)
                assert _got == _want, (_method, _first, _year, _month, _got, _want)
            _got = list(_mine.itermonthdays4(_year, _month))
            _want = list(_theirs.itermonthdays4(_year, _month))
            assert _got == _want, ("itermonthdays4", _first, _year, _month, _got, _want)
            if 1 < _year < 9999:
                _got = _mine.monthdatescalendar(_year, _month)
                _want = _theirs.monthdatescalendar(_year, _month)
                assert _got == _want, (_first, _year, _month, _got, _want)
            assert monthrange(_year, _month) == _ref.monthrange(_year, _month)
for _year in range(1, 3000):
    assert isleap(_year) == _ref.isleap(_year), _year
    assert leapdays(_year, 2024) == _ref.leapdays(_year, 2024), _year
