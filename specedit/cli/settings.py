"""Settings: the user's own config file, then the project's `[tool.specedit]` in pyproject.toml
or `.specedit.toml`; SPECEDIT_* environment variables and flags override both.

The user's config (`~/.config/specedit/config.toml`, under XDG_CONFIG_HOME where set) is the
user's word: every key applies, provided nobody else can change the file.

A project's settings are read from its root only: the nearest folder, walking up from the
working directory, that holds `.git`, `pyproject.toml` or `.specedit.toml` (as black finds a
project). There `.specedit.toml` wins over `pyproject.toml`'s `[tool.specedit]`; a folder above
the root is never read, and without a root no project settings apply. Keys are option names
(`method = "adapld"`, `max-new-tokens = 2048`).

A project file is not the user's word, whoever owns it: `git clone` makes every file the
user's. So a project file may set only the keys in FREE, which change how an edit is decoded
or shown; any other key (one that runs a command, sends code or a key elsewhere, reads or writes
another file, chooses the model or weakens a check, and any key added later) applies only
after `specedit trust` recorded the file's path and sha256 in the user's config folder (as
direnv's `allow` does). A changed file must be trusted again; until then those keys are dropped
with a one-line warning that names them and the command.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from specedit.files import replace_atomically

PROJECT_MARKERS = (".git", "pyproject.toml", ".specedit.toml")
# Keys (option parameter names) a project file may set without being trusted: they change how
# an edit is decoded, sampled, chosen or shown, never what runs, where code goes or what is
# written. Every other key waits for `specedit trust`.
FREE = frozenset(
    {
        "method",
        "samples",
        "vote",
        "attempts",
        "test_timeout",
        "max_new_tokens",
        "temperature",
        "top_p",
        "top_k",
        "seed",
        "context",
        "quiet",
        "stats",
        "diff",
        "check",
        "threads",
        "dtype",
        "engine",
        "methods",
        "tasks",
        "suite",
        "repeat",
        "engines",
        "regions",
        "bench_attempts",
    }
)
TRUST_COMMAND = "specedit trust"


class SettingsError(ValueError):
    """A settings file is unreadable or names an unknown option."""


@dataclass
class Settings:
    values: dict = field(default_factory=dict)  # option parameter name -> value
    # option -> the file that set it (or set it and was not trusted to)
    origins: dict[str, Path] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # one line each

    def add(self, table: dict, source: Path) -> None:
        """`table`'s keys, over those set before."""
        for key, value in table.items():
            self.values[_option(key)] = value
            self.origins[_option(key)] = source


def config_dir() -> Path:
    """The user's specedit config folder (XDG_CONFIG_HOME, else ~/.config)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(base) / "specedit"


def user_config() -> Path:
    return config_dir() / "config.toml"


def trust_store() -> Path:
    """Where `specedit trust` keeps each trusted project file's sha256, by path."""
    return config_dir() / "trusted.json"


def project_root(start: Path | None = None) -> Path | None:
    """The nearest folder at or above `start` (the working directory) with a project marker."""
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        if any(os.path.lexists(candidate / name) for name in PROJECT_MARKERS):
            return candidate
    return None


@dataclass(frozen=True)
class ProjectFile:
    """A project's settings file as read: its table, and the sha256 of the bytes read."""

    path: Path
    table: dict
    sha256: str


def project_file(start: Path | None = None) -> ProjectFile | None:
    """The project root's settings file, where it has one with settings in it."""
    root = project_root(start)
    if root is None:
        return None
    for name in (".specedit.toml", "pyproject.toml"):
        if (root / name).is_file():
            return read_project_file(root / name)
    return None


def read_project_file(path: Path) -> ProjectFile | None:
    """`path` (a `.specedit.toml`, or a pyproject.toml's `[tool.specedit]`) as read; None for a
    pyproject.toml without settings."""
    data, sha256 = _read(path)
    table = data if path.name != "pyproject.toml" else data.get("tool", {}).get("specedit")
    if not isinstance(table, dict):
        return None
    return ProjectFile(path, table, sha256)


def find_settings(start: Path | None = None) -> Settings:
    """The user's config, then the project's settings less the keys its file may not set
    until it is trusted."""
    settings = Settings()
    path = user_config()
    if path.is_file():
        settings.add(_read(path, private=True)[0], path)
    found = project_file(start)
    if found is None:
        return settings
    trusted = trusted_files().get(str(found.path)) == found.sha256
    held = [key for key in found.table if not trusted and _option(key) not in FREE]
    settings.add({k: v for k, v in found.table.items() if k not in held}, found.path)
    settings.origins |= {_option(key): found.path for key in held}  # still checked: a typo
    if held:
        settings.warnings.append(
            f"ignoring {', '.join(held)} in {found.path}: a project's settings may set "
            f"{'this' if len(held) == 1 else 'these'} only once you trust the file; read it, "
            f"then run `{TRUST_COMMAND} {shlex.quote(str(found.path))}`"
        )
    return settings


def _option(key: str) -> str:
    return key.replace("-", "_")


def trusted_files() -> dict[str, str]:
    """Path -> sha256 of the project files the user trusted; nothing if the store is not the
    user's own (someone else could have trusted files in the user's name)."""
    path = trust_store()
    try:
        raw = _read_bytes(path, private=True)
    except FileNotFoundError:
        return {}
    try:
        records = json.loads(raw)
    except ValueError as exc:
        raise SettingsError(f"cannot read {path}: {exc}") from None
    if not isinstance(records, dict):
        raise SettingsError(f"cannot read {path}: not a table of paths")
    return {str(k): str(v) for k, v in records.items()}


def trust(found: ProjectFile) -> None:
    """Record `found` as trusted, as read (its sha256), replacing an older record."""
    _store({**trusted_files(), str(found.path): found.sha256})


def forget(path: Path) -> bool:
    """Drop `path`'s record; whether there was one."""
    records = trusted_files()
    if records.pop(str(path), None) is None:
        return False
    _store(records)
    return True


def _store(records: dict[str, str]) -> None:
    folder = config_dir()
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    data = (json.dumps(records, indent=1, sort_keys=True) + "\n").encode()

    try:
        replace_atomically(trust_store(), lambda tmp: tmp.write_bytes(data))
        trust_store().chmod(0o600)  # a new file gets the umask's mode
    except OSError as exc:
        raise SettingsError(f"cannot write {trust_store()}: {exc}") from None


def _read(path: Path, private: bool = False) -> tuple[dict, str]:
    """The TOML file's table and the sha256 of the bytes it was parsed from."""
    raw = _read_bytes(path, private)
    try:
        return tomllib.loads(raw.decode("utf-8")), hashlib.sha256(raw).hexdigest()
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"cannot read settings from {path}: {exc}") from None


def _read_bytes(path: Path, private: bool) -> bytes:
    """The file's bytes; with `private`, only if nobody but the user (or root) could have
    written the file or its folder (checked on the opened file, so it cannot be swapped)."""
    try:
        with open(path, "rb") as handle:
            status = os.fstat(handle.fileno())
            data = handle.read()
        folder = os.stat(Path(path).resolve().parent)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise SettingsError(f"cannot read settings from {path}: {exc}") from None
    if private and (doubt := _doubt(status, folder)):
        raise SettingsError(f"not reading {path}: {doubt}")
    return data


def _doubt(file: os.stat_result, folder: os.stat_result) -> str | None:
    """Why someone other than the user could have written the file, or None."""
    if not hasattr(os, "getuid"):  # no owners or mode bits to check (Windows)
        return None
    user = os.getuid()
    if file.st_uid not in (user, 0):
        return f"the file belongs to another user (uid {file.st_uid})"
    if file.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "others can write the file (`chmod go-w` it)"
    if folder.st_uid not in (user, 0):
        return f"its folder belongs to another user (uid {folder.st_uid})"
    if folder.st_mode & (stat.S_IWGRP | stat.S_IWOTH):  # a sticky shared folder counts too
        return "others can write its folder (`chmod go-w` it)"
    return None


def default_map(settings: Settings, commands: dict[str, set[str]]) -> dict:
    """Click's default_map: each command gets the settings that are options of its own."""
    known = set().union(*commands.values())
    unknown = sorted(set(settings.origins) - known)
    if unknown:
        where = settings.origins[unknown[0]]
        raise SettingsError(f"{where}: unknown setting(s) {', '.join(unknown)}")
    return {
        command: {k: v for k, v in settings.values.items() if k in options}
        for command, options in commands.items()
    }
