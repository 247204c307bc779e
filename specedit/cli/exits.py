"""Exit codes of every specedit command, as documented in the README (black's convention for
--check: 1 means "would change"). With 2 to 7 and 130 the file concerned is left as it was; a
batch goes on with the next file and exits with the highest code."""

from enum import IntEnum


class Exit(IntEnum):
    OK = 0
    CHANGED = 1  # --check found changes
    INPUT = 2  # usage, input or edit error
    MODEL = 3  # the model cannot be found, prepared or loaded
    UNSAFE = 4  # refused: the edit breaks the file's syntax or drops many lines (--force writes)
    TEST_FAILED = 5  # --test failed on every attempt
    CHANGED_ON_DISK = 6  # refused: the file changed on disk after it was read (lost update)
    WRITE = 7  # the file cannot be written (no such folder, disk full, read-only)
    INTERRUPTED = 130  # Ctrl-C; the message names the files a batch had written before it
