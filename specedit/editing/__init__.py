"""One edit of one text: the request and its generation (editor.py), the editor that runs it in
this process and what is made of its answer (local.py), the prompt and its templates
(prompts.py, templates/*.toml), regions, the runaway guard, lazy snippets, the safety checks
before a write, the user's checks, and drawing and judging candidates (selection.py,
redraws.py, verdicts.py)."""
