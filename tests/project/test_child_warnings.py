"""The processes the tests start fail on a deprecation, as the tests do (conftest's
CHILD_WARNINGS): a warning a child prints to its captured stderr would go unseen otherwise."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("category", ["DeprecationWarning", "FutureWarning"])
def test_a_child_fails_on_a_deprecation(category):
    code = f"import warnings; warnings.warn('going away', {category})"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode != 0 and f"{category}: going away" in result.stderr
