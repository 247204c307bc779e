"""llama.cpp's own server beside specedit in the bench: the peer a CPU user already has.

`llama-server` is llama.cpp's server with plain decoding, `llama-server-ngram-mod` and
`llama-server-ngram-simple` with its draftless n-gram speculation (`--spec-type`), whose stated
use is the rewriting of source code. Each runs the model's GGUF file as it is, with the bench's
threads, on the prompt's token ids as specedit renders them (the same chat messages, token for
token), greedy, with nothing of an earlier request reused (`cache_prompt` off: every setup
starts cold), and stops at the same closing fence. A server knows no regions: it rewrites the
whole file, as its users' editors ask it to. Starting and warming up are not timed.

The binary is built from the llama.cpp that the installed llama-cpp-python vendors, so that
both run the same kernels: `make llama-server` puts it where `find_binary` looks;
`SPECEDIT_LLAMA_SERVER` names another.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from specedit.editing.prompts import EditPrompt, extract_text, framed
from specedit.models.bundled import ModelError, cache_dir, gguf_file
from specedit.models.load import repacked

# method -> llama-server's --spec-type
PEERS = {
    "llama-server": "none",
    "llama-server-ngram-mod": "ngram-mod",
    "llama-server-ngram-simple": "ngram-simple",
}
START_SECONDS = 120  # loading the model and paging in its weights
REQUEST_SECONDS = 3600  # one edit: a long file's rewrite on two cores takes minutes
BINARY_VARIABLE = "SPECEDIT_LLAMA_SERVER"


class PeerUnavailable(Exception):
    """No llama-server binary, no GGUF file, or a server that would not start."""


@dataclass
class PeerRun:
    """One edit by a server: the edited text (None: cut off), and what its timings say."""

    text: str | None
    new_tokens: int
    seconds: float  # the server's prompt and generation time
    passes: int  # evaluations: the prompt's and one per step (drafted tokens ride along)
    stop: str  # stop (the fence), eos or length
    drafted: int
    accepted: int


def binary_home() -> Path:
    """Where `make llama-server` builds the binary for the installed llama-cpp-python."""
    try:
        version = metadata.version("llama_cpp_python")
    except metadata.PackageNotFoundError:
        version = "none"
    return cache_dir() / "llama-server" / version


def find_binary() -> Path:
    """The llama-server to run: `SPECEDIT_LLAMA_SERVER`, else the one `make llama-server`
    built for the installed llama-cpp-python."""
    named = os.environ.get(BINARY_VARIABLE)
    binary = Path(named) if named else binary_home() / "llama-server"
    if not os.access(binary, os.X_OK):
        where = f"{BINARY_VARIABLE}={named}" if named else str(binary)
        raise PeerUnavailable(
            f"no llama-server at {where}: `make llama-server` builds it from the llama.cpp that "
            "llama-cpp-python vendors (minutes), or set "
            f"{BINARY_VARIABLE} to one you have"
        )
    return binary


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """One llama-server process per method, on localhost, started when first asked and grown
    (restarted) when a task needs a longer context."""

    def __init__(self, model: str, threads: int) -> None:
        try:
            self.gguf: Path = gguf_file(model)
        except ModelError as exc:
            raise PeerUnavailable(str(exc)) from None
        self.binary = find_binary()
        self.model, self.threads = model, threads
        self._servers: dict[str, tuple[subprocess.Popen, str, int]] = {}
        # the servers' stderr, read when one fails; closed by close()
        self._log = tempfile.TemporaryFile()  # noqa: SIM115

    def _url(self, method: str, n_ctx: int) -> str:
        """The address of a warm server for `method` with at least `n_ctx` tokens of context."""
        running = self._servers.get(method)
        if running is not None and running[2] >= n_ctx:
            return running[1]
        if running is not None:
            self._stop(method)
        n_ctx = -(-n_ctx // 1024) * 1024
        port = _free_port()
        command = [
            str(self.binary),
            *("--model", str(self.gguf), "--host", "127.0.0.1", "--port", str(port)),
            *("--threads", str(self.threads), "--threads-batch", str(self.threads)),
            *("--ctx-size", str(n_ctx), "--parallel", "1", "--spec-type", PEERS[method]),
            *("--no-webui", "--log-disable"),
            *(() if repacked(self.model, self.threads) else ("--no-repack",)),
        ]
        self._log.seek(0)
        self._log.truncate()
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self._log
        )
        url = f"http://127.0.0.1:{port}"
        self._servers[method] = (process, url, n_ctx)
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if process.poll() is not None:
                self._log.seek(0)
                why = self._log.read().decode(errors="replace").strip().splitlines()[-3:]
                self._servers.pop(method)
                raise PeerUnavailable(f"{self.binary} exited: {' / '.join(why)}")
            try:
                with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        else:
            self._stop(method)
            raise PeerUnavailable(f"{self.binary} did not answer within {START_SECONDS} s")
        self._complete(url, {"prompt": "def warm_up():", "n_predict": 1})  # pages in the weights
        return url

    @staticmethod
    def _complete(url: str, body: dict) -> dict:
        request = urllib.request.Request(
            f"{url}/completion",
            json.dumps(body).encode(),
            {"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=REQUEST_SECONDS) as response:
            return json.load(response)

    def run(self, method: str, prompt: EditPrompt, max_new_tokens: int) -> PeerRun:
        """Greedy decoding of `prompt`'s token ids until EOS, its closing fence or the limit."""
        url = self._url(method, len(prompt.ids) + max_new_tokens + 1)
        answer = self._complete(
            url,
            {
                "prompt": list(prompt.ids),
                "n_predict": max_new_tokens,
                "temperature": 0.0,
                "stop": ["\n" + prompt.fence],
                "cache_prompt": False,
            },
        )
        stop = {"word": "stop", "eos": "eos"}.get(answer.get("stop_type"), "length")
        content = answer["content"] + ("\n" + prompt.fence if stop == "stop" else "")
        timings = answer.get("timings", {})
        drafted, accepted = timings.get("draft_n", 0), timings.get("draft_n_accepted", 0)
        new_tokens = answer.get("tokens_predicted", timings.get("predicted_n", 0))
        text = extract_text(content, stop != "length", prompt)
        return PeerRun(
            None if text is None else framed(text, prompt),
            new_tokens,
            (timings.get("prompt_ms", 0.0) + timings.get("predicted_ms", 0.0)) / 1000,
            1 + max(new_tokens - 1 - accepted, 0),
            stop,
            drafted,
            accepted,
        )

    def _stop(self, method: str) -> None:
        process = self._servers.pop(method)[0]
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def close(self) -> None:
        for method in list(self._servers):
            self._stop(method)
        self._log.close()
