"""Resolve `--model` to a loadable Hugging Face folder for the torch engine: dequantizing a GGUF
file is slow, so it is converted once into an ordinary folder under the user's cache and reused.
The llama.cpp engine reads only the GGUF file's tokenizer and config, kept in a folder of their
own (gguf_metadata).
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from specedit.console import say
from specedit.models import quiet_transformers
from specedit.models.bundled import (
    BUNDLED,
    ModelError,
    bundled_gguf,
    cache_dir,
    file_key,
    private_dir,
)

if TYPE_CHECKING:
    import torch


def resolve(model: str) -> Path | str:
    """Turn `--model` into a local folder (preparing it if needed) or a hub id."""
    if model in BUNDLED:
        target = cache_dir() / "models" / model
        if not (target / "config.json").exists():
            with tempfile.TemporaryDirectory(dir=private_dir(cache_dir())) as work:
                _convert_gguf(bundled_gguf(BUNDLED[model], Path(work)), target)
        return target
    path = Path(model).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ModelError(f"no such GGUF file: {model}")
        target = cache_dir() / "models" / file_key(path)
        if not (target / "config.json").exists():
            _convert_gguf(path, target)
        return target
    if path.is_dir():
        if not (path / "config.json").exists():
            raise ModelError(f"{model} is a folder but holds no config.json, so it is not a model")
        return path
    if path.exists():
        raise ModelError(f"{model} is neither a model folder nor a .gguf file")
    if model.count("/") == 1 and not model.startswith((".", "/")):
        return model  # a hub id; loading says whether it can be reached
    known = ", ".join(BUNDLED)
    raise ModelError(f"unknown model {model!r}: give a bundled name ({known}), a folder or a .gguf")


def _convert_gguf(gguf: Path, target: Path) -> None:
    """Dequantize a GGUF file into an ordinary model folder at `target`, atomically."""
    import torch

    quiet_transformers()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    say(f"converting {gguf.name} to a model folder (once; 10-60 s)")
    private_dir(target.parent)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        try:
            model = AutoModelForCausalLM.from_pretrained(
                gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16
            )
            tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        except Exception as exc:  # gguf/transformers raise many types for a bad file
            raise ModelError(f"cannot read {gguf}: {exc}") from exc
        # The weights are plain tensors now; drop the quantizer so the folder loads as usual.
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.to(storage_dtype()).save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def default_dtype() -> torch.dtype:
    """bf16 where the CPU has native bf16 support (faster than fp32 there), else fp32."""
    import torch

    if torch.cuda.is_available():
        return torch.bfloat16
    return (
        torch.bfloat16
        if torch.backends.mkldnn.is_available() and _cpu_has_bf16()
        else torch.float32
    )


def _cpu_has_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(flag in flags for flag in ("avx512_bf16", "amx_bf16", "avx512bw"))


def storage_dtype() -> torch.dtype:
    """The dtype a folder converted here keeps its weights in: fp32 on a machine that computes
    in fp32, so that loading converts nothing (widening bf16 weights at every load took more
    than reading fp32 ones as stored), else bf16. The GGUF is dequantized to bf16 either
    way: the fp32 weights are the bf16 ones widened, and narrow back to them exactly."""
    import torch

    return torch.float32 if default_dtype() == torch.float32 else torch.bfloat16


def widen_stored_weights(folder: Path) -> None:
    """Re-store, once, the weights of a folder that an earlier version converted to bf16 on a
    machine that computes in fp32. The new files replace the old ones one by one, each
    atomically, the weights before the config, so that the folder loads at every moment (a
    process that loads it meanwhile, or after an interruption, gets the same weights). A
    write that fails, or a disk without room for it, leaves the folder as it was."""
    import torch

    quiet_transformers()
    from transformers import AutoModelForCausalLM

    def stored_narrow() -> bool:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        return (config.get("dtype") or config.get("torch_dtype")) in ("bfloat16", "float16")

    if not stored_narrow():
        return
    weights = [path for path in folder.iterdir() if "safetensors" in path.name]
    needed = 2 * sum(path.stat().st_size for path in weights) + (1 << 30)  # fp32: twice bf16
    if shutil.disk_usage(folder).free < needed:
        say(
            f"{folder.name} is stored in bf16 and loads slower: storing it as float32 needs "
            f"{needed / 1e9:.1f} GB free beside it"
        )
        return
    say(f"storing the weights of {folder.name} as float32, as this machine computes (once)")
    tmp = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
        AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).save_pretrained(tmp)
        written = {path.name for path in tmp.iterdir()}
        for name in sorted(written - {"config.json"}):
            os.replace(tmp / name, folder / name)
        for path in weights:
            if path.name not in written:  # a bf16 file that no fp32 one replaced
                path.unlink()
        os.replace(tmp / "config.json", folder / "config.json")  # last: now it says fp32
    except Exception as exc:  # OSError, safetensors' own errors: the folder still loads
        say(f"could not store {folder.name} as float32 ({exc}); it loads as before")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def gguf_metadata(model: str, gguf: Path) -> Path:
    """A folder with the model's tokenizer and config: its converted folder where one exists,
    else one written once from the GGUF file, without the weights (and without torch)."""
    converted = cache_dir() / "models" / model if model in BUNDLED else None
    if converted is not None and (converted / "config.json").exists():
        return converted
    target = metadata_dir(gguf)
    if (target / "config.json").exists():
        return target
    from specedit.models.gguf_folder import write_folder

    say(f"reading the tokenizer of {gguf.name} (once; a few seconds)")
    with tempfile.TemporaryDirectory(dir=private_dir(target.parent)) as work:
        folder = Path(work) / "meta"
        try:
            write_folder(gguf, folder)
        except Exception as exc:  # a file of a kind the reader or transformers' converter lacks
            raise ModelError(f"cannot read {gguf}: {exc}") from exc
        folder.rename(target)  # whole, or not at all
    return target


def metadata_dir(gguf: Path) -> Path:
    """Where the tokenizer and config read from the GGUF file at `gguf` are kept."""
    return cache_dir() / "gguf" / f"{file_key(gguf)}.meta"


def prepared_for(model: str) -> list[str]:
    """The engines the bundled `model` is prepared for: torch once it is converted, llama.cpp
    once its GGUF file is joined and its tokenizer and config are read."""
    converted = (cache_dir() / "models" / model / "config.json").exists()
    engines = ["torch"] if converted else []
    bundled = BUNDLED[model]
    if bundled.single_file:
        try:
            gguf = bundled_gguf(bundled, cache_dir())
        except ModelError:  # not installed
            return engines
    else:
        gguf = cache_dir() / "gguf" / f"{model}.gguf"
    if gguf.is_file() and (converted or (metadata_dir(gguf) / "config.json").exists()):
        engines.append("llama.cpp")
    return engines
