"""One edit of one text: the request and the local editor (editor.py), the prompt and its
templates (prompts.py, templates/*.toml), regions, the runaway guard, lazy snippets, the safety
checks before a write, the user's checks, and choosing among sampled candidates."""
