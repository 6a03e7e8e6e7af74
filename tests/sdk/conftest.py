"""SDK test fixtures: recorded provider responses on a loopback server, and the captured spans."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sdk_support import FIXTURES, CassetteServer, read_spans


@pytest.fixture
def spans(capture_dir: Path) -> Callable[..., list[dict[str, Any]]]:
    """Flush, then the captured spans; ``spans("chat")`` keeps one operation."""
    import evalshift_sdk

    def get(operation: str | None = None) -> list[dict[str, Any]]:
        evalshift_sdk.flush()
        found = read_spans(capture_dir)
        if operation is not None:
            found = [s for s in found if s["attrs"].get("gen_ai.operation.name") == operation]
        return found

    return get


@pytest.fixture
def replay() -> Iterator[Callable[..., CassetteServer]]:
    """``replay("openai/x.yaml", ...)`` starts a loopback server replaying those recordings."""
    servers: list[CassetteServer] = []

    def start(*names: str) -> CassetteServer:
        server = CassetteServer.from_files(*names, root=FIXTURES).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
