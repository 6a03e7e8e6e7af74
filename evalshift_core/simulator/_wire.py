"""Helpers every simulated wire format shares: token estimates, ids, SSE framing, text pieces."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from evalshift_sdk.schema import json_or_text


def tokens(text: str) -> int:
    """A rough token count (4 characters a token) so usage is never zero."""
    return max(1, len(text) // 4)


def body_tokens(value: Any) -> int:
    return tokens(orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode())


def call_id(prefix: str, request_no: int, index: int) -> str:
    """Deterministic per request and position (stable across processes, unlike ``hash``)."""
    return f"{prefix}{request_no:08d}x{index}"


def pieces(text: str, size: int = 12) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


def sse(data: Any, event: str | None = None, sep: bytes = b"\n\n") -> bytes:
    head = b"event: " + event.encode() + b"\n" if event else b""
    return head + b"data: " + orjson.dumps(data) + sep


def parse_arguments(raw: Any) -> Any:
    """Tool-call arguments from a request body; text that is not JSON stays text."""
    return json_or_text(raw)
