"""Atomic writes and line-numbered JSON lines reading."""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from ._exceptions import InputError


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file and rename, so readers never see half a file."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_jsonl(path: str | os.PathLike[str], rows: Iterable[Any]) -> None:
    atomic_write_bytes(path, b"".join(orjson.dumps(r) + b"\n" for r in rows))


def atomic_write_json(path: str | os.PathLike[str], value: Any) -> None:
    atomic_write_bytes(path, orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")


def open_maybe_gzip(path: str | os.PathLike[str]) -> Any:
    p = Path(path)
    if p.suffix == ".gz":
        return gzip.open(p, "rb")
    return open(p, "rb")


def iter_jsonl(path: str | os.PathLike[str], *, what: str = "JSON line") -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)``; a line that is not JSON raises InputError naming it."""
    with open_maybe_gzip(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                yield lineno, orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise InputError(f"not a valid {what}: {exc}", file=str(path), line=lineno) from exc
