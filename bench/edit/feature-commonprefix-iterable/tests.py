import os as _os
import posixpath as _ref

_groups = [["/usr/lib", "/usr/local", "/usr/bin"], ["abc", "abd"], ["x"], [],
           ["same", "same"], ["/a/b", "/c"], [b"/usr/x", b"/usr/y"]]
for _paths in _groups:
    _want = _ref.commonprefix(list(_paths))
    for _wrap in (list, tuple, iter, set, lambda p: dict.fromkeys(p).keys(),
                  lambda p: (x for x in p)):
        _got = commonprefix(_wrap(_paths))
        assert _got == _want, (_paths, _wrap, _got, _want)
_parts = [["usr", "lib"], ["usr", "local"]]
assert commonprefix(_parts) == ["usr"], commonprefix(_parts)
assert commonprefix(iter(_parts)) == ["usr"], commonprefix(iter(_parts))
with open("f.txt", "w") as _handle:
    _handle.write("data")
_os.mkdir("d")
assert exists("f.txt") and isfile("f.txt") and not isdir("f.txt")
assert isdir("d") and not isfile("d") and not exists("nope")
assert getsize("f.txt") == 4 and samefile("f.txt", "./f.txt")
