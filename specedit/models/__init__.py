"""Models: where their weights come from (bundled.py), their preparation as a loadable folder
(prepare.py, gguf_folder.py), loading them (load.py), the light tokenizer (tokenizer.py) and
llama.cpp's prefix store (prefixes.py)."""

import os


def quiet_transformers() -> None:
    """stderr belongs to specedit's own output: transformers shows no progress bars nor info
    logs, nor, where torch is not installed (the llama.cpp engine reads tokenizers with
    transformers alone), its advice at import to install torch. Called before transformers is
    first imported; the advice's switch is set for that import only."""
    previous = os.environ.get("TRANSFORMERS_NO_ADVISORY_WARNINGS")
    os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
    try:
        from transformers.utils import logging
    finally:
        if previous is None:
            del os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"]
        else:
            os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = previous
    logging.disable_progress_bar()
    logging.set_verbosity_error()
