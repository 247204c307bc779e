"""Project settings: `[tool.specedit]` in pyproject.toml, or a `.specedit.toml`.

They are read from the project root only: the nearest folder, walking up from the working
directory, that holds `.git`, `pyproject.toml` or `.specedit.toml` (as black finds a project).
There `.specedit.toml` wins over `pyproject.toml`'s `[tool.specedit]`; a folder above the root
is never read, and without a root no settings apply. Keys are option names (`method = "adapld"`,
`max-new-tokens = 2048`); command-line flags and SPECEDIT_* environment variables override them.

Keys that run a command, send code elsewhere, read or write other files or override the safety
checks (GUARDED) are taken only from a file that the user owns and that nobody else can change
(like git's safe.directory): neither the file nor its folder writable by group or others, the
folder owned by the user or root. Otherwise each such key is dropped with a warning and the
rest apply. A cloned repository or a shared folder cannot make an edit run its command.
"""

from __future__ import annotations

import os
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

PROJECT_MARKERS = (".git", "pyproject.toml", ".specedit.toml")
# Settings keys (option parameter names) only a trusted file may set, and what they do.
GUARDED = {
    "test": "runs a shell command",
    "server": "sends the file to a server",
    "force": "writes edits the safety checks refuse",
    "reference": "reads other files",
    "output": "writes another file",
    "in_place": "rewrites the file",
    "stats_file": "writes another file",
    "attribution": "writes another file",
    "json_file": "writes another file",
    "tasks_file": "runs the tasks' tests",
    "prompt_sets": "reads prompt templates",
    "host": "serves on the network",
}


class SettingsError(ValueError):
    """A settings file is unreadable or names an unknown option."""


@dataclass
class Settings:
    values: dict = field(default_factory=dict)  # option parameter name -> value
    source: Path | None = None
    warnings: list[str] = field(default_factory=list)  # one line per refused key


def project_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above `start` (the working directory) with a project marker."""
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        if any(os.path.lexists(candidate / name) for name in PROJECT_MARKERS):
            return candidate
    return None


def find_settings(start: Path | None = None) -> Settings:
    """The project root's settings, less the guarded keys an untrusted file sets."""
    root = project_root(start)
    if root is None:
        return Settings()
    for name in (".specedit.toml", "pyproject.toml"):
        path = root / name
        if not path.is_file():
            continue
        text, doubt = _read(path)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise SettingsError(f"cannot read settings from {path}: {exc}") from None
        table = data if name == ".specedit.toml" else data.get("tool", {}).get("specedit")
        if table is None:
            return Settings()
        values, warnings = {}, []
        for key, value in table.items():
            option = key.replace("-", "_")
            if doubt and option in GUARDED:
                warnings.append(f"ignoring `{key}` in {path} ({GUARDED[option]}): {doubt}")
            else:
                values[option] = value
        return Settings(values, path, warnings)
    return Settings()


def _read(path: Path) -> tuple[str, str | None]:
    """The file's text, and why it is not trusted (None when it is). The checks are on the
    opened file itself, so it cannot be swapped between them and the read."""
    try:
        fd = os.open(path, os.O_RDONLY)
        with os.fdopen(fd, "rb") as handle:
            status = os.fstat(handle.fileno())
            data = handle.read()
        folder = os.stat(path.resolve().parent)
    except OSError as exc:
        raise SettingsError(f"cannot read settings from {path}: {exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SettingsError(f"cannot read settings from {path}: {exc}") from None
    return text, _doubt(status, folder)


def _doubt(file: os.stat_result, folder: os.stat_result) -> str | None:
    if not hasattr(os, "getuid"):  # no owners or mode bits to check (Windows)
        return None
    user = os.getuid()
    if file.st_uid != user:
        return f"the file belongs to another user (uid {file.st_uid})"
    if file.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "others can write the file (`chmod go-w` it to allow this)"
    if folder.st_uid not in (user, 0):
        return f"its folder belongs to another user (uid {folder.st_uid})"
    if folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH):  # a sticky shared folder counts too
        return "others can write its folder"
    return None


def default_map(settings: dict, commands: dict[str, set[str]], source: Path | None) -> dict:
    """Click's default_map: each command gets the settings that are options of its own."""
    known = set().union(*commands.values())
    unknown = sorted(set(settings) - known)
    if unknown:
        raise SettingsError(f"{source}: unknown setting(s) {', '.join(unknown)}")
    return {
        command: {k: v for k, v in settings.items() if k in options}
        for command, options in commands.items()
    }
