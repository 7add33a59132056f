"""A local OpenAI-compatible chat endpoint on a real socket, for the LLM tests.

It speaks ``POST /v1/chat/completions`` (and ``GET /v1/models``) as OpenAI does, so the real ``openai``
client talks to it unchanged. A test gives it a ``respond(request) -> Reply``
function (recorded answers keyed by passage, malformed ones, ...) and can
script faults ahead of it: 429 with ``Retry-After``, 5xx, slow answers that
outlast the client's timeout, refusals of ``response_format``. It records
every request and how many were in flight at once.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from hippo.llm import prompts


@dataclass
class Reply:
    content: str | None = None
    status: int = 200
    finish_reason: str = "stop"
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    error: str = "fake error"


Responder = Callable[[dict[str, Any]], "Reply | str"]

_SYSTEMS = {
    "ner": prompts.NER_SYSTEM,
    "triples": prompts.TRIPLES_SYSTEM,
    "filter": prompts.FILTER_SYSTEM.split("{", 1)[0],
    "clues": prompts.CLUES_SYSTEM.split("{", 1)[0],
}


def stage_of(request: dict[str, Any]) -> str:
    """Which of hippo's prompts a request carries (by its system message)."""
    system = next((m["content"] for m in request.get("messages", []) if m.get("role") == "system"), "")
    for stage, text in _SYSTEMS.items():
        if system.startswith(text):
            return stage
    return "unknown"


def last_user(request: dict[str, Any]) -> str:
    return next((m["content"] for m in reversed(request.get("messages", [])) if m.get("role") == "user"), "")


def format_type(request: dict[str, Any]) -> str | None:
    fmt = request.get("response_format")
    return fmt.get("type") if isinstance(fmt, dict) else None


class FakeOpenAI:
    """``with FakeOpenAI(respond) as server: ... server.url ...``"""

    def __init__(self, respond: Responder, *, refuse_formats: frozenset[str] = frozenset(),
                 models: tuple[str, ...] = ("fake-model",)) -> None:
        self.respond = respond
        self.models = models
        self.refuse_formats = set(refuse_formats)
        self.requests: list[dict[str, Any]] = []
        self.statuses: list[int] = []
        self.errors: list[str] = []
        self.max_in_flight = 0
        self._in_flight = 0
        self._faults: list[Reply] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def script(self, *faults: Reply) -> None:
        """Answer the next requests with these, in order, before ``respond`` is asked again."""
        with self._lock:
            self._faults.extend(faults)

    def count(self, stage: str | None = None) -> int:
        with self._lock:
            return sum(1 for r in self.requests if stage is None or stage_of(r) == stage)

    # -- HTTP ------------------------------------------------------------------------------

    def _next(self, request: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._faults:
                return self._faults.pop(0)
        if format_type(request) in self.refuse_formats:
            return Reply(status=400, error=f"response_format {format_type(request)} is not supported")
        try:
            reply = self.respond(request)
        except Exception as exc:  # a bug in the test's responder: surface it, do not retry it away
            self.errors.append(repr(exc))
            return Reply(status=400, error=f"responder failed: {exc!r}")
        return Reply(content=reply) if isinstance(reply, str) else reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                if self.path.rstrip("/").endswith("/models"):  # what ``hippo doctor`` lists
                    self._send(200, {"object": "list", "data": [
                        {"id": name, "object": "model", "created": 0, "owned_by": "fake"} for name in fake.models]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                with fake._lock:
                    fake._in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake._in_flight)
                reply = Reply(status=500)
                try:
                    reply = fake._next(body)
                    if reply.delay:
                        time.sleep(reply.delay)
                    if reply.status != 200:
                        self._send(reply.status, {"error": {"message": reply.error, "type": "fake"}}, reply.headers)
                        return
                    content = reply.content or ""
                    prompt_chars = sum(len(m.get("content") or "") for m in body.get("messages", []))
                    self._send(200, {
                        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                        "model": body.get("model", "fake"),
                        "choices": [{"index": 0, "finish_reason": reply.finish_reason,
                                     "message": {"role": "assistant", "content": content}}],
                        "usage": {"prompt_tokens": prompt_chars // 4 + 1, "completion_tokens": len(content) // 4 + 1,
                                  "total_tokens": prompt_chars // 4 + len(content) // 4 + 2},
                    }, reply.headers)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout): nothing to answer
                finally:
                    with fake._lock:
                        fake._in_flight -= 1
                        fake.statuses.append(reply.status)

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler
