"""The registry makes drafters by name, and says in one line what a drafter needs where it
cannot be made."""

from __future__ import annotations

import sys

import pytest

from specedit.drafting import DrafterUnavailable
from specedit.drafting.registry import make_drafter


def test_a_drafter_whose_parts_are_not_installed_names_the_install_command(qwen_tiny, monkeypatch):
    """Without the torch extra (the light install that runs llama.cpp), a drafter that reads
    the vocabulary's indexes cannot be made: the error names the package and the command, and
    the CLI reports it in one line instead of a traceback."""
    monkeypatch.delitem(sys.modules, "specedit.drafting.vocabulary", raising=False)
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` fails as if not installed
    with pytest.raises(DrafterUnavailable) as caught:
        make_drafter("adapld", qwen_tiny)
    assert (
        str(caught.value)
        == "--method adapld needs torch: pip install torch==2.13.0 'specedit[torch]'"
    )


def test_an_unknown_method_names_the_known_ones(qwen_tiny):
    with pytest.raises(ValueError, match=r"unknown method 'nope': choose one of .*adapld"):
        make_drafter("nope", qwen_tiny)
