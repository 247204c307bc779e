"""Reading inputs with clear errors, and writing outputs atomically, durably and without losing
what someone else wrote in the meantime."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISFIFO, S_ISLNK, S_ISREG, S_ISVTX, S_IWOTH

from specedit.console import warning

BOM = "\ufeff"
MAX_LINKS = 40  # symbolic links followed on one path, as Linux allows
MAX_INPUT_BYTES = 64 << 20  # far past any context; what is read of an input at most
NONBLOCK = getattr(os, "O_NONBLOCK", 0)  # POSIX; Windows has no named pipes to wait on
BINARY = getattr(os, "O_BINARY", 0)  # Windows: os.open is in text mode without it


class InputError(Exception):
    """The input cannot be edited; the message says why in one line."""


class ChangedOnDisk(Exception):
    """The file changed after it was read; the message says how, in a few words."""


@dataclass(frozen=True)
class Fingerprint:
    """A file as it was read: compared with the file on disk just before an edit of it is
    written, since minutes of model time separate the two."""

    size: int
    mtime_ns: int
    sha256: str

    @classmethod
    def of(cls, data: bytes, stat: os.stat_result) -> Fingerprint:
        return cls(stat.st_size, stat.st_mtime_ns, hashlib.sha256(data).hexdigest())

    def change(self, path: str | Path) -> str | None:
        """How the file at `path` differs from this fingerprint, in a few words; None when its
        size, modification time and bytes are all the same."""
        try:
            now = fingerprint(path)
        except FileNotFoundError:
            return "it was removed"
        if now == self:
            return None
        found = []
        if now.size != self.size:
            found.append(f"its size went from {self.size} to {now.size} bytes")
        if now.mtime_ns != self.mtime_ns:
            found.append("its modification time changed")
        if now.sha256 == self.sha256:
            found.append("same content")
        elif now.size == self.size:
            found.append("its content changed")
        return ", ".join(found)


@dataclass(frozen=True)
class Source:
    """A text read for editing, with the file's fingerprint (None for stdin)."""

    text: str
    fingerprint: Fingerprint | None = None


def fingerprint(path: str | Path) -> Fingerprint:
    """The file's fingerprint now (stat before the read: a write during the read shows as a
    change later, never the reverse); OSError if it cannot be read."""
    with open(path, "rb") as f:
        stat = os.fstat(f.fileno())
        return Fingerprint.of(f.read(), stat)


def read_source(path: str) -> Source:
    """Read a UTF-8 text file with its fingerprint, or stdin for '-'. A file is a regular file
    or a pipe (`<(command)`): a named pipe nobody writes to reads as empty instead of waiting
    for ever, a device or a socket is refused, and no input is read past MAX_INPUT_BYTES
    (`/dev/zero` would fill the memory)."""
    stamp = None
    if path == "-":
        data, name = sys.stdin.buffer.read(MAX_INPUT_BYTES + 1), "stdin"
    else:
        if Path(path).is_dir():
            raise InputError(f"{path} is a directory, not a file")
        try:
            descriptor = os.open(path, os.O_RDONLY | BINARY | NONBLOCK)  # a FIFO opens at once
            with open(descriptor, "rb") as f:
                stat = os.fstat(f.fileno())
                if not (S_ISREG(stat.st_mode) or S_ISFIFO(stat.st_mode)):
                    raise InputError(
                        f"{path} is not a file of text (a device or a socket); for stdin give -"
                    )
                if NONBLOCK:
                    os.set_blocking(descriptor, True)  # a pipe's writer is waited for, if any
                data = f.read(MAX_INPUT_BYTES + 1)
        except FileNotFoundError:
            raise InputError(f"{path}: no such file") from None
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror}") from None
        name, stamp = path, Fingerprint.of(data, stat)
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"{name} is larger than {MAX_INPUT_BYTES >> 20} MiB; specedit edits text")
    if data.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        raise InputError(
            f"{name} is UTF-16 or UTF-32 text (its byte order mark says so); specedit edits "
            f"UTF-8: convert it first (iconv -f UTF-16 -t UTF-8)"
        )
    if b"\0" in data[:8192]:
        raise InputError(f"{name} looks binary (it holds NUL bytes); specedit edits text")
    try:
        return Source(data.decode("utf-8"), stamp)
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{name} is not valid UTF-8: byte 0x{data[exc.start]:02x} at offset {exc.start}"
        ) from None


def read_text(path: str) -> str:
    """Read a UTF-8 text file, or stdin for '-'."""
    return read_source(path).text


def read_input(path: str) -> Source:
    """A text to edit, with its fingerprint: a file, or stdin for '-', that holds more than
    blanks."""
    source = read_source(path)
    if not source.text.removeprefix(BOM).strip():
        raise InputError(f"{'stdin' if path == '-' else path} is empty")
    return source


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


def resolve(path: str | Path) -> Path:
    """`path` with its symbolic links followed, as `os.path.realpath` does, except those Linux's
    protected_symlinks rule would not follow for us, whatever that setting is here: a link in a
    sticky folder that others may write to (/tmp), owned by neither us nor the folder's owner.
    Another user may have planted it there to make us write where they cannot; the kernel
    guards only the links it follows itself, not a path resolved here. PermissionError for
    such a link."""
    parts = list(reversed(Path(os.getcwd(), path).parts))
    current = Path(parts.pop())
    links = 0
    while parts:
        part = parts.pop()
        if part == "..":
            current = current.parent
            continue
        step = current / part
        try:
            found = os.lstat(step)
        except OSError:  # no such file (yet): the rest of the path is taken as it is
            current = step
            continue
        if not S_ISLNK(found.st_mode):
            current = step
            continue
        folder = os.stat(current)
        shared = folder.st_mode & (S_ISVTX | S_IWOTH) == S_ISVTX | S_IWOTH
        if shared and found.st_uid not in (os.geteuid(), folder.st_uid):
            raise PermissionError(
                errno.EACCES,
                f"{step} is a symbolic link owned by uid {found.st_uid}, neither you nor the "
                f"owner of the shared folder {current}: not followed, as with Linux's "
                "protected_symlinks",
            )
        links += 1
        if links > MAX_LINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path))
        link = Path(os.readlink(step))
        if link.is_absolute():
            current = Path(link.anchor)
        parts.extend(reversed(link.parts[1:] if link.is_absolute() else link.parts))
    return current


def replace_atomically(
    path: str | Path, write: Callable[[Path], None], unchanged: Fingerprint | None = None
) -> Path:
    """Have `write(temporary path)` write the file, then rename it onto `path`, so a failure or
    Ctrl-C never leaves a half-written file and readers never see one. The one way specedit
    writes a file in place: edits, indexes, calibrations.

    - A symbolic link is followed: its target is replaced and the link stays a link; but not
      another user's link in a shared sticky folder such as /tmp (`resolve`).
    - An existing file's mode and extended attributes (ACLs) are kept, and its owner and group
      where permitted (its group alone, with a warning, where the owner cannot be); a new file
      gets 0o666 less the umask, as `open` would give it.
    - The temporary file is flushed to disk (fsync) before the rename, and the folder after it
      (where the system allows), so a crash leaves the old file or the new one.
    - With `unchanged`, the file must still match that fingerprint, checked just before the
      rename: ChangedOnDisk otherwise, and nothing is written.
    - The rename gives the path a new file: other hard links to the old one keep the old text
      (a warning says so). Writing in place would keep them, but a failure midway would then
      leave a half-written file, which is worse.

    Returns the path written (the link's target for a link); OSError when it cannot be written
    (no such folder, disk full, read-only, a link `resolve` will not follow, a device or a
    pipe, which a rename would replace rather than write to), with nothing
    written and no temporary file left."""
    target = resolve(path)
    try:
        stat = target.stat()
    except FileNotFoundError:
        stat = None
    if stat is not None and not S_ISREG(stat.st_mode):  # renamed over, a device would be gone
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        if stat is None:
            os.chmod(tmp, 0o666 & ~_umask())
        else:
            _keep_owner(tmp, stat, path)
            os.chmod(tmp, stat.st_mode & 0o7777)  # after chown, which may clear setuid bits
            _keep_extended_attributes(target, Path(tmp))
        _fsync(tmp)
        if unchanged is not None and (why := unchanged.change(target)) is not None:
            raise ChangedOnDisk(why)
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


def _keep_owner(tmp: str, stat: os.stat_result, path: str | Path) -> None:
    """Give the new file the old one's owner and group. Where the owner cannot be kept
    (another user's file) it becomes ours, as with any editor that saves by renaming, and
    says so, but keeps the group where we are in it: a team's file stays the team's."""
    if not hasattr(os, "chown"):  # Windows
        return
    try:
        os.chown(tmp, stat.st_uid, stat.st_gid)
        return
    except PermissionError:
        with contextlib.suppress(PermissionError):
            os.chown(tmp, -1, stat.st_gid)
    now = os.stat(tmp)
    warning(
        f"{path} could not keep its owner and group ({stat.st_uid}:{stat.st_gid}); "
        f"they are now {now.st_uid}:{now.st_gid}"
    )


def _keep_extended_attributes(source: Path, tmp: Path) -> None:
    """Copy `source`'s extended attributes (POSIX ACLs, a user's tags) to the file that
    replaces it; those the file system or our rights refuse are left behind."""
    if not hasattr(os, "listxattr"):
        return
    try:
        names = os.listxattr(source)
    except OSError:
        return
    for name in names:
        with contextlib.suppress(OSError):
            os.setxattr(tmp, name, os.getxattr(source, name))


def write_atomic(path: str | Path, text: str, unchanged: Fingerprint | None = None) -> Path:
    """Replace `path` with `text` (UTF-8, newlines as given), atomically (`replace_atomically`):
    ChangedOnDisk if the file no longer matches `unchanged`, OSError if it cannot be written."""
    data = text.encode("utf-8")
    return replace_atomically(path, lambda tmp: tmp.write_bytes(data), unchanged)
