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


import calendar as _ref

_check_hints(isleap, int, lambda hint: hint is bool)
for _func in (leapdays, weekday, _monthlen):
    _check_hints(_func, int, lambda hint: hint is int)
for _func in (monthrange, _prevmonth, _nextmonth):
    _check_hints(_func, int, _tuple_of(int, 2))
for _year in list(range(1895, 1905)) + list(range(1995, 2030)) + [1, 2400, 9999]:
    assert isleap(_year) == _ref.isleap(_year), _year
    assert leapdays(_year, 2100) == _ref.leapdays(_year, 2100), _year
    for _month in range(1, 13):
        assert monthrange(_year, _month) == _ref.monthrange(_year, _month)
        assert weekday(_year, _month, 28) == _ref.weekday(_year, _month, 28)
        assert _monthlen(_year, _month) == _ref._monthlen(_year, _month)
        assert _prevmonth(_year, _month) == _ref._prevmonth(_year, _month)
        assert _nextmonth(_year, _month) == _ref._nextmonth(_year, _month)
assert weekday(10000, 1, 1) == _ref.weekday(10000, 1, 1)
for _month in (0, 13):
    try:
        monthrange(2024, _month)
    except IllegalMonthError as _error:
        assert str(_error) == f"bad month number {_month}; must be 1-12", str(_error)
    else:
        raise AssertionError(f"monthrange(2024, {_month}) should raise")
