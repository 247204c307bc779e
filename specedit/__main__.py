"""`python -m specedit` runs the CLI, as the `specedit` script does.

`python -m` puts the current folder first on the module path, so a cloned repository's
`typer.py` would be imported in place of the library: the folder is taken off the path first
(as `python -P` would), since a package installed beside Python never needs it."""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from specedit.cli import run  # after the path is made safe

run()
