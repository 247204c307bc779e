"""Load a model once per process: on transformers (the model dequantized, any dtype and device)
or on llama.cpp (the GGUF file as it is). A model can be a bundled name (the offline default), a
local model folder, a `.gguf` file, or a hub id (prepare.resolve).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import platform
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from specedit.files import replace_atomically
from specedit.models import quiet_transformers
from specedit.models.bundled import (
    BUNDLED,
    DEFAULT_MODEL,
    ModelError,
    cache_dir,
    file_key,
    gguf_file,
    private_dir,
)
from specedit.models.prepare import (
    default_dtype,
    gguf_metadata,
    resolve,
    storage_dtype,
    widen_stored_weights,
)

if TYPE_CHECKING:
    import torch

    from specedit.engine.cost import PassCost
    from specedit.engine.llamacpp import GgufModel


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

    def pass_cost(self, refresh: bool = False) -> PassCost:
        """What a verify pass costs with this model on this machine, by its width (drafts are
        sized by it: engine/cost.py), and a prompt token's prefill (the hybrid's catch-up).
        Measured once, in a few seconds, and kept in the cache per model, engine, dtype,
        threads and host; a file saved before the prefill was timed is measured again, and so is
        one llama.cpp measured while other work held the cores, once they look free. With
        `refresh` (the bench, which times the machine as it is now) it is measured again
        whatever the cache holds, and kept: a curve measured at a slower hour is not always
        told apart from the machine's own (docs/design.md)."""
        if self._pass_cost is not None and not refresh:
            return self._pass_cost
        from specedit.engine.cost import PassCost, cores_free, measure

        if self.engine == "torch":
            import torch

            threads = torch.get_num_threads()
            weights = f"{self.model.dtype}|{self.model.device}"
        else:  # the GGUF file's own types, on the CPU
            threads, weights = self.model.threads, "gguf"
        path = cost_path(self.name, self.engine, weights, threads)
        cost = None
        if not refresh:  # none yet, or unreadable: measured below
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                cost = PassCost.load(path)
        unweighed = self.engine == "llama.cpp" and cost is not None and cost.repack is None
        if cost is None or unweighed or (cost.contended and cores_free(threads)):
            # llama.cpp's threads wait on each other when descheduled: its curve is judged
            judged = threads if self.engine == "llama.cpp" else None
            cost = measure(self.model, threads=judged)
            if self.engine == "llama.cpp":
                cost = _cheaper_layout(self.model, cost, judged)
            private_dir(path.parent)
            replace_atomically(path, cost.save)
        elif cost.repack is not None:  # the layout measured cheaper here (`_cheaper_layout`)
            self.model.relayout(cost.repack)
        self._pass_cost = cost
        return cost

    def ready(self) -> None:
        """Wait for weights still loading in the background (llama.cpp's, the draft model's
        too); a load that failed there is a ModelError here."""
        wait = getattr(self.model, "ready", None)
        if wait is not None:
            try:
                wait()
            except (OSError, ValueError, RuntimeError) as exc:  # what llama-cpp-python raises
                raise ModelError(f"cannot load model {self.name!r}: {exc}") from exc
        if self.draft is not None:
            self.draft.ready()

    @property
    def eos_token_ids(self) -> set[int]:
        """Every token that ends an answer: the generation config's and the tokenizer's."""
        ids = self.model.generation_config.eos_token_id
        ids = set(ids if isinstance(ids, list) else [] if ids is None else [ids])
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return ids


def cost_path(name: str, engine: str, weights: str, threads: int) -> Path:
    """Where the pass costs of model `name` on `engine` with these `weights` (a dtype and device,
    or "gguf") and `threads` on this host are kept (`LoadedModel.pass_cost`)."""
    where = f"{name}|{engine}|{weights}|{threads}|{platform.node()}|{os.cpu_count()}"
    digest = hashlib.sha256(where.encode()).hexdigest()[:16]
    return cache_dir() / "cost" / f"{Path(name).name}-{digest}.json"


def _cheaper_layout(model: GgufModel, measured: PassCost, threads: int | None) -> PassCost:
    """The costs of whichever layout of llama.cpp's weights, repacked for the CPU's kernels or
    not (`GgufModel.relayout`), makes a typical edit cheaper here (`PassCost.edit_seconds`),
    `measured` being the costs of the one loaded; the model is left on that layout. The other
    is loaded and measured once a machine (which of the two wins depends on the CPU: on some
    the repacked weights load, prefill and run wide passes much slower, docs/engines.md).
    Where either was measured without the cores, the choice is made again once they are free
    (the curve kept is marked contended)."""
    from specedit.engine.cost import measure
    from specedit.engine.llama_params import can_relayout

    if not can_relayout():  # one layout only: the default's
        return measured
    model.relayout(not measured.repack)
    other = measure(model, threads=threads)
    contended = measured.contended or other.contended
    if other.edit_seconds() < measured.edit_seconds():
        return replace(other, contended=contended)
    model.relayout(bool(measured.repack))
    return replace(measured, contended=contended)


def repacked(model: str, threads: int) -> bool:
    """Whether llama.cpp repacks model `model`'s weights when it loads them with `threads`
    (the engine, and the bench's llama.cpp peers alike): as the pass costs kept for it say
    (`_cheaper_layout`), else llama.cpp's default (repacked) until they are measured."""
    from specedit.engine.cost import PassCost

    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        repack = PassCost.load(cost_path(model, "llama.cpp", "gguf", threads)).repack
        return True if repack is None else repack
    return True


# Where the forward passes run: transformers (the model dequantized, any dtype and device) or
# llama.cpp (the GGUF file as it is, on the CPU; the `llamacpp` extra).
ENGINES = ("torch", "llama.cpp")


# The torch extra: the torch engine, and the drafters that read hidden states or the
# vocabulary indexes on either engine. torch==2.13.0 is named: an unpinned torch pulls a
# multi-GB CUDA build.
TORCH_EXTRA = ("torch", "accelerate", "hnswlib")
TORCH_INSTALL = "pip install torch==2.13.0 'specedit[torch]'"

LLAMA_CPP_INSTALL = (
    "pip install 'specedit[llamacpp]' (llama-cpp-python builds from source: minutes)"
)


def require_llama_cpp(what: str) -> None:
    """Raise ModelError naming the install command when llama-cpp-python is missing."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        raise ModelError(f"{what} llama-cpp-python: {LLAMA_CPP_INSTALL}") from None


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

    quiet_transformers()
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype not in DTYPES:
        raise ModelError(f"unknown dtype {dtype!r}: choose one of {', '.join(DTYPES)}")
    torch_dtype = getattr(torch, DTYPES[dtype]) if DTYPES[dtype] else default_dtype()
    source = resolve(model)
    converted_here = model in BUNDLED or Path(model).suffix == ".gguf"
    if converted_here and torch_dtype == storage_dtype():
        widen_stored_weights(source)
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
    """The folder's tokenizer without transformers where it has been exported (`ChatTokenizer`,
    which loads faster), else transformers' own, exported for the next load."""
    from specedit.models.tokenizer import ChatTokenizer

    tokenizer = ChatTokenizer.open(folder)
    if tokenizer is None:  # the first load on this folder, or with this transformers
        quiet_transformers()
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(folder)
        ChatTokenizer.export(tokenizer, folder)
    return tokenizer


def _require_chat_template(model: str, tokenizer) -> None:
    if not getattr(tokenizer, "chat_template", None):
        raise ModelError(f"model {model!r} has no chat template, so it cannot follow instructions")


def heads_folder(gguf: Path, repack: bool) -> Path:
    """Where the prompt heads of `gguf` are kept: per file, llama.cpp version and weights'
    layout. Repacked kernels round otherwise, so K/V computed with one layout and restored
    under the other would not be this engine's own plain decoding (near-ties flip)."""
    import llama_cpp

    layout = "repacked" if repack else "plain"
    return cache_dir() / "prefix" / f"{file_key(gguf)}-{llama_cpp.__version__}-{layout}"


def _load_gguf(model: str, threads: int, context: int) -> LoadedModel:
    """The model's GGUF file for llama.cpp, with its tokenizer and config (read from the GGUF
    once, then kept beside it: reading them from the GGUF is slow).

    A cold edit's start-up is what this path is built for: llama.cpp starts reading the
    weights on a thread first, and neither torch nor transformers is imported here once the
    tokenizer has been exported (`ChatTokenizer`)."""
    require_llama_cpp("the llama.cpp engine needs")
    from specedit.engine.llamacpp import GgufModel
    from specedit.models.prefixes import PrefixStore

    gguf = gguf_file(model)
    folder = gguf_metadata(model, gguf)
    config = _json_namespace(folder / "config.json")
    generation = _json_namespace(folder / "generation_config.json", missing_ok=True)
    if generation is None:
        generation = SimpleNamespace(eos_token_id=getattr(config, "eos_token_id", None))
    layout = repacked(model, threads)
    gguf_model = GgufModel(
        gguf, config, generation, threads, PrefixStore(heads_folder(gguf, layout)), layout
    )
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


def with_draft(
    lm: LoadedModel, draft_model: str, dtype: str = "auto", device: str = "cpu", context: int = 0
) -> LoadedModel:
    """`lm` with a draft model beside it, on `lm`'s engine; the draft must tokenize exactly as
    `lm` does, since its tokens are verified as `lm`'s own. On llama.cpp the draft model is a
    GGUF file with a context of its own, even where it is `lm`'s own file (a context holds one
    model's cache), opening in the background for `context` tokens (`ready` waits for it)."""
    if lm.engine == "llama.cpp":
        draft = _load_gguf(draft_model, lm.model.threads, context)
    else:
        draft = load(draft_model, dtype, device)
    if draft.tokenizer.get_vocab() != lm.tokenizer.get_vocab():
        raise ModelError(
            f"draft model {draft_model!r} has another tokenizer than {lm.name!r}: a draft model "
            "must share the target's vocabulary (e.g. qwen2.5-coder-0.5b for qwen2.5-coder-1.5b)"
        )
    return replace(lm, draft=draft)
