"""Project settings: `[tool.specedit]` in pyproject.toml, or a `.specedit.toml`.

The nearest file walking up from the working directory wins. Its keys are option names
(`method = "adapld"`, `max-new-tokens = 2048`); command-line flags and SPECEDIT_* environment
variables override them.
"""

from __future__ import annotations

import tomllib
from pathlib import Path


class SettingsError(ValueError):
    """A settings file is unreadable or names an unknown option."""


def find_settings(start: Path | None = None) -> tuple[dict, Path | None]:
    """The settings table of the nearest .specedit.toml or pyproject.toml with [tool.specedit]."""
    folder = (start or Path.cwd()).resolve()
    for candidate in (folder, *folder.parents):
        for name in (".specedit.toml", "pyproject.toml"):
            path = candidate / name
            if not path.is_file():
                continue
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError) as exc:
                raise SettingsError(f"cannot read settings from {path}: {exc}") from None
            table = data if name == ".specedit.toml" else data.get("tool", {}).get("specedit")
            if table is not None:
                return {key.replace("-", "_"): value for key, value in table.items()}, path
    return {}, None


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
