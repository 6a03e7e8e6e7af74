"""The simulator's loopback HTTP server and its routing by wire format."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from . import _openai
from ._rules import ModelScript, Reply, SimRequest

Route = Callable[["Simulator", str, dict[str, Any]], tuple[int, dict[str, str], bytes]]


class Simulator:
    """Scripted models served on ``127.0.0.1`` in the providers' wire formats.

    >>> with Simulator(scripts) as sim:
    ...     client = openai.OpenAI(base_url=sim.openai_base_url, api_key="sim")
    """

    def __init__(
        self,
        scripts: Mapping[str, ModelScript],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_s: float = 0.0,
    ) -> None:
        self.scripts = dict(scripts)
        self.latency_s = latency_s
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._count = 0
        self._server = ThreadingHTTPServer((host, port), _make_handler(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    def start(self) -> Simulator:
        if self._thread is None:
            self._thread = threading.Thread(target=self._server.serve_forever, name="evalshift-simulator", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Simulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def respond(self, request: SimRequest) -> Reply:
        script = self.scripts.get(request.model)
        if script is None:
            raise KeyError(request.model)
        return script.respond(request)

    def _record(self, path: str, body: dict[str, Any]) -> int:
        with self._lock:
            self._count += 1
            self.requests.append({"path": path, "body": body})
            return self._count

    def handle(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        n = self._record(path, body)
        if self.latency_s:
            time.sleep(self.latency_s)
        route = path.split("?", 1)[0].rstrip("/")
        if route.endswith("/chat/completions"):
            request = _openai.parse_chat_request(body)
            try:
                reply = self.respond(request)
            except KeyError:
                return _error(404, f"The model `{request.model}` does not exist", "model_not_found")
            if body.get("stream"):
                return 200, {"content-type": "text/event-stream"}, b"".join(
                    _openai.chat_completion_chunks(request, reply, n)
                )
            return 200, {"content-type": "application/json"}, orjson.dumps(
                _openai.chat_completion(request, reply, n)
            )
        return _error(404, f"no route for {path}", "not_found")


def _error(status: int, message: str, code: str) -> tuple[int, dict[str, str], bytes]:
    body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
    return status, {"content-type": "application/json"}, orjson.dumps(body)


def _make_handler(sim: Simulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            try:
                body = orjson.loads(raw) if raw else {}
            except orjson.JSONDecodeError:
                status, headers, payload = _error(400, "request body is not JSON", "invalid_json")
            else:
                status, headers, payload = sim.handle(self.path, body)
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

    return Handler
