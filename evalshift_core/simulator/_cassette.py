"""A loopback server that replays recorded provider interactions (vcrpy cassettes, raw SSE).

Point an official client (openai, anthropic, google-genai) at ``server.base_url`` and it gets
the recorded responses back, byte for byte, with the header fixes the fixtures README calls for.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ._loopback import LoopbackServer

# Headers a replay must not repeat: the body length is recomputed, and the recorded framing
# (chunked, keep-alive) describes a connection that no longer exists.
_DROP_HEADERS = {"content-length", "transfer-encoding", "connection", "keep-alive"}


@dataclass
class Interaction:
    """One recorded request/response pair."""

    method: str
    path: str
    """The request path (no host); a query is kept when it selects the wire format (``alt=sse``)."""
    request_body: str | None
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    served: int = 0


@dataclass
class ReceivedRequest:
    """What the server was sent, for tests to inspect."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body or b"null")


def _path_of(uri: str) -> str:
    parts = urlsplit(uri)
    query = "&".join(q for q in parts.query.split("&") if q.startswith("alt="))
    return parts.path + (f"?{query}" if query else "")


def _infer_content_type(body: bytes) -> str:
    head = body.lstrip()[:6]
    if head.startswith((b"data:", b"event:")):
        return "text/event-stream"
    return "application/json"


def _response_headers(recorded: Mapping[str, Any] | None, body: bytes) -> list[tuple[str, str]]:
    headers: list[tuple[str, str]] = []
    for name, values in (recorded or {}).items():
        if name.lower() in _DROP_HEADERS:
            continue
        for value in values if isinstance(values, list) else [values]:
            headers.append((str(name), str(value)))
    if not any(n.lower() == "content-type" for n, _ in headers):
        encoded = any(n.lower() == "content-encoding" for n, _ in headers)
        headers.append(("Content-Type", "application/json" if encoded else _infer_content_type(body)))
    return headers


def _body_bytes(container: Mapping[str, Any] | None) -> bytes:
    if not container:
        return b""
    if "parsed_body" in container:
        # pydantic-ai's serializer stores a mapping; its loader turns it back into json.dumps.
        return json.dumps(container["parsed_body"]).encode()
    body = container.get("body")
    if isinstance(body, Mapping):
        body = body.get("string")
    if body is None:
        return b""
    return body if isinstance(body, bytes) else str(body).encode("utf-8")


def load_cassette(path: str | Path) -> list[Interaction]:
    """Read a vcrpy cassette (``interactions: [{request, response}]``) into interactions."""
    import yaml  # a dev dependency: only tests and tools replay cassettes

    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    out: list[Interaction] = []
    for i, item in enumerate(data.get("interactions") or []):
        request = item.get("request") or {}
        response = item.get("response") or {}
        if "uri" not in request:
            raise ValueError(f"{path}: interaction {i}: request has no 'uri'")
        body = _body_bytes(response)
        req_body = _body_bytes(request)
        out.append(
            Interaction(
                method=str(request.get("method", "POST")).upper(),
                path=_path_of(str(request["uri"])),
                request_body=req_body.decode("utf-8", "replace") if req_body else None,
                status=int((response.get("status") or {}).get("code", 200)),
                headers=_response_headers(response.get("headers"), body),
                body=body,
            )
        )
    return out


def load_sse(path: str | Path, *, request_path: str = "/v1/chat/completions") -> list[Interaction]:
    """A raw SSE body file (not a cassette) served as one streaming response at ``request_path``."""
    body = Path(path).read_bytes()
    return [
        Interaction(
            method="POST",
            path=request_path,
            request_body=None,
            status=200,
            headers=[("Content-Type", "text/event-stream")],
            body=body,
        )
    ]


def request_kwargs(interaction: Interaction) -> dict[str, Any]:
    """The recorded request body as keyword arguments for the client method that sent it."""
    return json.loads(interaction.request_body or "{}")


@dataclass
class CassetteServer(LoopbackServer):
    """Serve interactions on ``127.0.0.1``: each request gets the first unserved recording with
    the same method and path, in recorded order; once all are served the last one repeats.

    >>> with CassetteServer.from_files("openai/chat_tool_call_single.yaml") as server:
    ...     client = openai.OpenAI(base_url=server.openai_base_url, api_key="test")
    """

    thread_name = "evalshift-cassette"
    interactions: list[Interaction]
    received: list[ReceivedRequest] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._bind(_make_handler(self))

    @classmethod
    def from_files(cls, *paths: str | Path, root: str | Path | None = None) -> CassetteServer:
        """Load cassettes (``.yaml``) and raw SSE bodies (``.sse``, served at chat completions)."""
        interactions: list[Interaction] = []
        for p in paths:
            full = Path(root) / p if root is not None else Path(p)
            interactions += load_sse(full) if full.suffix == ".sse" else load_cassette(full)
        return cls(interactions)


    def pick(self, method: str, path: str) -> Interaction | None:
        """The interaction that answers ``method path`` (and mark it served)."""
        with self._lock:
            matching = [i for i in self.interactions if i.method == method and i.path == path]
            if not matching:
                bare = path.split("?", 1)[0]
                matching = [
                    i for i in self.interactions if i.method == method and i.path.split("?", 1)[0] == bare
                ]
            if not matching:
                return None
            chosen = next((i for i in matching if i.served == 0), matching[-1])
            chosen.served += 1
            return chosen


def _make_handler(server: CassetteServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
            return None

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            path = _path_of(self.path)
            with server._lock:
                server.received.append(
                    ReceivedRequest(self.command, path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
            interaction = server.pick(self.command, path)
            if interaction is None:
                payload = json.dumps({"error": {"message": f"no recording for {self.command} {path}"}}).encode()
                self._send(404, [("Content-Type", "application/json")], payload)
                return
            self._send(interaction.status, interaction.headers, interaction.body)

        def _send(self, status: int, headers: Iterable[tuple[str, str]], body: bytes) -> None:
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()

        do_POST = _handle
        do_GET = _handle

    return Handler
