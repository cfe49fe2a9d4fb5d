"""A simulated-latency LM provider: an OpenAI-compatible endpoint on loopback (perf and sweep measurements).

Every chat completion waits ``delay_s`` (a remote provider's latency) and answers the way the
scripted test LM does: a SQL statement over the built-in schema, or a ``chat`` tool call when
tools are offered. It counts requests and the most in flight at once per model, which is how the
tests see a provider's concurrency cap hold from outside the workers. Reached through LiteLLM
like any provider: ``openai/<model>`` with ``api_base`` = :attr:`LatencyServer.url`.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["LatencyServer"]

_SQL = "SELECT count(*) FROM service_areas"


class LatencyServer:
    """The endpoint, as a context manager (it serves from a daemon thread while open).

    Args:
        delay_s: Seconds each request takes.
    """

    def __init__(self, delay_s: float = 0.2) -> None:
        self.delay_s = delay_s
        #: requests received, by model
        self.requests: dict[str, int] = {}
        #: most requests in flight at the same time, by model
        self.max_in_flight: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The API base (``http://127.0.0.1:PORT/v1``)."""
        if self._server is None:
            raise RuntimeError("the server is not running; use it as a context manager")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> LatencyServer:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                model = str(body.get("model", ""))
                owner._enter(model)
                try:
                    time.sleep(owner.delay_s)
                    payload = json.dumps(_completion(model, bool(body.get("tools")))).encode()
                finally:
                    owner._leave(model)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def _enter(self, model: str) -> None:
        with self._lock:
            self.requests[model] = self.requests.get(model, 0) + 1
            self._in_flight[model] = self._in_flight.get(model, 0) + 1
            self.max_in_flight[model] = max(self.max_in_flight.get(model, 0), self._in_flight[model])

    def _leave(self, model: str) -> None:
        with self._lock:
            self._in_flight[model] -= 1


def _completion(model: str, tools: bool) -> dict[str, Any]:
    if tools:
        call = {"id": "call_stub", "type": "function", "function": {"name": "chat", "arguments": '{"message": "hi"}'}}
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": _SQL}, "stop"
    return {
        "id": "stub",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }
