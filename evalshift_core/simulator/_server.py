"""The simulator's loopback HTTP server and its routing by wire format."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from typing import Any

import orjson

from . import _anthropic, _gemini, _openai, _responses
from ._batch import BatchService
from ._errors import error_response
from ._loopback import LoopbackServer
from ._noise import request_key
from ._rules import ModelScript, Reply, SimRequest, with_noise

# Request headers are logged for tests to check (a gateway's routing header); keys are not.
_SECRET_HEADERS = frozenset({"authorization", "x-api-key", "x-goog-api-key", "api-key"})


class Simulator(LoopbackServer):
    """Scripted models served on ``127.0.0.1`` in the providers' wire formats.

    OpenAI Chat Completions and Responses, Anthropic Messages and Gemini generateContent /
    streamGenerateContent, each as JSON or SSE. ``latency_s`` delays every answered request;
    ``rate_limit_first=N`` answers the first N requests with ``error_status`` (429 by default)
    and ``rate_limit_every=N`` every Nth, with a ``retry-after`` header when ``retry_after``
    is set. ``sim.requests`` logs every request received (path, body, provider, model, status,
    received: a monotonic timestamp, and ``noise``: the kinds of noise that changed the reply).

    ``noise`` (a preset name, a mapping or a ``NoiseProfile``) applies over every model's own
    profile and ``noise_seed`` replaces every profile's seed (see ``load_scripts``). A model with a
    profile answers the n-th identical request with the n-th sample of its noise, so two replays
    of one model differ while a fresh simulator repeats the same sequence.

    The three batch APIs (OpenAI Batch, Anthropic Message Batches, Gemini batch mode) run on the
    same scripted models: a batch ends ``batch_delay_s`` after it is created, the first
    ``batch_fail_first`` batched requests fail with ``batch_fail_status``, and
    ``sim.batches_created`` counts the batches submitted (see ``_batch.py``).

    >>> with Simulator(scripts) as sim:
    ...     client = openai.OpenAI(base_url=sim.openai_base_url, api_key="sim")
    """

    thread_name = "evalshift-simulator"

    def __init__(
        self,
        scripts: Mapping[str, ModelScript],
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        latency_s: float = 0.0,
        rate_limit_first: int = 0,
        rate_limit_every: int = 0,
        retry_after: float | None = None,
        error_status: int = 429,
        noise: Any = None,
        noise_seed: int | None = None,
        batch_delay_s: float = 0.0,
        batch_fail_first: int = 0,
        batch_fail_status: int = 500,
    ) -> None:
        self.scripts = with_noise(scripts, noise=noise, noise_seed=noise_seed)
        self.latency_s = latency_s
        self.rate_limit_first = rate_limit_first
        self.rate_limit_every = rate_limit_every
        self.retry_after = retry_after
        self.error_status = error_status
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        """The most requests the simulator was answering at once (a check on client concurrency)."""
        self._lock = threading.Lock()
        self._count = 0
        self._answered: Counter[tuple[str, str]] = Counter()
        """How many times each model answered each request (the noise's ``repeat``)."""
        self.batch = BatchService(self, delay_s=batch_delay_s, fail_first=batch_fail_first,
                                  fail_status=batch_fail_status)
        self._bind(_make_handler(self), host, port)

    @property
    def batches_created(self) -> int:
        """Batches submitted to any of the three batch APIs."""
        return sum(self.batch.created.values())

    @property
    def anthropic_base_url(self) -> str:
        """For ``anthropic.Anthropic(base_url=...)`` / ``ANTHROPIC_BASE_URL`` (the SDK adds /v1)."""
        return self.base_url

    @property
    def gemini_base_url(self) -> str:
        """For ``HttpOptions(base_url=...)`` / ``GOOGLE_GEMINI_BASE_URL`` (the SDK adds /v1beta)."""
        return self.base_url

    def respond(self, request: SimRequest) -> Reply:
        return self._answer(request)[0]

    def _answer(self, request: SimRequest) -> tuple[Reply, list[str]]:
        script = self.scripts.get(request.model)
        if script is None:
            raise KeyError(request.model)
        repeat = 0
        if script.noise is not None:
            key = (request.model, request_key(request))
            with self._lock:
                repeat = self._answered[key]
                self._answered[key] += 1
        return script.answer(request, repeat=repeat)

    def served(self, provider: str | None = None) -> list[dict[str, Any]]:
        """Logged requests that got a 200, optionally for one provider."""
        return [r for r in self.requests if r["status"] == 200 and (provider is None or r["provider"] == provider)]

    def _record(self, path: str, body: dict[str, Any], provider: str | None, model: str | None,
                headers: Mapping[str, str] | None = None) -> tuple[int, dict[str, Any], bool]:
        with self._lock:
            self._count += 1
            n = self._count
            limited = n <= self.rate_limit_first or (self.rate_limit_every > 0 and n % self.rate_limit_every == 0)
            entry = {"path": path, "body": body, "provider": provider, "model": model,
                     "headers": {k.lower(): v for k, v in (headers or {}).items() if k.lower() not in _SECRET_HEADERS},
                     "status": self.error_status if limited else 200, "received": time.monotonic(), "noise": []}
            self.requests.append(entry)
            return n, entry, limited

    def handle(self, path: str, body: dict[str, Any],
               headers: Mapping[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        route = path.split("?", 1)[0].rstrip("/")
        gemini = _gemini.match_path(path)
        if route.endswith("/chat/completions"):
            provider, request = "openai", _openai.parse_chat_request(body)
            stream = bool(body.get("stream"))
            render, events = _openai.chat_completion, _openai.chat_completion_chunks
        elif route.endswith("/responses"):
            provider, request = "openai", _responses.parse_responses_request(body)
            stream = bool(body.get("stream"))
            render, events = _responses.response, _responses.response_events
        elif route.endswith("/messages"):
            provider, request = "anthropic", _anthropic.parse_messages_request(body)
            stream = bool(body.get("stream"))
            render, events = _anthropic.message, _anthropic.message_events
        elif gemini is not None:
            provider, request = "gemini", _gemini.parse_generate_request(gemini[0], body)
            stream = gemini[1]
            render, events = _gemini.generate_content, _gemini.generate_content_events
        else:
            self._record(path, body, None, None, headers)[1]["status"] = 404
            return error_response("openai", 404, f"no route for {path}")
        n, entry, limited = self._record(path, body, provider, request.model, headers)
        if limited:
            headers = {}
            if self.retry_after is not None:
                headers["retry-after"] = f"{self.retry_after:g}"
            status, err_headers, payload = error_response(provider, self.error_status, "simulated rate limit")
            return status, err_headers | headers, payload
        if self.latency_s:
            with self._lock:
                self.in_flight += 1
                self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                time.sleep(self.latency_s)
            finally:
                with self._lock:
                    self.in_flight -= 1
        try:
            reply, entry["noise"] = self._answer(request)
        except KeyError:
            entry["status"] = 404
            return error_response(provider, 404, f"The model `{request.model}` does not exist")
        if reply.error is not None:
            entry["status"] = int(reply.error.get("status", 400))
            return error_response(provider, entry["status"], str(reply.error.get("message", "scripted error")))
        if stream:
            return 200, {"content-type": "text/event-stream"}, b"".join(events(request, reply, n))
        return 200, {"content-type": "application/json"}, orjson.dumps(render(request, reply, n))


def _make_handler(sim: Simulator) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # headers and body go out as separate writes; Nagle would hold the body back ~40 ms
        disable_nagle_algorithm = True

        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            batched = sim.batch.route("POST", self.path, self.headers, raw)
            if batched is not None:
                self._send(*batched)
                return
            try:
                body = orjson.loads(raw) if raw else {}
            except orjson.JSONDecodeError:
                status, headers, payload = error_response("openai", 400, "request body is not JSON")
            else:
                status, headers, payload = sim.handle(self.path, body, dict(self.headers.items()))
            self._send(status, headers, payload)

        def do_GET(self) -> None:  # noqa: N802 - batch status, results and files
            answer = sim.batch.route("GET", self.path, self.headers, b"")
            self._send(*(answer or error_response("openai", 404, f"no route for GET {self.path}")))

        def _send(self, status: int, headers: dict[str, str], payload: bytes) -> None:
            self.send_response(status)
            for k, v in headers.items():
                self.send_header(k, v)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

    return Handler
