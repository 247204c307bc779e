"""The client sends only the key the user gave for --server, and never in clear text to
another machine."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from specedit.cli import app
from specedit.cli.exits import Exit
from specedit.server.client import sendable_key

runner = CliRunner()
OPENAI_KEY = "sk-the-users-openai-key"


@pytest.fixture
def recorder() -> Iterator[tuple[str, list[dict]]]:
    """A real HTTP server on loopback that records each request's target and headers and
    answers 404; it also serves as an HTTP proxy, so requests meant for other hosts reach it
    without leaving this machine."""
    seen: list[dict] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
            self.send_error(404)

        do_POST = do_GET

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", seen
    server.shutdown()
    server.server_close()


@pytest.fixture
def source(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bug.py").write_text("def add(a, b):\n    return a - b\n")
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.delenv("SPECEDIT_API_KEY", raising=False)
    for proxy in ("http_proxy", "HTTP_PROXY", "no_proxy", "NO_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    return "bug.py"


def fix_through(server: str, *args: str):
    return runner.invoke(app, ["fix", "bug.py", "add() subtracts", "--server", server, *args])


def test_the_openai_key_is_not_sent_unless_asked(recorder, source):
    url, seen = recorder
    fix_through(url)
    assert seen and all("authorization" not in request for request in seen)
    seen.clear()
    fix_through(url, "--send-openai-key")
    assert seen[0]["authorization"] == f"Bearer {OPENAI_KEY}"


def test_the_users_api_key_goes_to_a_server_on_this_machine(recorder, source, monkeypatch):
    url, seen = recorder
    fix_through(url, "--api-key", "given")
    assert {request["authorization"] for request in seen} == {"Bearer given"}
    seen.clear()
    monkeypatch.setenv("SPECEDIT_API_KEY", "from-env")
    fix_through(url.replace("127.0.0.1", "localhost"))
    assert {request["authorization"] for request in seen} == {"Bearer from-env"}


def test_no_key_goes_over_plain_http_to_another_machine(recorder, source):
    url, seen = recorder
    # a process of its own, whose proxy is the recorder: the request for the other host
    # reaches it and this machine only
    env = {**os.environ, "http_proxy": url, "SPECEDIT_API_KEY": "given"}
    command = [sys.executable, "-m", "specedit", "fix", source, "x", "--server"]
    done = subprocess.run(
        [*command, "http://collector.invalid:8000"], env=env, capture_output=True, text=True
    )
    assert seen and seen[0]["path"].startswith("http://collector.invalid:8000/"), done.stderr
    assert all("authorization" not in request for request in seen)
    assert (
        "specedit: warning: not sending the API key to collector.invalid over plain http"
        in done.stderr
    )


def test_a_redirect_is_not_followed_with_the_key(recorder, source):
    """urllib sends a request's headers on to the address a redirect names: the key would go
    where the user never said, past the check made on the address given."""
    url, seen = recorder

    class Redirect(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", url + self.path)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        result = fix_through(f"http://127.0.0.1:{server.server_port}", "--api-key", "given")
    finally:
        server.shutdown()
        server.server_close()
    assert result.exit_code == Exit.MODEL
    assert f"redirects to '{url}/v1/specedit/status', which is not followed" in result.stderr
    assert seen == []


@pytest.mark.parametrize(
    "url,sent",
    [
        ("https://api.example.com", True),
        ("http://127.0.0.1:8000", True),
        ("http://127.3.4.5", True),
        ("http://[::1]:8000", True),
        ("http://localhost:8000", True),
        ("http://192.168.1.2:8000", False),
        ("http://localhost.example.com", False),
        ("http://example.com", False),
    ],
)
def test_which_servers_may_get_a_key(url, sent):
    assert sendable_key(url, "k") == ("k" if sent else None)
