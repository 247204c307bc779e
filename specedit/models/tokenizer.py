"""A model's tokenizer without transformers, for the llama.cpp engine's start-up.

Importing transformers and loading its tokenizer are a large part of a cold edit's start-up;
the `tokenizers` library that does the work underneath loads the same pipeline in a fraction of
that. On the llama.cpp engine nothing else needs transformers, so a cold edit starts sooner.

The pipeline is the one transformers built, not a reading of the folder's files: transformers
changes it in code for some tokenizer classes (Qwen2's adds Unicode normalisation), so the
first load goes through transformers and `ChatTokenizer.export` writes what it built beside the
model; later loads read that. `ChatTokenizer` answers the calls an edit makes (encode with
offsets, decode, the special ids, the chat template with a generation prompt) as transformers'
tokenizer answers them (tested against it); any other call goes to transformers' tokenizer,
loaded on first use.
"""

from __future__ import annotations

import contextlib
import json
from datetime import datetime
from functools import cached_property
from importlib import metadata
from pathlib import Path
from typing import Any

from specedit.files import replace_atomically
from specedit.models import quiet_transformers

EXPORT = "specedit-tokenizer.json"  # written beside the model's own tokenizer files
SPECIAL = ("bos_token_id", "eos_token_id", "unk_token_id", "pad_token_id", "all_special_ids")


class ChatTokenizer:
    """The tokenizer of a model folder, as transformers built it."""

    def __init__(
        self, folder: Path, backend: Any, template: str, special: dict, names: dict
    ) -> None:
        self.folder, self.backend_tokenizer, self.chat_template = folder, backend, template
        for name in SPECIAL:
            setattr(self, name, special[name])
        self.special_tokens_map = names  # bos_token etc. as text: templates read them
        self._render = _compile(template)
        backend.no_truncation()  # as transformers' tokenizer encodes: whatever the file says
        backend.no_padding()

    @classmethod
    def open(cls, folder: Path) -> ChatTokenizer | None:
        """The folder's exported tokenizer, or None where there is none for the installed
        transformers (a newer one may build the pipeline otherwise)."""
        try:
            saved = json.loads((folder / EXPORT).read_text(encoding="utf-8"))
            if saved["transformers"] != metadata.version("transformers"):
                return None
            if saved["sources"] != _sources(folder):  # the model's tokenizer files changed
                return None
            return cls._from_saved(folder, saved)
        except Exception:  # none yet, unreadable or from another version: transformers reads it
            return None

    @staticmethod
    def export(tokenizer: Any, folder: Path) -> None:
        """Write what transformers built for `folder`, where it can stand in: a fast tokenizer
        with a chat template whose decode is the backend's own (no clean-up of spaces), and
        whose rendering of sample chats is transformers' own."""
        backend = getattr(tokenizer, "backend_tokenizer", None)
        template = getattr(tokenizer, "chat_template", None)
        if backend is None or not isinstance(template, str):
            return
        if getattr(tokenizer, "clean_up_tokenization_spaces", False):
            return
        saved = {
            "transformers": metadata.version("transformers"),
            "sources": _sources(folder),
            "backend": backend.to_str(),
            "chat_template": template,
            "special": {name: getattr(tokenizer, name) for name in SPECIAL},
            "names": dict(tokenizer.special_tokens_map),
        }
        ours = ChatTokenizer._from_saved(folder, saved)
        for chat in SAMPLE_CHATS:
            try:
                if ours.apply_chat_template(chat, True, False) != tokenizer.apply_chat_template(
                    chat, add_generation_prompt=True, tokenize=False
                ):
                    return  # a template that reads more than this renderer gives it
            except Exception:  # a template that refuses a sample (no system role): it decides
                continue
        text = json.dumps(saved)
        with contextlib.suppress(OSError):  # a read-only folder: transformers reads it each time
            replace_atomically(folder / EXPORT, lambda tmp: tmp.write_text(text, "utf-8"))

    @classmethod
    def _from_saved(cls, folder: Path, saved: dict) -> ChatTokenizer:
        from tokenizers import Tokenizer

        backend = Tokenizer.from_str(saved["backend"])
        return cls(folder, backend, saved["chat_template"], saved["special"], saved["names"])

    def __call__(
        self, text: str, add_special_tokens: bool = True, return_offsets_mapping: bool = False
    ) -> dict[str, list]:
        encoding = self.backend_tokenizer.encode(text, add_special_tokens=add_special_tokens)
        result: dict[str, list] = {"input_ids": encoding.ids}
        if return_offsets_mapping:
            result["offset_mapping"] = encoding.offsets
        return result

    def decode(self, ids: list[int], skip_special_tokens: bool = False) -> str:
        return self.backend_tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def convert_ids_to_tokens(self, ids: list[int]) -> list[str | None]:
        return [self.backend_tokenizer.id_to_token(i) for i in ids]

    def get_vocab(self) -> dict[str, int]:
        return self.backend_tokenizer.get_vocab(with_added_tokens=True)

    def apply_chat_template(
        self,
        messages: list[dict],
        add_generation_prompt: bool = False,
        tokenize: bool = True,
        **options: Any,
    ) -> Any:
        """The rendered chat as text; token ids, continued messages and the rest of
        transformers' options are transformers' own."""
        if tokenize or any(options.values()):
            return self._full.apply_chat_template(
                messages, add_generation_prompt=add_generation_prompt, tokenize=tokenize, **options
            )
        messages = [{k: v for k, v in message.items() if v is not None} for message in messages]
        return self._render.render(
            messages=messages,
            tools=None,
            documents=None,
            add_generation_prompt=add_generation_prompt,
            **self.special_tokens_map,
        )

    @cached_property
    def _full(self) -> Any:
        quiet_transformers()
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(self.folder)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not one of ours: no recursion through _full
            raise AttributeError(name)
        return getattr(self._full, name)


# Chats the export renders both ways before it trusts the renderer with a template.
SAMPLE_CHATS = (
    [{"role": "system", "content": "s"}, {"role": "user", "content": "u ```x``` \u00e9"}],
    [{"role": "user", "content": "only a user"}],
)


def _sources(folder: Path) -> dict[str, list[int]]:
    """The model's own tokenizer files, by size and modification time: an export is stale once
    one of them changes."""
    found = {}
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        path = folder / name
        if path.is_file():
            stat = path.stat()
            found[name] = [stat.st_size, stat.st_mtime_ns]
    return found


def _compile(template: str) -> Any:
    """The template compiled in a sandbox set up as transformers sets it up: blocks trimmed,
    loop controls, its `tojson` (no HTML escaping), `raise_exception` and `strftime_now`."""
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(value: Any, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(
            value,
            ensure_ascii=ensure_ascii,
            indent=indent,
            separators=separators,
            sort_keys=sort_keys,
        )

    environment = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols]
    )
    environment.filters["tojson"] = tojson
    environment.globals["raise_exception"] = raise_exception
    environment.globals["strftime_now"] = lambda format: datetime.now().strftime(format)
    return environment.from_string(template)
