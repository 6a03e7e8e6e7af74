"""The response cache: one file per canonical request and sample under ``<base>/cache/``.

A repeated run of the same model on the same example (same messages, tools, settings) is free.
Each sample a run draws is keyed on its own (the source's first replay, its repeats, the target),
so a repeat, or the same model on both sides, is a fresh sample and never another's copy. The
source's first replay keeps the plain request key. :func:`cache_info` and :func:`clear_cache`
(``evalshift cache info|clear``) show and empty the cache.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
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

    @staticmethod
    def key(request: PreparedRequest, sample: str = "") -> str:
        """The request's cache key, made distinct per ``sample`` (e.g. ``source:1``)."""
        key = request.cache_key()
        return hashlib.sha256(f"{key}|{sample}".encode()).hexdigest() if sample else key

    def has(self, request: PreparedRequest, sample: str = "") -> bool:
        return self._path(self.key(request, sample)).exists()

    def get(self, request: PreparedRequest, sample: str = "") -> ModelResponse | None:
        path = self._path(self.key(request, sample))
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

    def put(self, request: PreparedRequest, response: ModelResponse, sample: str = "") -> None:
        """Store one response. A plain write, not temp-and-rename: a file torn by a crash is not
        valid JSON, which :meth:`get` reads as a miss, and the hot path saves two syscalls."""
        path = self._path(self.key(request, sample))
        if path.parent not in self._dirs:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._dirs.add(path.parent)
        record = {"cache_version": CACHE_VERSION, "provider": request.provider, "model": request.model,
                  "endpoint": request.endpoint, "response": response.to_json()}
        path.write_bytes(orjson.dumps(record))


_ENTRY = re.compile(r"[0-9a-f]{64}\.json")
_SHARD = re.compile(r"[0-9a-f]{2}")


@dataclass(frozen=True)
class CacheInfo:
    """What the cache under a base folder holds (or held, for :func:`clear_cache`)."""

    path: Path
    responses: int
    bytes: int

    def as_dict(self) -> dict[str, object]:
        return {"path": str(self.path), "responses": self.responses, "bytes": self.bytes}


def _entries(root: Path) -> list[Path]:
    """Cache files only (``<2 hex>/<64 hex>.json``): anything else in the folder is not ours."""
    if not root.is_dir():
        return []
    return [f for shard in root.iterdir() if shard.is_dir() and not shard.is_symlink() and _SHARD.fullmatch(shard.name)
            for f in shard.iterdir() if f.is_file() and not f.is_symlink() and _ENTRY.fullmatch(f.name)
            and f.name.startswith(shard.name)]


def cache_info(base: str | os.PathLike[str]) -> CacheInfo:
    """How many responses the cache under ``base`` holds, and their size on disk."""
    root = Path(base) / "cache"
    files = _entries(root)
    return CacheInfo(path=root, responses=len(files), bytes=sum(f.stat().st_size for f in files))


def clear_cache(base: str | os.PathLike[str]) -> CacheInfo:
    """Delete every cached response under ``base``; returns what was removed.

    Only the cache's own files go, and the shard folders they leave empty: a file someone put in
    the folder stays.
    """
    root = Path(base) / "cache"
    files = _entries(root)
    removed = CacheInfo(path=root, responses=len(files), bytes=sum(f.stat().st_size for f in files))
    for f in files:
        f.unlink(missing_ok=True)
    for shard in {f.parent for f in files}:
        try:
            shard.rmdir()
        except OSError:
            pass  # not empty: something that is not ours
    return removed
