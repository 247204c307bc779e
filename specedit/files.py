"""Reading inputs with clear errors, and writing outputs atomically and durably."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from specedit.console import warning

BOM = "\ufeff"


class InputError(Exception):
    """The input cannot be edited; the message says why in one line."""


def read_text(path: str) -> str:
    """Read a UTF-8 text file, or stdin for '-'."""
    if path == "-":
        data, name = sys.stdin.buffer.read(), "stdin"
    else:
        file = Path(path)
        if file.is_dir():
            raise InputError(f"{path} is a directory, not a file")
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror}") from None
        name = path
    if b"\0" in data[:8192]:
        raise InputError(f"{name} looks binary (it holds NUL bytes); specedit edits text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name} is not valid UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}"
        ) from None


def read_input(path: str) -> str:
    """A text to edit: a file, or stdin for '-', that holds more than blanks."""
    text = read_text(path)
    if not text.strip():
        raise InputError(f"{'stdin' if path == '-' else path} is empty")
    return text


def keep_conventions(original: str, edited: str) -> str:
    """`edited` with `original`'s line endings and byte order mark, whatever the model wrote:
    an input whose line breaks are mostly CRLF gets CRLF for every lone LF (a few LF lines of a
    mixed file become CRLF too); an input without any CRLF gets LF for every CRLF; otherwise
    the breaks are left as written. The result starts with one BOM exactly when `original`
    does. Applied to every edited text specedit delivers: stdout, -o, -i, --diff and --check."""
    crlf = original.count("\r\n")
    if crlf > original.count("\n") - crlf:
        edited = re.sub(r"(?<!\r)\n", "\r\n", edited)
    elif not crlf:
        edited = edited.replace("\r\n", "\n")
    edited = edited.lstrip(BOM)
    return BOM + edited if original.startswith(BOM) else edited


def _umask() -> int:
    """The process's umask, read without changing it where Linux tells (os.umask sets it, a
    race with any thread that creates a file meanwhile)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _fsync(path: str | Path, directory: bool = False) -> None:
    """Flush a file (or a folder's entries) to disk."""
    flags = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) if directory else os.O_RDWR
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_atomically(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Have `write(temporary path)` write the file, then rename it onto `path`, so a failure or
    Ctrl-C never leaves a half-written file and readers never see one. The one way specedit
    writes a file in place: edits, indexes, calibrations.

    - A symbolic link is followed: its target is replaced and the link stays a link.
    - An existing file's mode is kept, and its owner and group where permitted; a new file gets
      0o666 less the umask, as `open` would give it.
    - The temporary file is flushed to disk (fsync) before the rename, and the folder after it
      (where the system allows), so a crash leaves the old file or the new one.
    - The rename gives the path a new file: other hard links to the old one keep the old text
      (a warning says so). Writing in place would keep them, but a failure midway would then
      leave a half-written file, which is worse.

    Returns the path written (the link's target for a link); OSError when it cannot be written
    (no such folder, disk full, read-only), with nothing written and no temporary file left."""
    target = Path(os.path.realpath(path))
    try:
        stat = target.stat()
    except FileNotFoundError:
        stat = None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        if stat is None:
            os.chmod(tmp, 0o666 & ~_umask())
        else:
            # where we may not chown (another user's file; Windows has no chown) the file
            # becomes ours, as with any editor that saves by renaming
            with contextlib.suppress(PermissionError, AttributeError):
                os.chown(tmp, stat.st_uid, stat.st_gid)
            os.chmod(tmp, stat.st_mode & 0o7777)  # after chown, which may clear setuid bits
        _fsync(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    with contextlib.suppress(OSError):  # some file systems cannot sync a folder
        _fsync(target.parent, directory=True)
    if stat is not None and stat.st_nlink > 1:
        others = stat.st_nlink - 1
        warning(
            f"{path} had {others} other hard link{'s' if others > 1 else ''}; "
            f"{'they keep' if others > 1 else 'it keeps'} the old text"
        )
    return target


def write_atomic(path: str | Path, text: str) -> Path:
    """Replace `path` with `text` (UTF-8, newlines as given), atomically (`replace_atomically`):
    OSError if it cannot be written."""
    data = text.encode("utf-8")
    return replace_atomically(path, lambda tmp: tmp.write_bytes(data))
