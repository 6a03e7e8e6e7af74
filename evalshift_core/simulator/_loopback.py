"""The loopback HTTP server both the simulator and the cassette server run on."""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class QuietThreadingServer(ThreadingHTTPServer):
    """A threading server with a deep backlog that ignores clients hanging up mid-reply."""

    # Many concurrent clients open connections at once; the default backlog of 5 drops some.
    request_queue_size = 256
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hung up mid-reply (a killed run, an abandoned stream) is not a server fault.
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


class LoopbackServer:
    """Start/stop, context manager and base URLs for a server bound to ``127.0.0.1``.

    Subclasses call :meth:`_bind` from their constructor.
    """

    thread_name = "evalshift-loopback"
    _server: QuietThreadingServer
    _thread: threading.Thread | None

    def _bind(self, handler: type[BaseHTTPRequestHandler], host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = QuietThreadingServer((host, port), handler)
        self._thread = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        return f"http://{host}:{port}"

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    def start(self) -> Any:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, args=(0.05,), name=self.thread_name, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
