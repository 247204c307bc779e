"""Names of the engine's verification modes, in a module light enough for the CLI's choices:
"strict" is exact; "conditional" and "mixed" also accept plausible drafts (lossy on purpose)."""

VERIFY_MODES = ("strict", "conditional", "mixed")
