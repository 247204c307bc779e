"""`python -m specedit` runs the CLI, as the `specedit` script does.

`python -m` puts the current folder first on the module path, so a cloned repository's
`typer.py` would be imported in place of the library: the folder is taken off the path before
anything else is imported (as `python -P` would), since an installed package never needs it."""

import os
import sys


def _current_folder() -> str | None:
    try:
        return os.getcwd()
    except OSError:  # removed: Python did not put it on the path either
        return None


if not sys.flags.safe_path and sys.path and sys.path[0] in ("", _current_folder()):
    del sys.path[0]

from specedit.cli import run  # noqa: E402  (after the path is made safe)

run()
