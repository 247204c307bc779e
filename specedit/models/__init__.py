"""Models: where their weights come from (bundled.py), their preparation as a loadable folder
(prepare.py), loading them (load.py), the light tokenizer (tokenizer.py) and llama.cpp's prefix
store (prefixes.py)."""
