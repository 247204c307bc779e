"""`specedit trust`: the user's word that a project's settings file may set every key.

Like direnv's `allow`: the file's path and sha256 go to the user's config folder, so the trust
holds for these bytes at this path only; an edited file must be trusted again (settings.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from specedit.cli.exits import Exit
from specedit.cli.settings import (
    FREE,
    SettingsError,
    forget,
    project_file,
    read_project_file,
    trust,
    trust_store,
    trusted_files,
)
from specedit.console import error, line, printable, say


def trust_command(
    file: Annotated[
        Path | None,
        typer.Argument(
            help="The settings file: a .specedit.toml or a pyproject.toml [default: the "
            "project root's, from the working directory].",
            show_default=False,
        ),
    ] = None,
    forget_file: Annotated[
        bool, typer.Option("--forget", help="Take the trust back: the file's keys are limited.")
    ] = False,
    list_files: Annotated[
        bool, typer.Option("--list", help="List the trusted files and whether they changed.")
    ] = False,
) -> None:
    """Let a project's settings file set every key: a command to run (test), a server to send
    code to, files to write, the model. Until then a project file may only choose how an edit is
    decoded and shown. Read the file first: trusting it runs what it says. A changed file must
    be trusted again."""
    try:
        if list_files:
            _list()
            return
        path = _settings_path(file)
        if forget_file:
            if not forget(path):
                error(f"{path} was not trusted")
                raise typer.Exit(Exit.INPUT)
            say(f"no longer trusted: {path}")
            return
        found = read_project_file(path)
        if found is None:
            error(f"{path} has no [tool.specedit] table")
            raise typer.Exit(Exit.INPUT)
        trust(found)
    except SettingsError as exc:
        error(str(exc))
        raise typer.Exit(Exit.INPUT) from None
    held = {key: value for key, value in found.table.items() if key.replace("-", "_") not in FREE}
    say(f"trusted {path} (sha256 {found.sha256[:12]}) as it is now")
    for key, value in held.items():
        line(f"  {key} = {json.dumps(value)}")


def _settings_path(file: Path | None) -> Path:
    """The absolute path a trust record names: the one settings.py looks up."""
    if file is None:
        found = project_file()
        if found is None:
            error("no project settings here: no .specedit.toml or [tool.specedit] at the root")
            raise typer.Exit(Exit.INPUT)
        return found.path
    if file.name not in (".specedit.toml", "pyproject.toml"):
        error(f"{file} is not a settings file (.specedit.toml or pyproject.toml)")
        raise typer.Exit(Exit.INPUT)
    return file.parent.resolve() / file.name


def _list() -> None:
    """Each trusted file on stdout, with `ok`, `changed` or `missing`."""
    for path, sha256 in sorted(trusted_files().items()):
        try:
            found = read_project_file(Path(path))
            state = "ok" if found and found.sha256 == sha256 else "changed"
        except FileNotFoundError:
            state = "missing"
        typer.echo(f"{state}\t{printable(path)}")
    if not trusted_files():
        say(f"no trusted files ({trust_store()})")
