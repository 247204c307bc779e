"""Exit codes of every specedit command, as documented in the README (black's convention for
--check: 1 means "would change")."""

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    CHANGED = 1  # --check found changes
    INPUT = 2  # usage, input or edit error
    MODEL = 3  # the model cannot be found, prepared or loaded
    UNSAFE = 4  # refused: the edit breaks the file's syntax or drops many lines (--force writes)
    TEST_FAILED = 5  # --test failed on every attempt
    INTERRUPTED = 130  # Ctrl-C; nothing is written then, nor with 2 to 5
