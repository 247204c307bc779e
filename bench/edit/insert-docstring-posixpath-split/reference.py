import os


def _get_sep(path):
    """Return the path separator for ``path``: b'/' for a bytes path, '/' for a str."""
    if isinstance(path, bytes):
        return b'/'
    else:
        return '/'


def split(p):
    """Split the path ``p`` at its last slash and return the tuple (head, tail).

    Trailing slashes are removed from head unless it consists only of slashes.
    """
    p = os.fspath(p)
    sep = _get_sep(p)
    i = p.rfind(sep) + 1
    head, tail = p[:i], p[i:]
    if head and head != sep*len(head):
        head = head.rstrip(sep)
    return head, tail


def basename(p):
    """Return the final component of ``p``: everything after the last slash."""
    p = os.fspath(p)
    sep = _get_sep(p)
    i = p.rfind(sep) + 1
    return p[i:]


def dirname(p):
    """Return the directory part of ``p``, without trailing slashes unless it is the root."""
    p = os.fspath(p)
    sep = _get_sep(p)
    i = p.rfind(sep) + 1
    head = p[:i]
    if head and head != sep*len(head):
        head = head.rstrip(sep)
    return head


def isabs(s):
    """Return True if the path ``s`` is absolute (starts with a slash), else False."""
    s = os.fspath(s)
    sep = _get_sep(s)
    return s.startswith(sep)
