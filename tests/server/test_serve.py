"""`specedit serve` over real HTTP, driven by the real `openai` client, and the CLI's --server.

The fast tests serve the app that `specedit serve` builds from its options, on a free loopback
port in the test's own process, with a tiny random model (its answers are noise, but exactly the
model's noise); the e2e tests start the command as a child process, as a user does, on the small
bundled model for real edits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar

import openai
import pytest
import torch
from helpers import TEST_MODEL, free_port, get_json, serving
from transformers import AutoModelForCausalLM, AutoTokenizer

from specedit.editing import prompts
from specedit.editing.editor import EditError, EditorUnavailable, EditRequest
from specedit.editing.local import LocalEditor
from specedit.server import app as server_app
from specedit.server.app import create_app, public_name, token_bytes
from specedit.server.client import OpenAIEditor, RemoteEditor, ServerRefused, connect
from specedit.server.errors import INTERNAL, without_paths
from specedit.server.guards import needs_key_warning


@contextmanager
def running_server(model: str, *extra: str, cache: Path | None = None, **environ: str):
    """`specedit serve` on a free port (`environ`: more of its environment); yields its base
    URL once it answers."""
    port = free_port()
    env = {**os.environ, "SPECEDIT_THREADS": "1", **environ}
    if cache:
        env["SPECEDIT_CACHE"] = str(cache)
    command = [
        sys.executable,
        "-m",
        "specedit",
        "serve",
        "--model",
        model,
        "--port",
        str(port),
        "--dtype",
        "fp32",
        *extra,
    ]
    with serving(command, port, env) as url:
        yield url


def serve_command(*arguments: str, env: dict[str, str] | None = None):
    """`specedit serve ARGUMENTS` with uvicorn's run replaced: the command's result, and the
    (app, uvicorn options) it would have served, if any."""
    import uvicorn
    from typer.testing import CliRunner

    from specedit.cli import app

    served: list[tuple[object, dict]] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(uvicorn, "run", lambda app, **options: served.append((app, options)))
        result = CliRunner().invoke(app, ["serve", *arguments], env=env)
    return result, served


@contextmanager
def served_by_the_command(model: Path, cache: Path, **environ: str) -> Iterator[str]:
    """The app `specedit serve --model MODEL` builds from its options and environment
    (`environ`), served on a free loopback port in this process: the fast tier's server without
    a second interpreter's start (the e2e tier starts the command itself)."""
    env = {"SPECEDIT_THREADS": "1", "SPECEDIT_CACHE": str(cache), **environ}
    result, served = serve_command("--model", str(model), "--dtype", "fp32", env=env)
    assert result.exit_code == 0, result.output
    served_app, options = served[0]
    with in_process(served_app, limit_concurrency=options["limit_concurrency"]) as url:
        yield url


@pytest.fixture(scope="module")
def tiny_server(tiny_model_dir, tmp_path_factory):
    with served_by_the_command(tiny_model_dir, tmp_path_factory.mktemp("cache")) as url:
        yield url


@pytest.fixture(scope="module")
def client(tiny_server):
    return openai.OpenAI(base_url=tiny_server + "/v1", api_key="none", max_retries=0)


CODE = "def mean(values):\n    return sum(values) * len(values)\n"
MESSAGES = [
    {"role": "system", "content": "You edit code."},
    {"role": "user", "content": f"Fix the bug:\n```python\n{CODE}```"},
]


@pytest.fixture(scope="module")
def reference(tiny_model_dir):
    """Plain greedy decoding of MESSAGES by the tiny model: what temperature 0 must return."""
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir, dtype=torch.float32).eval()
    ids = tokenizer.apply_chat_template(MESSAGES, add_generation_prompt=True, return_tensors="pt")
    ids = ids["input_ids"] if not isinstance(ids, torch.Tensor) else ids
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")

    def greedy(max_new_tokens: int) -> str:
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            do_sample=False,
            max_new_tokens=max_new_tokens,
            eos_token_id=eos,
            pad_token_id=eos,
        )
        return tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)

    return greedy


def test_models_lists_the_loaded_model(client, tiny_model_dir, tiny_server):
    assert [m.id for m in client.models.list().data] == [tiny_model_dir.name]
    assert isinstance(connect(tiny_server + "/v1"), RemoteEditor)  # it knows its own kind


def test_greedy_completion_with_a_prediction_is_the_models_own_answer(
    client, tiny_model_dir, reference
):
    completion = client.chat.completions.create(
        model=tiny_model_dir.name,
        messages=MESSAGES,
        temperature=0,
        max_tokens=40,
        prediction={"type": "content", "content": CODE},
    )
    assert completion.choices[0].message.content == reference(40)
    assert completion.choices[0].finish_reason in ("stop", "length")
    usage = completion.usage
    assert usage.completion_tokens <= 40 and usage.prompt_tokens > 20
    details = usage.completion_tokens_details
    predicted = details.accepted_prediction_tokens + details.rejected_prediction_tokens
    assert predicted >= len(CODE) // 8  # every prediction token is either accepted or rejected


def test_streaming_gives_the_same_text_in_chunks_then_usage(client, tiny_model_dir, reference):
    stream = client.chat.completions.create(
        model=tiny_model_dir.name,
        messages=MESSAGES,
        temperature=0,
        max_tokens=40,
        stream=True,
        stream_options={"include_usage": True},
        prediction={"type": "content", "content": CODE},
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == reference(40)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] in ("stop", "length")
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens <= 40


def test_stop_strings_end_the_answer_before_them(client, tiny_model_dir, reference):
    full = reference(40)
    stop = full[10:14]
    completion = client.chat.completions.create(
        model=tiny_model_dir.name, messages=MESSAGES, temperature=0, max_tokens=40, stop=[stop]
    )
    assert completion.choices[0].message.content == full[: full.find(stop)]


@pytest.mark.parametrize(
    "extra,param",
    [
        ({"n": 2}, "n"),
        ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
        ({"logprobs": True}, "logprobs"),
        ({"temperature": 3}, "temperature"),
    ],
)
def test_unsupported_or_bad_fields_get_openai_style_400s(client, tiny_model_dir, extra, param):
    with pytest.raises(openai.BadRequestError) as error:
        client.chat.completions.create(
            model=tiny_model_dir.name, messages=MESSAGES, max_tokens=4, **extra
        )
    assert error.value.status_code == 400
    assert error.value.body["param"] == param
    assert error.value.body["type"] == "invalid_request_error"


def test_another_model_name_is_a_404(client):
    with pytest.raises(openai.NotFoundError) as error:
        client.chat.completions.create(model="gpt-4o", messages=MESSAGES, max_tokens=4)
    assert error.value.body["code"] == "model_not_found"


def test_a_client_that_disconnects_cancels_its_generation(client, tiny_server, tiny_model_dir):
    before = get_json(tiny_server + "/v1/specedit/status")
    stream = client.chat.completions.create(
        model=tiny_model_dir.name,
        messages=MESSAGES,
        temperature=1,
        seed=0,
        max_tokens=900,
        stream=True,
    )
    first = next(iter(stream))  # the generation has started
    assert first.choices[0].delta.role == "assistant"
    stream.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = get_json(tiny_server + "/v1/specedit/status")
        if status["running"] == 0 and status["done"] > before["done"]:
            break
        time.sleep(0.05)
    assert status["cancelled"] == before["cancelled"] + 1
    # and the server goes on serving
    assert (
        client.chat.completions.create(
            model=tiny_model_dir.name, messages=MESSAGES, temperature=0, max_tokens=2
        ).usage.completion_tokens
        <= 2
    )


def test_the_edit_endpoint_reports_an_edit_it_could_not_finish(tiny_server, tiny_model_dir):
    body = json.dumps(
        {"text": CODE, "instruction": "fix it", "method": "pld", "max_new_tokens": 3}
    ).encode()
    request = urllib.request.Request(
        tiny_server + "/v1/specedit/edit", data=body, headers={"Content-Type": "application/json"}
    )
    with pytest.raises(urllib.error.HTTPError) as error:
        urllib.request.urlopen(request, timeout=60)
    assert error.value.code == 422
    assert "cut off at the token limit" in json.loads(error.value.read())["error"]["message"]


def test_a_region_edit_through_the_server_shows_the_model_the_whole_file(tiny_server, tokenizer):
    """--lines with --server: the server's prompt holds the surroundings and asks for the
    region, exactly as a local edit's prompt does."""
    from specedit.editing.editor import EditError
    from specedit.editing.region import Region

    text = "import math\n\n\n" + CODE + "\n\ndef half(x):\n    return x / 2\n"
    region, surroundings = Region(4, 5).cut(text)
    assert region == CODE
    editor = RemoteEditor(tiny_server)
    seen = []
    request = EditRequest(
        region, "fix it", prompt="fix", method="pld", max_new_tokens=3, surroundings=surroundings
    )
    with pytest.raises(EditError, match="lines 4-5 ran to its token limit"):  # never closes
        editor.edit(request, on_start=lambda prompt, limit: seen.append(prompt))
    prompt = seen[0]
    rendered = tokenizer.decode(prompt.ids)
    assert prompt.text == region and "lines 4-5: the code block above" in rendered
    assert "import math" in rendered and "def half(x):" in rendered


def test_the_cli_says_when_no_server_answers(tmp_path):
    source = tmp_path / "code.py"
    source.write_text(CODE)
    port = free_port()  # nothing listens there
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "specedit",
            "fix",
            str(source),
            "fix it",
            "--server",
            f"http://127.0.0.1:{port}",
        ],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 3
    assert "cannot reach the server" in result.stderr and result.stdout == ""
    assert source.read_text() == CODE


@pytest.mark.e2e
def test_an_edit_through_the_server_equals_the_local_edit(tmp_path):
    """Same request, same output files: stdout, -o, --stats-file (less timings), --attribution."""
    source = tmp_path / "stats.py"
    source.write_text(
        "def mean(values):\n    # the average of the values\n    return sum(values) * len(values)\n"
    )
    instruction = "mean() multiplies instead of dividing"

    def edit(tag: str, *extra: str) -> tuple[subprocess.CompletedProcess, dict, str]:
        stats, spans = tmp_path / f"{tag}.json", tmp_path / f"{tag}-spans.json"
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "specedit",
                "fix",
                str(source),
                instruction,
                "--dtype",
                "fp32",
                "--stats-file",
                str(stats),
                "--attribution",
                str(spans),
                # one candidate: a second look branches where the answer was least sure, a
                # near-tie that the server's other batch shapes may flip
                "--samples",
                "1",
                *extra,
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "SPECEDIT_THREADS": "1"},
        )
        assert result.returncode == 0, result.stderr
        return result, json.loads(stats.read_text()), spans.read_text()

    local, local_stats, local_spans = edit("local")
    with running_server(TEST_MODEL) as url:
        started = time.monotonic()
        remote, remote_stats, remote_spans = edit("remote", "--server", url)
        remote_seconds = time.monotonic() - started
        with openai.OpenAI(base_url=url + "/v1", api_key="none") as client:
            completion = client.chat.completions.create(
                model=TEST_MODEL,
                temperature=0,
                max_tokens=200,
                messages=[
                    {
                        "role": "user",
                        "content": "Repeat this code exactly, nothing "
                        f"else:\n```python\n{source.read_text()}```",
                    }
                ],
                prediction={"type": "content", "content": source.read_text()},
            )
            # the CLI's own prompt as chat messages, its answer opened by the code fence as the
            # CLI opens it: the reply is the CLI's output, streamed or not
            text = source.read_text()
            fence = prompts.fence_for(text)
            messages = [
                *prompts.chat_messages(
                    prompts.load_template("fix"), text, instruction, "python", fence
                ),
                {"role": "assistant", "content": f"{fence}python\n"},
            ]
            same = {
                "model": TEST_MODEL,
                "messages": messages,
                "temperature": 0,
                "stop": [f"\n{fence}"],
                "prediction": {"type": "content", "content": text},
            }
            whole = client.chat.completions.create(**same)
            pieces = client.chat.completions.create(**same, stream=True)
            streamed = "".join(c.choices[0].delta.content or "" for c in pieces if c.choices)
        # the same server spoken to as any OpenAI-compatible one: same prompt, file as prediction
        request = EditRequest(source.read_text(), instruction, prompt="fix", language="python")
        generic = OpenAIEditor(url).edit(request)
    assert remote.stdout == local.stdout and "/" in remote.stdout
    assert whole.choices[0].message.content + "\n" == local.stdout
    assert streamed == whole.choices[0].message.content
    assert whole.usage.completion_tokens_details.accepted_prediction_tokens > 10
    assert generic.text.count("\n") == source.read_text().count("\n")
    assert remote_spans == local_spans

    def untimed(stats: dict) -> dict:
        timed = ("seconds", "tokens_per_second", "wall_seconds")
        return {k: v for k, v in stats.items() if k not in timed}

    assert untimed(remote_stats) == untimed(local_stats)
    assert set(remote_stats["wall_seconds"]) == {"prompt", "drafter", "prefill", "decode"}
    details = completion.usage.completion_tokens_details
    assert details.accepted_prediction_tokens > 10
    print(f"edit through the warm server: {remote_seconds:.1f}s")


class _ChatOnlyServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible server that knows nothing of specedit: it answers every chat
    completion with `ANSWER` and remembers the requests."""

    ANSWER = "Here it is:\n```python\n" + CODE.replace("*", "/") + "```\nDone."
    requests: ClassVar[list[dict]] = []

    def _send(self, status: int, data: dict) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._send(200, {"object": "list", "data": [{"id": "stub", "object": "model"}]})
        else:
            self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_POST(self) -> None:
        request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append(request)
        self._send(
            200,
            {
                "id": "x",
                "object": "chat.completion",
                "model": "stub",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": self.ANSWER},
                    }
                ],
                "usage": {
                    "prompt_tokens": 50,
                    "completion_tokens": 20,
                    "total_tokens": 70,
                    "completion_tokens_details": {"accepted_prediction_tokens": 15},
                },
            },
        )

    def log_message(self, *args) -> None:
        pass


def test_any_openai_compatible_server_edits_with_the_file_as_prediction(tmp_path):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatOnlyServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    source = tmp_path / "stats.py"
    source.write_text(CODE)
    try:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "specedit",
                "fix",
                str(source),
                "mean() multiplies",
                "-i",
                "--server",
                f"http://127.0.0.1:{server.server_port}/v1",
                "--stats",
                "json",
            ],
            capture_output=True,
            text=True,
        )
    finally:
        server.shutdown()
    assert result.returncode == 0, result.stderr
    assert source.read_text() == CODE.replace("*", "/")
    sent = _ChatOnlyServer.requests[-1]
    assert sent["model"] == "stub" and sent["prediction"] == {"type": "content", "content": CODE}
    assert sent["messages"][0]["role"] == "system" and CODE in sent["messages"][1]["content"]
    stats = json.loads(result.stderr.strip().splitlines()[-1])
    assert stats["accepted_tokens"] == 15 and stats["new_tokens"] == 20


def test_a_then_template_asks_any_openai_compatible_server_for_its_statement_first(tmp_path):
    """A template that has the model state the change first makes two completions: the
    statement (no prediction: nothing of it is the file), then the file after it."""
    from specedit.editing.editor import STATEMENT_TOKENS

    template = tmp_path / "think.toml"
    template.write_text(
        'system = "s"\nuser = "{fence}{language}\\n{text}{fence}\\n\\n{instruction}. Why?"\n'
        'then = "Now the file."\n'
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatOnlyServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _ChatOnlyServer.requests.clear()
    request = EditRequest(CODE, "mean() multiplies", prompt=str(template), language="python")
    try:
        result = OpenAIEditor(f"http://127.0.0.1:{server.server_port}/v1").edit(request)
    finally:
        server.shutdown()
    asked, answered = _ChatOnlyServer.requests
    assert "prediction" not in asked and asked["max_tokens"] == STATEMENT_TOKENS
    assert [m["role"] for m in asked["messages"]] == ["system", "user"]
    assert answered["messages"][:2] == asked["messages"]
    assert answered["messages"][2:] == [
        {"role": "assistant", "content": "Here it is:"},
        {"role": "user", "content": "Now the file."},
    ]
    assert answered["prediction"] == {"type": "content", "content": CODE}
    assert result.statement == "Here it is:" and result.text == CODE.replace("*", "/")


def test_token_bytes_let_a_client_decode_exactly_as_the_server(tokenizer):
    text = "naïve café — 数据 🙂 ```x```\n\tend: a→b"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    ids += [tokenizer.convert_tokens_to_ids("<|im_end|>")]
    editor = RemoteEditor("http://127.0.0.1:1")
    editor.learn(ids, token_bytes(tokenizer, ids))
    for start, end in [(0, len(ids)), (1, 5), (3, len(ids) - 1), (2, 3)]:  # windows, as decoded
        assert editor.decode(ids[start:end]) == tokenizer.decode(
            ids[start:end], skip_special_tokens=True
        )


# --- trust: a key, shipped prompts only, bounded queue and bodies, errors without paths --------


def call(
    url: str, body: dict | bytes | None = None, headers: dict | None = None, timeout: float = 60
):
    """One request (POST when `body` is given): its status, headers and its answer's text."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json", **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


@pytest.fixture(scope="module")
def tiny_lm(tiny_model_dir):
    from specedit.models.load import load

    return load(str(tiny_model_dir), dtype="fp32")


@contextmanager
def in_process(app, **options) -> Iterator[str]:
    """`app` served on a free loopback port in this process (`options`: uvicorn's), so a test
    may patch what it runs; yields its base URL."""
    import uvicorn

    port = free_port()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_config=None, log_level="warning", **options
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def test_an_unexpected_error_is_logged_here_and_answered_without_its_text(
    tiny_lm, monkeypatch, tmp_path, capfd
):
    def broken(self, request, on_start=None, on_step=None, stop=None):
        raise RuntimeError(f"boom reading {tmp_path}/weights.bin")

    monkeypatch.setattr(LocalEditor, "edit", broken)
    body = {"text": CODE, "instruction": "fix it", "prompt": "fix", "method": "pld"}
    with in_process(create_app(tiny_lm)) as url:
        status, _, answer = call(url + "/v1/specedit/edit", body)
        assert status == 500
        assert json.loads(answer)["error"]["message"] == INTERNAL
        assert "boom reading" in capfd.readouterr().err  # the detail is in the server's log
        status, _, streamed = call(url + "/v1/specedit/edit", {**body, "stream": True})
        assert status == 200
        assert "boom reading" in capfd.readouterr().err
        events = [
            json.loads(line[6:]) for line in streamed.splitlines() if line.startswith("data: {")
        ]
        assert events[-1]["type"] == "error" and events[-1]["status"] == 500
        assert events[-1]["error"]["message"] == INTERNAL
        with pytest.raises(EditorUnavailable, match="internal error"):
            RemoteEditor(url).edit(EditRequest(CODE, "fix it", prompt="fix", method="pld"))
        # before any generation: the app's own answer (uvicorn logs the error)
        monkeypatch.setattr(server_app, "_edit_run", lambda lm, body: broken(None, None))
        status, _, before = call(url + "/v1/specedit/edit", body)
        assert status == 500 and json.loads(before)["error"]["message"] == INTERNAL
    for text in (answer, streamed, before):
        assert "boom" not in text and str(tmp_path) not in text


def test_an_edit_error_names_no_path_on_the_server(tiny_lm, monkeypatch, tmp_path):
    def failing(self, request, on_start=None, on_step=None, stop=None):
        raise EditError(f"no calibration at {tmp_path}/heads.json; run `specedit calibrate`")

    monkeypatch.setattr(LocalEditor, "edit", failing)
    body = {"text": CODE, "instruction": "fix it", "prompt": "fix", "method": "pld"}
    with in_process(create_app(tiny_lm)) as url:
        status, _, answer = call(url + "/v1/specedit/edit", body)
    message = json.loads(answer)["error"]["message"]
    assert status == 422 and str(tmp_path) not in answer
    assert message == "no calibration at <path on the server>; run `specedit calibrate`"


@pytest.mark.parametrize(
    "message,public",
    [
        ("looked for /home/ann/.cache/specedit/p.pt; run", "looked for <path on the server>; run"),
        ("(at ~/models/q.gguf)", "(at <path on the server>)"),
        ("in C:\\Users\\ann\\m.gguf.", "in <path on the server>."),
        ("3/26, and/or http://host:8000/v1 stay", "3/26, and/or http://host:8000/v1 stay"),
    ],
)
def test_messages_lose_their_paths(message, public):
    assert without_paths(message) == public


def test_the_edit_endpoint_reads_no_prompt_file_of_the_servers(tiny_lm, tmp_path):
    """A path as the prompt is refused, unread; the answer is the same whether the file is
    there or not, and names the shipped templates."""
    secret = "TOP-SECRET-7731"
    mine = tmp_path / "mine.toml"
    mine.write_text(
        f'system = "{secret}"\nuser = "{secret} {{instruction}} {{fence}}{{text}}{{fence}}"\n'
    )
    assert prompts.load_template(str(mine)).system == secret  # a template the CLI would read
    answers = set()
    with in_process(create_app(tiny_lm)) as url:
        for prompt in (str(mine), str(tmp_path / "absent.toml"), "../" * 8 + str(mine)[1:]):
            for stream in (False, True):
                body = {
                    "text": CODE,
                    "instruction": "fix it",
                    "prompt": prompt,
                    "method": "pld",
                    "max_new_tokens": 3,
                    "stream": stream,
                }
                status, _, answer = call(url + "/v1/specedit/edit", body)
                assert status == 400, answer
                assert secret not in answer and str(tmp_path) not in answer
                error = json.loads(answer)["error"]
                assert error["param"] == "prompt" and error["code"] == "invalid_prompt"
                answers.add(error["message"])
    (message,) = answers
    assert all(name in message for name in prompts.available())


def test_a_full_queue_answers_429(tiny_lm, monkeypatch):
    release, started = threading.Event(), threading.Event()

    def blocked(self, request, on_start=None, on_step=None, stop=None):
        started.set()
        release.wait(60)
        raise EditError("released")

    monkeypatch.setattr(LocalEditor, "edit", blocked)
    body = {"text": CODE, "instruction": "fix it", "prompt": "fix", "method": "pld"}
    with in_process(create_app(tiny_lm, max_queue=1)) as url:
        endpoint = url + "/v1/specedit/edit"
        statuses: list[int] = []
        waiting = [
            threading.Thread(target=lambda: statuses.append(call(endpoint, body)[0]))
            for _ in range(2)
        ]
        try:
            waiting[0].start()
            assert started.wait(30)  # one generation runs ...
            waiting[1].start()
            deadline = time.monotonic() + 30
            while get_json(url + "/v1/specedit/status")["queued"] < 1:  # ... and one waits
                assert time.monotonic() < deadline
                time.sleep(0.02)
            for stream in (False, True):  # a stream too is refused before it begins
                status, headers, answer = call(endpoint, {**body, "stream": stream}, timeout=10)
                assert status == 429, answer
                assert json.loads(answer)["error"]["code"] == "rate_limit_exceeded"
                assert int(headers["Retry-After"]) > 0
            client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0)
            with client, pytest.raises(openai.RateLimitError):
                client.chat.completions.create(
                    model=public_name(tiny_lm.name), messages=MESSAGES, max_tokens=1
                )
        finally:
            release.set()
            for thread in waiting:
                thread.join(60)
        assert statuses == [422, 422]  # both waited their turn
        assert call(endpoint, body)[0] == 422  # and the queue drained


def test_a_body_over_the_limit_is_refused_unread(tiny_lm):
    import http.client

    # the wrong model: a body that is read whole gets a 404
    body = json.dumps(
        {"model": "other", "messages": MESSAGES, "max_tokens": 1, "user": "x" * 3000}
    ).encode()
    small = json.dumps({"model": "other", "messages": MESSAGES, "max_tokens": 1}).encode()
    with in_process(create_app(tiny_lm, max_body_bytes=2000)) as url:
        endpoint = url + "/v1/chat/completions"
        status, _, answer = call(endpoint, body)  # its Content-Length says so
        assert status == 413 and json.loads(answer)["error"]["code"] == "request_too_large"
        assert call(endpoint, small)[0] == 404

        def chunked(data: bytes) -> tuple[int, str]:  # no Content-Length: read as it comes
            connection = http.client.HTTPConnection(url.removeprefix("http://"), timeout=30)
            pieces = (data[i : i + 500] for i in range(0, len(data), 500))
            connection.request(
                "POST",
                "/v1/chat/completions",
                body=pieces,
                headers={"Content-Type": "application/json"},
            )
            response = connection.getresponse()
            try:
                return response.status, response.read().decode()
            finally:
                connection.close()

        status, answer = chunked(body)
        assert status == 413 and json.loads(answer)["error"]["code"] == "request_too_large"
        status, answer = chunked(small)
        assert status == 404, answer  # a small chunked body arrives whole


KEY = "sk-specedit-test-7c1e"


@pytest.fixture(scope="module")
def keyed_server(tiny_model_dir, tmp_path_factory):
    """A server whose key comes from the environment, as `specedit serve` reads it."""
    cache = tmp_path_factory.mktemp("cache")
    with served_by_the_command(tiny_model_dir, cache, SPECEDIT_API_KEY=KEY) as url:
        yield url


ENDPOINTS = [
    ("/v1/models", None),
    ("/v1/specedit/status", None),
    ("/v1/chat/completions", {"model": "m", "messages": MESSAGES, "max_tokens": 1}),
    ("/v1/specedit/edit", {"text": CODE, "instruction": "fix it", "max_new_tokens": 1}),
    ("/nowhere", None),
]


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer wrong", f"Bearer {KEY}x", f"Bearer {KEY[:-1]}", f"Basic {KEY}", KEY, "Bearer"],
)
@pytest.mark.parametrize("path,body", ENDPOINTS)
def test_a_server_with_a_key_refuses_every_request_without_it(
    keyed_server, path, body, authorization
):
    headers = {"Authorization": authorization} if authorization else {}
    status, answer_headers, answer = call(keyed_server + path, body, headers)
    assert status == 401
    error = json.loads(answer)["error"]
    assert error["type"] == "invalid_request_error" and error["code"] == "invalid_api_key"
    assert answer_headers["WWW-Authenticate"] == "Bearer"
    assert KEY not in answer


def test_a_server_with_a_key_serves_the_clients_that_send_it(keyed_server, tiny_model_dir):
    with openai.OpenAI(base_url=keyed_server + "/v1", api_key=KEY, max_retries=0) as client:
        assert [m.id for m in client.models.list().data] == [tiny_model_dir.name]
        completion = client.chat.completions.create(
            model=tiny_model_dir.name, messages=MESSAGES, temperature=0, max_tokens=2
        )
        assert completion.usage.completion_tokens <= 2
    wrong = openai.OpenAI(base_url=keyed_server + "/v1", api_key="wrong", max_retries=0)
    with wrong, pytest.raises(openai.AuthenticationError):
        wrong.models.list()
    headers = {"Authorization": f"bearer {KEY}"}  # the scheme is case-insensitive
    assert call(keyed_server + "/v1/specedit/status", headers=headers)[0] == 200
    # the CLI's client sends the key it is given ...
    editor = connect(keyed_server, KEY)
    assert isinstance(editor, RemoteEditor)
    request = EditRequest(CODE, "fix it", prompt="fix", method="pld", max_new_tokens=3)
    with pytest.raises(EditError, match="cut off at the token limit"):  # it edited
        editor.edit(request)
    # ... and without it is told so, rather than taken for another kind of server
    with pytest.raises(ServerRefused, match="--api-key or SPECEDIT_API_KEY") as refused:
        connect(keyed_server)
    assert refused.value.status == 401


@pytest.mark.parametrize(
    "host,warns",
    [
        ("127.0.0.1", False),
        ("127.8.9.10", False),
        ("::1", False),
        ("[::1]", False),
        ("localhost", False),
        ("LocalHost.", False),
        ("0.0.0.0", True),
        ("::", True),
        ("192.168.1.20", True),
        ("box.example.org", True),
    ],
)
def test_serving_beyond_loopback_without_a_key_warns(host, warns):
    assert needs_key_warning(host, None) is warns
    assert needs_key_warning(host, KEY) is False  # a key: nothing to warn of


def test_serve_refuses_an_empty_key():
    result, served = serve_command("--api-key", " ")
    assert result.exit_code == 2 and "--api-key is empty" in result.output
    assert served == []


def test_a_stream_holds_back_what_may_begin_a_stop_string():
    from specedit.server.openai import StopStrings

    stops = StopStrings(lambda tokens: "", ["\n```", "END"])
    assert stops.settled("x = 1\n") == "x = 1"
    assert stops.settled("x = 1\n``") == "x = 1"
    assert stops.settled("x = 1\n```\nmore") == "x = 1"
    assert stops.settled("x = 1 EN") == "x = 1 "
    assert stops.settled("x = 1\ny") == "x = 1\ny"


# --- trust against a web page: Host and Origin, bounded requests, slow clients, no paths ------


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


@pytest.mark.parametrize(
    "host,served",
    [
        ("127.0.0.1:{port}", True),
        ("127.0.0.1", True),
        ("localhost:{port}", True),
        ("LocalHost", True),
        ("[::1]:{port}", True),
        ("[::1]", True),
        ("rebound.example:{port}", False),  # DNS rebinding: a name of the page's, our address
        ("rebound.example", False),
        ("127.0.0.1.rebound.example:{port}", False),
        ("localhost:1", False),  # another port
        ("[::1]:1", False),
        ("::1", False),
        ("", False),
    ],
)
def test_a_loopback_server_answers_only_its_own_host_names(tiny_lm, host, served):
    with in_process(create_app(tiny_lm)) as url:
        name = host.format(port=port_of(url))
        for path, body in [("/v1/models", None), ("/v1/chat/completions", {"model": "x"})]:
            status, _, answer = call(url + path, body, {"Host": name})
            if served:
                assert status in (200, 400), answer
            else:
                assert status == 421, answer
                error = json.loads(answer)["error"]
                assert error["code"] == "misdirected_request"
                assert error["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    "origin,served",
    [
        (None, True),
        ("http://127.0.0.1:{port}", True),
        ("http://localhost:{port}", True),
        ("http://[::1]:{port}", True),
        ("https://attacker.example", False),
        ("http://127.0.0.1:1", False),
        ("http://localhost:{port}.attacker.example", False),
        ("null", False),  # a sandboxed page or a file
    ],
)
def test_a_web_pages_request_is_refused_before_it_runs(tiny_lm, origin, served):
    """Whatever a page sends (a request the browser lets through, or one of a page whose name
    was rebound to this address), it is refused whole, on every endpoint, unstarted."""
    body = {"model": public_name(tiny_lm.name), "messages": MESSAGES, "max_tokens": 1}
    with in_process(create_app(tiny_lm)) as url:
        headers = {"Origin": origin.format(port=port_of(url))} if origin else {}
        for path, data in [("/v1/models", None), ("/v1/chat/completions", body)]:
            status, _, answer = call(url + path, data, headers)
            if served:
                assert status == 200, answer
            else:
                assert status == 403, answer
                assert json.loads(answer)["error"]["code"] == "origin_not_allowed"
        done = get_json(url + "/v1/specedit/status")["done"]
    assert done == (1 if served else 0)


def test_allowed_hosts_and_origins_are_served_and_only_they(tiny_lm):
    app = create_app(
        tiny_lm,
        host="0.0.0.0",  # a LAN's clients name the machine as they will
        allow_hosts=["Box.Example", "::1"],
        allow_origins=["https://Editor.Example/"],
    )
    with in_process(app) as url:
        port = port_of(url)
        hosts = {
            f"box.example:{port}": 200,
            "box.example:443": 200,  # a reverse proxy may keep its own port
            f"127.0.0.1:{port}": 200,
            f"[::1]:{port}": 200,
            f"other.example:{port}": 421,  # names given: only they are answered
        }
        for host, status in hosts.items():
            assert call(url + "/v1/models", headers={"Host": host})[0] == status, host
        status, headers, _ = call(url + "/v1/models", headers={"Origin": "https://editor.example"})
        assert status == 200 and headers["Access-Control-Allow-Origin"] == "https://editor.example"
        assert call(url + "/v1/models", headers={"Origin": "https://other.example"})[0] == 403
        # the browser's preflight of a JSON request with a key, as an allowed page sends it
        request = urllib.request.Request(
            url + "/v1/chat/completions",
            method="OPTIONS",
            headers={
                "Origin": "https://editor.example",
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, content-type",
            },
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            assert response.status == 200
            assert response.headers["Access-Control-Allow-Origin"] == "https://editor.example"
    with in_process(create_app(tiny_lm, host="0.0.0.0")) as url:  # no names given: any Host
        assert call(url + "/v1/models", headers={"Host": "box.example"})[0] == 200
        assert call(url + "/v1/models", headers={"Origin": "https://editor.example"})[0] == 403


@pytest.mark.parametrize("given", ["box.example:8000", "http://box.example", "a b"])
def test_create_app_refuses_a_host_name_that_is_not_one(tiny_lm, given):
    with pytest.raises(ValueError, match="--allow-host"):
        create_app(tiny_lm, allow_hosts=[given])


@pytest.mark.parametrize("given", ["editor.example", "https://editor.example/page", "ftp://x"])
def test_create_app_refuses_an_origin_that_is_not_one(tiny_lm, given):
    with pytest.raises(ValueError, match="--allow-origin"):
        create_app(tiny_lm, allow_origins=[given])


def test_serve_hands_its_limits_and_names_to_the_server():
    arguments = ["--allow-host", "box.example", "--allow-origin", "https://e.example"]
    result, served = serve_command(*arguments, "--max-connections", "3")
    assert result.exit_code == 0, result.output
    served_app, options = served[0]
    assert options["limit_concurrency"] == 3 and options["timeout_keep_alive"] > 0
    with in_process(served_app) as url:
        assert call(url + "/v1/models", headers={"Host": "box.example"})[0] == 200
        assert call(url + "/v1/models", headers={"Host": "other.example"})[0] == 421
        assert call(url + "/v1/models", headers={"Origin": "https://e.example"})[0] == 200
    result, refused = serve_command("--allow-origin", "e.example")
    assert result.exit_code == 2 and "--allow-origin takes" in result.output
    assert len(served + refused) == 1


@pytest.mark.parametrize(
    "stop",
    [["a", "b", "c", "d", "e"], "x" * 257, ["ok", "y" * 257]],
)
def test_too_many_or_too_long_stop_strings_are_a_400(client, tiny_model_dir, stop):
    with pytest.raises(openai.BadRequestError) as error:
        client.chat.completions.create(
            model=tiny_model_dir.name, messages=MESSAGES, max_tokens=1, stop=stop
        )
    assert error.value.body["param"] == "stop"
    assert "at most 4 stop strings of at most 256 characters" in error.value.body["message"]


def test_four_stop_strings_of_256_characters_are_taken(client, tiny_model_dir):
    stop = [c * 256 for c in "abcd"]
    completion = client.chat.completions.create(
        model=tiny_model_dir.name, messages=MESSAGES, max_tokens=1, stop=stop
    )
    assert completion.usage.completion_tokens <= 1


def test_a_negative_seed_is_a_400(client, tiny_server, tiny_model_dir):
    with pytest.raises(openai.BadRequestError) as error:
        client.chat.completions.create(
            model=tiny_model_dir.name, messages=MESSAGES, max_tokens=1, temperature=1, seed=-1
        )
    assert error.value.body["param"] == "seed"
    body = {"text": CODE, "instruction": "fix it", "method": "pld", "temperature": 1, "seed": -1}
    status, _, answer = call(tiny_server + "/v1/specedit/edit", body)
    assert status == 400 and json.loads(answer)["error"]["param"] == "seed"


def test_a_body_that_stops_coming_is_answered_408_and_closed(tiny_lm):
    import socket

    with in_process(create_app(tiny_lm, body_timeout_s=0.5)) as url:
        with socket.create_connection(("127.0.0.1", port_of(url)), timeout=20) as connection:
            connection.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
            )
            answer = b""
            while chunk := connection.recv(4096):  # until the server closes the connection
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408")
        assert json.loads(body)["error"]["code"] == "request_timeout"
        assert get_json(url + "/v1/models")["data"]  # and it goes on serving


def test_connections_beyond_the_limit_get_a_503(tiny_lm):
    import socket

    def answers(url: str, status: int) -> bool:
        """Whether the server comes to answer `status` (connections open and close in time)."""
        deadline = time.monotonic() + 10
        while call(url + "/v1/models")[0] != status:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    with in_process(create_app(tiny_lm), limit_concurrency=3) as url:
        idle = [socket.create_connection(("127.0.0.1", port_of(url))) for _ in range(3)]
        try:
            assert answers(url, 503)
        finally:
            for connection in idle:
                connection.close()
        assert answers(url, 200)


def test_a_long_tokenization_holds_up_no_other_request(tiny_lm, monkeypatch):
    started, release = threading.Event(), threading.Event()
    tokenizer = tiny_lm.tokenizer
    template = tokenizer.apply_chat_template

    def slow(*args, **kwargs):
        started.set()
        release.wait(20)
        return template(*args, **kwargs)

    monkeypatch.setattr(tokenizer, "apply_chat_template", slow)
    body = {"model": public_name(tiny_lm.name), "messages": MESSAGES, "max_tokens": 1}
    with in_process(create_app(tiny_lm)) as url:
        statuses: list[int] = []
        asking = threading.Thread(
            target=lambda: statuses.append(call(url + "/v1/chat/completions", body)[0])
        )
        asking.start()
        try:
            assert started.wait(20)
            assert get_json(url + "/v1/models")["data"]  # answered (within 5 s) while it tokenizes
        finally:
            release.set()
            asking.join(60)
    assert statuses == [200]


def test_no_answer_names_the_models_folder(tiny_lm, tiny_model_dir, monkeypatch):
    from specedit.editing.editor import EditResult
    from specedit.editing.prompts import EditPrompt
    from specedit.engine.events import Generation, Stats

    def edited(self, request, on_start=None, on_step=None, stop=None):
        prompt = EditPrompt([1, 2], "```", request.text, 0, 1, input_offsets=((0, 1),))
        on_start(prompt, 4)
        return EditResult(request.text, Generation([5], "stop", Stats()), prompt)

    folder = str(tiny_model_dir)
    monkeypatch.setattr(LocalEditor, "edit", edited)
    name = tiny_model_dir.name
    chat = {"model": name, "messages": MESSAGES, "max_tokens": 2}
    edit = {"text": CODE, "instruction": "fix it", "method": "pld"}
    with in_process(create_app(tiny_lm)) as url:
        answers = [
            call(url + "/v1/models"),
            call(url + "/v1/specedit/status"),
            call(url + "/v1/chat/completions", chat),
            call(url + "/v1/chat/completions", {**chat, "stream": True}),
            call(url + "/v1/chat/completions", {**chat, "model": folder}),  # no path oracle
            call(url + "/v1/specedit/edit", edit),
            call(url + "/v1/specedit/edit", {**edit, "stream": True}),
        ]
    assert [status for status, _, _ in answers] == [200, 200, 200, 200, 404, 200, 200]
    assert json.loads(answers[0][2])["data"][0]["id"] == name
    assert json.loads(answers[5][2])["model"] == name
    for _, headers, text in answers:
        assert folder not in text and folder not in str(headers)


@pytest.mark.parametrize(
    "model,public",
    [
        ("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b"),  # a bundled name
        ("Qwen/Qwen2.5-Coder-1.5B-Instruct", "Qwen/Qwen2.5-Coder-1.5B-Instruct"),  # a hub id
    ],
)
def test_a_model_that_is_no_file_keeps_its_name(model, public):
    assert public_name(model) == public


def test_a_model_file_or_folder_is_named_by_its_own_name(tmp_path, monkeypatch):
    weights = tmp_path / "models" / "coder.gguf"
    weights.parent.mkdir()
    weights.write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    assert public_name(str(weights)) == "coder.gguf"
    assert public_name(str(tmp_path / "models") + "/") == "models"
    assert public_name("models/..") == tmp_path.name


@pytest.mark.parametrize(("given", "kept"), [([], 2048 << 20), (["--cache-ram", "64"], 64 << 20)])
def test_serve_on_llama_cpp_keeps_the_files_prompts_in_the_memory_it_is_given(
    monkeypatch, given, kept
):
    from specedit.cli import tools
    from specedit.engine.llamacpp import GgufModel
    from specedit.models.load import LoadedModel
    from specedit.models.prefixes import PrefixStore, RecentHeads

    gguf = GgufModel(Path("m.gguf"), None, None, threads=1, store=PrefixStore(Path("heads")))
    loaded = LoadedModel(name="m.gguf", model=gguf, tokenizer=None)
    monkeypatch.setattr(tools, "load_model", lambda *args, **kwargs: (loaded, None))
    result, _ = serve_command("--engine", "llama.cpp", *given)
    assert result.exit_code == 0, result.output
    assert isinstance(gguf.store, RecentHeads) and gguf.store.budget == kept
    result, _ = serve_command("--engine", "llama.cpp", "--cache-ram", "0")
    assert result.exit_code == 0, result.output
    assert gguf.store is None
