_INPUT = r'''import os
import stat
from posixpath import abspath, isabs, join, split


def realpath(filename, *, strict=False):
    """Return the canonical path of the specified filename, eliminating any
symbolic links encountered in the path."""
    filename = os.fspath(filename)
    path, ok = _joinrealpath(filename[:0], filename, strict, {})
    return abspath(path)


def _joinrealpath(path, rest, strict, seen):
    if isinstance(path, bytes):
        sep = b'/'
        curdir = b'.'
        pardir = b'..'
    else:
        sep = '/'
        curdir = '.'
        pardir = '..'

    if isabs(rest):
        rest = rest[1:]
        path = sep

    while rest:
        name, _, rest = rest.partition(sep)
        if not name or name == curdir:
            # répertoire courant
            continue
        if name == pardir:
            # répertoire parent
            if path:
                path, name = split(path)
                if name == pardir:
                    path = join(path, pardir, pardir)
            else:
                path = pardir
            continue
        newpath = join(path, name)
        try:
            st = os.lstat(newpath)
        except OSError:
            if strict:
                raise
            is_link = False
        else:
            is_link = stat.S_ISLNK(st.st_mode)
        if not is_link:
            path = newpath
            continue
        # Résoudre le lien symbolique
        if newpath in seen:
            # Chemin déjà vu
            path = seen[newpath]
            if path is not None:
                # utiliser la valeur en cache
                continue
            # Le lien symbolique n'est pas résolu, nous avons donc une boucle de liens.
            if strict:
                # Lever OSError(errno.ELOOP)
                os.stat(newpath)
            else:
                # Renvoyer la partie déjà résolue + le reste du chemin inchangé.
                return join(newpath, rest), False
        seen[newpath] = None # lien symbolique non résolu
        path, ok = _joinrealpath(path, os.readlink(newpath), strict, seen)
        if not ok:
            return join(path, rest), False
        seen[newpath] = path # lien symbolique résolu

    return path, True
'''

import ast as _ast
import io as _io
import re as _re
import tokenize as _tokenize

_FOREIGN = set('le la les des est pas une nous avons donc répertoire courant résoudre lien liens symbolique chemin déjà vu utiliser valeur boucle lever renvoyer partie résolue reste inchangé résolu'.split())
_ENGLISH = set('current parent directory dir resolve resolved symbolic link symlink path seen cached value loop rest unchanged'.split())
with open(__file__, encoding="utf-8") as _handle:
    _program = _handle.read()
_comments = [
    _token.string
    for _token in _tokenize.generate_tokens(_io.StringIO(_program).readline)
    if _token.type == _tokenize.COMMENT
]
_words = _re.findall(r"[^\W\d_]+", " ".join(_comments).lower())
_left = sorted(set(_words) & _FOREIGN)
assert not _left, f"comments still hold untranslated words: {_left}"
assert len(_words) >= 22, f"comments were dropped: {_comments}"
assert len(set(_words) & _ENGLISH) >= 3, f"comments are not in English: {_comments}"


def _functions(source):
    return {
        _node.name: _ast.dump(_node)
        for _node in _ast.parse(source).body
        if isinstance(_node, _ast.FunctionDef)
    }


_mine = _functions(_program)
for _name, _dump in _functions(_INPUT).items():
    assert _mine.get(_name) == _dump, f"the code of {_name} changed"

import os as _os
import posixpath as _ref

_os.makedirs("real/sub")
_os.symlink("real", "link")
_os.symlink("sub/../..", "real/up")
_os.symlink("loop2", "loop1")
_os.symlink("loop1", "loop2")
_os.symlink("missing/x", "dangling")
_paths = ["link", "link/sub", "link/up/link", "real/./sub/..", "loop1",
          "loop1/x", "dangling", "dangling/y", "nope/..", "/", "", ".", "..",
          "//a", b"link/sub", "link/../link/sub/"]
for _path in _paths:
    assert realpath(_path) == _ref.realpath(_path), _path
    try:
        _want = _ref.realpath(_path, strict=True)
    except OSError as _error:
        try:
            realpath(_path, strict=True)
        except OSError as _mine:
            assert _mine.errno == _error.errno, (_path, _mine, _error)
        else:
            raise AssertionError(f"realpath({_path!r}, strict=True) should raise")
    else:
        assert realpath(_path, strict=True) == _want, _path
