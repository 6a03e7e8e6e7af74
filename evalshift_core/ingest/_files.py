"""Capture files, read incrementally: rotation order, whole lines only, gzip or plain.

A last line without its newline is a writer still appending; it is read on the next pass.
"""

from __future__ import annotations

import gzip
import os
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .._io import open_maybe_gzip
from .._limits import MAX_LINE_BYTES
from ._otlp import Span, spans_of_request

Warn = Callable[[str], None]

_CAPTURE_SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")


@dataclass
class FilePosition:
    """How far a capture file has been read: whole lines only."""

    offset: int = 0
    """Bytes consumed (uncompressed bytes for a gzip file)."""
    line: int = 0
    """Lines consumed."""
    inode: int | None = None
    """The file's inode when it was read, to notice a file replaced under the same name."""
    examples: int = 0
    """Examples promoted from turns whose root span this file held (sync bookkeeping)."""
    suites: list[str] = field(default_factory=list)
    """Suites those examples went to."""

    def to_json(self) -> dict[str, Any]:
        return {"offset": self.offset, "line": self.line, "inode": self.inode,
                "examples": self.examples, "suites": sorted(self.suites)}


_LUMBERJACK = re.compile(r"^(.*)-(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)(\.jsonl?(?:\.gz)?)$")
_SEQUENCE = re.compile(r"^(.*?)(?:\.(\d+))?(\.jsonl?(?:\.gz)?)$")


def _rotation_key(path: Path) -> tuple[str, str, int, str]:
    """Order rotated files oldest first, so a turn's children come before its root.

    Our SDK's ``spans-<stamp>-<pid>.jsonl`` then ``.1.jsonl``, ``.2.jsonl``; the Collector's
    file exporter (lumberjack) keeps ``traces.json`` current and renames old ones to
    ``traces-<timestamp>.json`` backups, which come before it.
    """
    m = _LUMBERJACK.match(path.name)
    if m:
        return (m.group(1), m.group(3), 0, m.group(2))
    m = _SEQUENCE.match(path.name)
    if not m:
        return (path.name, "", 0, "")
    if m.group(2) is not None:
        return (m.group(1), m.group(3), 0, f"{int(m.group(2)):012d}")
    return (m.group(1), m.group(3), 0, "")  # a base name: first of our SDK's sequence


def capture_files(capture_dir: str | os.PathLike[str]) -> list[Path]:
    """Capture files under a directory (or the file itself), oldest rotation first."""
    root = Path(capture_dir)
    if root.is_file():
        return [root]
    if not root.is_dir():
        return []
    # Dotfiles are temp files mid-write; sync-state.json is sync's own bookkeeping.
    files = [p for p in root.iterdir() if p.is_file() and p.name.endswith(_CAPTURE_SUFFIXES)
             and not p.name.startswith(".") and p.name != "sync-state.json"]
    keys = {p: _rotation_key(p) for p in files}
    with_backups = {(k[0], k[1]) for p, k in keys.items() if _LUMBERJACK.match(p.name)}

    def order(p: Path) -> tuple[str, str, int, str]:
        k = keys[p]
        if k[3] == "" and (k[0], k[1]) in with_backups:
            return (k[0], k[1], 1, "")  # the Collector's current file: after its backups
        return k

    return sorted(files, key=order)


def iter_lines(
    path: Path, position: FilePosition, warn: Warn
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(line_number, raw_line)`` of whole lines after ``position``, advancing it.

    A last line without its newline is a writer still appending: it is left for next time.
    A truncated gzip stream (a file still being compressed) ends the read the same way.
    """
    with open_maybe_gzip(path) as fh:
        try:
            if position.offset:
                fh.seek(position.offset)
            for raw in fh:
                if not raw.endswith(b"\n"):
                    break
                position.line += 1
                position.offset += len(raw)
                yield position.line, raw
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            if position.offset == 0:
                warn(f"{path}: not a readable gzip file ({exc}); skipped")


def read_spans(
    path: Path, position: FilePosition, warn: Warn, on_bad_span: Callable[[str, str | None], None] | None = None
) -> Iterator[list[Span]]:
    """Spans of each whole new line of ``path``; a corrupt line is reported and skipped, and so
    is a damaged span (``on_bad_span(message, trace_id)`` hears of it; else it is a warning)."""
    for lineno, raw in iter_lines(path, position, warn):
        if not raw.strip():
            continue
        where = f"{path}:{lineno}"

        def bad_span(field: str, problem: str, trace_id: str | None, where: str = where) -> None:
            message = f"{where}: {field}: {problem}; span skipped"
            if on_bad_span is None:
                warn(message)
            else:
                on_bad_span(message, trace_id)

        try:
            if len(raw) > MAX_LINE_BYTES:
                raise ValueError(f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MiB")
            request = orjson.loads(raw)
            spans = spans_of_request(request, where, bad_span)
        except (orjson.JSONDecodeError, ValueError, TypeError, AttributeError, KeyError) as exc:
            warn(f"{where}: not a valid OTLP/JSON line ({exc}); skipped")
            continue
        if spans:
            yield spans

