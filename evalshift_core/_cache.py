"""The response cache: one file per canonical request under ``<base>/cache/``.

A repeated run of the same model on the same example (same messages, tools, settings) is free.
"""

from __future__ import annotations

import os
from pathlib import Path

import orjson

from .clients import ModelResponse, PreparedRequest

CACHE_VERSION = 1


class ResponseCache:
    """``<base>/cache/<2 hex>/<sha256>.json`` keyed by :meth:`PreparedRequest.cache_key`."""

    def __init__(self, base: str | os.PathLike[str]) -> None:
        self.root = Path(base) / "cache"
        self._dirs: set[Path] = set()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def __contains__(self, request: PreparedRequest) -> bool:
        return self._path(request.cache_key()).exists()

    def get(self, request: PreparedRequest) -> ModelResponse | None:
        path = self._path(request.cache_key())
        try:
            data = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            return None  # absent, or torn by a crash: treat as a miss and overwrite later
        if not isinstance(data, dict) or data.get("cache_version") != CACHE_VERSION:
            return None
        try:
            response = ModelResponse.from_json(data["response"])
        except (KeyError, TypeError, ValueError, AttributeError):
            return None  # an entry edited or damaged since: a miss, overwritten by the next put
        response.dropped_params = list(request.dropped_params)
        return response

    def put(self, request: PreparedRequest, response: ModelResponse) -> None:
        """Store one response. A plain write, not temp-and-rename: a file torn by a crash is not
        valid JSON, which :meth:`get` reads as a miss, and the hot path saves two syscalls."""
        path = self._path(request.cache_key())
        if path.parent not in self._dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._dirs.add(path.parent)
        record = {"cache_version": CACHE_VERSION, "provider": request.provider, "model": request.model,
                  "endpoint": request.endpoint, "response": response.to_json()}
        path.write_bytes(orjson.dumps(record))
