"""A GGUF file's tokenizer and config as a model folder, written without torch.

The llama.cpp engine runs the GGUF file itself, but reads its tokenizer and a few config fields
(layers, context length, vocabulary, special ids) from a folder beside it. transformers reads a
GGUF file's metadata only where torch is installed (its reader imports torch), so the metadata
is read here, and the tokenizer is built from it by transformers' own GGUF converter: the one
`AutoTokenizer.from_pretrained(..., gguf_file=...)` builds (tested), with no torch.
"""

from __future__ import annotations

import json
import mmap
import struct
from pathlib import Path
from typing import Any

from specedit.models import quiet_transformers

# GGUF value types (gguf's GGUFValueType): fixed-size ones by struct format, then the two others.
_FIXED = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
# Special tokens the converter's tokenizer is given by name, from the ids the file states.
_SPECIAL = {
    "bos_token": "bos_token_id",
    "eos_token": "eos_token_id",
    "unk_token": "unknown_token_id",
    "pad_token": "padding_token_id",
}


def read_metadata(path: Path) -> tuple[dict[str, Any], set[str]]:
    """The metadata of the GGUF file at `path`, by key, and its tensors' names; no tensor is read
    (gguf's GGUFReader parses every value into arrays first: far slower for a vocabulary)."""
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"GGUF":
            raise ValueError("not a GGUF file (no GGUF magic)")
        version, tensor_count, value_count = struct.unpack_from("<IQQ", data, 4)
        if version not in (2, 3):  # version 1 counted in 32 bits; no file in use has it
            raise ValueError(f"GGUF version {version} is not read (2 and 3 are)")
        reader = _Reader(data, 24)
        metadata = {}
        for _ in range(value_count):
            key = reader.string()
            metadata[key] = reader.value(reader.unpack("I"))
        names = set()
        for _ in range(tensor_count):
            names.add(reader.string())
            dimensions = reader.unpack("I")
            reader.skip(8 * dimensions + 4 + 8)  # the dimensions, the type, the offset
    return metadata, names


class _Reader:
    """Little-endian values read in order from a buffer."""

    def __init__(self, data: mmap.mmap, at: int) -> None:
        self.data, self.at = data, at

    def unpack(self, kind: str) -> Any:
        (value,) = struct.unpack_from(f"<{kind}", self.data, self.at)
        self.at += struct.calcsize(kind)
        return value

    def skip(self, size: int) -> None:
        self.at += size

    def string(self) -> str:
        size = self.unpack("Q")
        self.at += size
        return self.data[self.at - size : self.at].decode("utf-8")

    def value(self, kind: int) -> Any:
        if kind in _FIXED:
            return self.unpack(_FIXED[kind])
        if kind == _STRING:
            return self.string()
        if kind == _ARRAY:
            item, count = self.unpack("I"), self.unpack("Q")
            if item in _FIXED:  # token types, scores: read at once
                values = struct.unpack_from(f"<{count}{_FIXED[item]}", self.data, self.at)
                self.at += count * struct.calcsize(_FIXED[item])
                return list(values)
            if item == _STRING:  # a vocabulary, its merges: the bulk of the metadata
                return [self.string() for _ in range(count)]
            return [self.value(item) for _ in range(count)]
        raise ValueError(f"a GGUF value of unknown type {kind}")


def write_folder(gguf: Path, folder: Path) -> None:
    """Write the tokenizer and config of the GGUF file at `gguf` into `folder` (made here)."""
    metadata, tensors = read_metadata(gguf)
    architecture = metadata["general.architecture"]
    quiet_transformers()
    from transformers import AutoTokenizer
    from transformers.integrations.gguf import GGUF_TOKENIZER_MAPPING, convert_gguf_tokenizer

    # What transformers' get_gguf_tokenizer reads from the same keys (its reader needs torch).
    found = {
        group: {
            name: metadata[f"tokenizer.{key}"]
            for key, name in keys.items()
            if f"tokenizer.{key}" in metadata
        }
        for group, keys in GGUF_TOKENIZER_MAPPING.items()
    }
    vocabulary, settings = found["tokenizer"], found["tokenizer_config"]
    tokens = vocabulary["tokens"]
    if vocabulary.get("tokenizer_type") == "llama":  # llama.cpp adds BOS unless told otherwise
        settings.setdefault("add_bos_token", True)
    elif vocabulary.get("tokenizer_type") == "gemma4":  # its template writes BOS itself
        settings["add_bos_token"] = False
    for name, key in _SPECIAL.items():
        token = metadata.get(f"tokenizer.ggml.{key}")
        settings[name] = tokens[token] if token is not None else None

    def field(name: str) -> Any:
        return metadata.get(f"{architecture}.{name}")

    # The fields specedit reads, under transformers' names. model_type picks the tokenizer class
    # as AutoTokenizer picks it for a GGUF file where transformers names the model as llama.cpp
    # names its architecture (qwen2, llama: the bundled models' files).
    config = {
        "model_type": architecture,
        "num_hidden_layers": field("block_count"),
        "max_position_embeddings": field("context_length"),
        "hidden_size": field("embedding_length"),
        "num_attention_heads": field("attention.head_count"),
        "num_key_value_heads": field("attention.head_count_kv"),
        "vocab_size": len(tokens),
        "tie_word_embeddings": "output.weight" not in tensors,  # no head of its own
        "bos_token_id": metadata.get("tokenizer.ggml.bos_token_id"),
        "eos_token_id": metadata.get("tokenizer.ggml.eos_token_id"),
        "pad_token_id": metadata.get("tokenizer.ggml.padding_token_id"),
    }
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    backend, options = convert_gguf_tokenizer(architecture, vocabulary)
    tokenizer = AutoTokenizer.from_pretrained(
        folder, tokenizer_object=backend, **settings, **options
    )
    tokenizer.save_pretrained(folder)
