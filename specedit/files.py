"""Reading inputs with clear errors, and writing outputs atomically."""

from __future__ import annotations

import os
import sys
import tempfile
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


def write_atomic(path: str, text: str) -> None:
    """Replace `path` with `text` via a temp file in the same folder and a rename, so that a
    failure or Ctrl-C never leaves a half-written file; the file's mode is kept."""
    target = Path(path)
    mode = target.stat().st_mode & 0o7777 if target.exists() else None
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
