"""specedit: edit files with a local LLM, fast, by using the input as the draft."""

__version__ = "0.1.0"
