"""Reading inputs with clear errors, and writing outputs atomically."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path


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


def replace_atomically(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Have `write(temporary path)` write the file, then rename it onto `path`, so a failure or
    Ctrl-C never leaves a half-written file and readers never see one; an existing file's mode is
    kept. The one way specedit writes a file in place: edits, indexes, calibrations."""
    target = Path(path)
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_atomic(path: str | Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8, newlines as given), atomically."""

    def write(tmp: Path) -> None:
        with tmp.open("w", encoding="utf-8", newline="") as f:
            f.write(text)

    replace_atomically(path, write)
