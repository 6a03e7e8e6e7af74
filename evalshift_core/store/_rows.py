"""A run's rows example by example: each example with its source row, target row and the
source's extra replays, in suite order, for the steps that read a whole run (scoring, the
report) without holding it.

:class:`MemoryRows` pairs lists already in memory (``compare()`` has them from the replay).
:class:`SavedRows` reads a run folder whose ``examples.jsonl`` and ``raw.jsonl`` are still what
EvalShift wrote (:func:`written_intact`): it keeps the Call rows as the bytes of their lines,
builds an example's models when its turn comes and drops them after, so memory follows the
lines rather than the objects (~5x smaller). Those files were dumped from validated models, so
their rows are validated straight from the JSON bytes (pydantic-core, no separate parse or
limits walk); any other run folder is read by :func:`~._runs.load_run`, row by row under the
limits, with its messages, and paired in memory.
"""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import orjson
from pydantic import ValidationError

from .._io import atomic_write_json, validation_error
from .._models import AS_WRITTEN, Call, Example
from ._runs import (
    EXAMPLES_FILE,
    RAW_FILE,
    Manifest,
    existing_run_dir,
    iter_run_calls,
    load_manifest,
    load_run,
)

WRITTEN_FILE = "written.json"
"""The sha256 of a run's examples.jsonl and raw.jsonl when its replay last finished writing them,
and of its scores.jsonl when evaluate last wrote it."""

SCORES_FILE = "scores.jsonl"

Row = tuple[Example, Call | None, Call | None, list[Call]]
"""An example with its source row, its target row and its extra source replays (``source_repeats``)."""


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return "sha256:" + hashlib.file_digest(fh, "sha256").hexdigest()


def record_written(run_dir: str | os.PathLike[str], names: Sequence[str] = (EXAMPLES_FILE, RAW_FILE)) -> None:
    """Note the digests of the run's files ``names`` as this EvalShift just wrote them."""
    out = Path(run_dir)
    noted = _noted(out) if list(names) != [EXAMPLES_FILE, RAW_FILE] else {}
    atomic_write_json(out / WRITTEN_FILE, {**noted, **{name: _sha256(out / name) for name in names}})


def _noted(out: Path) -> dict[str, Any]:
    try:
        noted = orjson.loads((out / WRITTEN_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    return noted if type(noted) is dict else {}


def written_intact(run_dir: str | os.PathLike[str], names: Sequence[str] = (EXAMPLES_FILE, RAW_FILE)) -> bool:
    """Whether the run's files ``names`` are byte for byte what EvalShift last wrote (a run from
    before ``written.json``, a hand edit or a copy of the lines from elsewhere: False)."""
    out = Path(run_dir)
    noted = _noted(out)
    try:
        return all(type(noted.get(name)) is str and _sha256(out / name) == noted[name] for name in names)
    except OSError:
        return False


def open_lines(path: Path) -> Iterator[bytes]:
    """The non-blank lines of a file EvalShift wrote."""
    with open(path, "rb") as fh:
        for line in fh:
            if line.strip():
                yield line


def pair_rows(examples: Iterable[Example], calls: Iterable[Call]) -> Iterator[Row]:
    """Each example with its rows, in any row order; the last row of an (example, role, repeat)
    wins, and a missing row gives None."""
    sources: dict[str, dict[int, Call]] = {}
    targets: dict[str, Call] = {}
    for c in calls:
        role = c.role
        if role == "source":
            sources.setdefault(c.example_id, {})[c.repeat or 0] = c
        elif role == "target":
            targets[c.example_id] = c
    for example in examples:
        example_id = example.id
        repeats = sources.get(example_id, {})
        extra = [repeats[k] for k in sorted(repeats) if k > 0]
        yield example, repeats.get(0), targets.get(example_id), extra


class MemoryRows:
    """Rows of examples and calls already in memory; a row's handle is the row itself."""

    def __init__(self, examples: Sequence[Example], calls: Sequence[Call]) -> None:
        self.examples = examples
        self.calls = calls

    def __len__(self) -> int:
        return len(self.examples)

    def __iter__(self) -> Iterator[tuple[Row, Any]]:
        return self.part(range(len(self.examples)))

    def part(self, indexes: range) -> Iterator[tuple[Row, Any]]:
        """The rows of the examples at ``indexes`` (a contiguous range), each with its handle."""
        for row in pair_rows(self.examples[indexes.start:indexes.stop], self.calls):
            yield row, row

    def again(self, handle: Any) -> Row:
        return handle

    def dropped_params(self) -> dict[str, Counter[str]]:
        """Per model, the request settings it could not honour and on how many calls."""
        return dropped_params(self.calls)

    def failed_rows(self, role: str) -> list[Call] | None:
        """The rows of ``role`` when every one of them failed, else None."""
        rows = [c for c in self.calls if c.role == role]
        return rows if rows and all(c.error for c in rows) else None


def dropped_params(calls: Iterable[Call]) -> dict[str, Counter[str]]:
    """Per model, the request settings it could not honour and on how many calls."""
    dropped: dict[str, Counter[str]] = {}
    for c in calls:
        if c.dropped_params:
            dropped.setdefault(c.model, Counter()).update(c.dropped_params)
    return dropped


_SPAN = 1 << 32
"""A line's place in its file packed as one int: ``offset * _SPAN + length`` (lines are at most
64 MiB, MAX_LINE_BYTES), so the index of a 200k-row run holds ints, not the lines."""


class SavedRows:
    """The rows of a run folder :func:`written_intact` vouches for, read one example at a time.

    Reading it indexes raw.jsonl (where each line is, under its example, role and repeat);
    iterating reads examples.jsonl line by line, and each example's Call rows from where the index
    says. A row's handle is where its example's line is, and its line number.
    """

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(run_dir)
        self._at: dict[tuple[str, str, int], int] = {}
        self._repeats: dict[str, set[int]] = {}
        self._dropped: dict[str, Counter[str]] = {}
        self._roles: dict[str, list[int]] = {}  # role -> [rows, failed rows]
        at, repeats, roles = self._at, self._repeats, self._roles
        loads = orjson.loads
        offset = 0
        with open(self.run_dir / RAW_FILE, "rb") as fh:
            for line in fh:
                start = offset
                offset += len(line)
                if line.isspace():
                    continue
                row = loads(line)
                example_id, role = row["example_id"], row["role"]
                repeat = row.get("repeat") or 0
                at[(example_id, role, repeat)] = start * _SPAN + len(line)
                if repeat:
                    repeats.setdefault(example_id, set()).add(repeat)
                counts = roles.get(role)
                if counts is None:
                    counts = roles[role] = [0, 0]
                counts[0] += 1
                if "error" in row and row["error"]:
                    counts[1] += 1
                if "dropped_params" in row and row["dropped_params"]:
                    self._dropped.setdefault(row["model"], Counter()).update(row["dropped_params"])
        with open(self.run_dir / EXAMPLES_FILE, "rb") as fh:
            self._count = sum(1 for line in fh if line.strip())
        # read at explicit offsets (pread), so a forked process may share the open files
        self._raw = os.open(self.run_dir / RAW_FILE, os.O_RDONLY)
        self._examples = os.open(self.run_dir / EXAMPLES_FILE, os.O_RDONLY)

    def __del__(self) -> None:
        for fd in (getattr(self, "_raw", None), getattr(self, "_examples", None)):
            if fd is not None:
                os.close(fd)

    def __len__(self) -> int:
        return self._count

    def _call(self, key: tuple[str, str, int]) -> Call | None:
        place = self._at.get(key)
        if place is None:
            return None
        try:
            return Call.model_validate_json(os.pread(self._raw, place % _SPAN, place // _SPAN))
        except ValidationError as exc:  # written.json matched, yet the line does not read back
            raise validation_error(exc, file=str(self.run_dir / RAW_FILE)) from exc

    def again(self, handle: tuple[int, int]) -> Row:
        place, lineno = handle
        return self._row(os.pread(self._examples, place % _SPAN, place // _SPAN), lineno)

    def _row(self, line: bytes, lineno: int) -> Row:
        """An example's line read into its model, with its Call rows."""
        try:
            example = Example.model_validate_json(line, context=AS_WRITTEN)
        except ValidationError as exc:  # written.json matched, yet the line does not read back
            raise validation_error(exc, file=str(self.run_dir / EXAMPLES_FILE), line=lineno) from exc
        example_id = example.id
        extra = [self._call((example_id, "source", k)) for k in sorted(self._repeats.get(example_id, ()))]
        return (example, self._call((example_id, "source", 0)), self._call((example_id, "target", 0)),
                [c for c in extra if c is not None])

    def __iter__(self) -> Iterator[tuple[Row, tuple[int, int]]]:
        return self.part(range(self._count))

    def part(self, indexes: range) -> Iterator[tuple[Row, tuple[int, int]]]:
        """The rows of the examples at ``indexes`` (a contiguous range), each with its handle;
        the lines before it are skipped unread."""
        index, offset = -1, 0
        with open(self.run_dir / EXAMPLES_FILE, "rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                start, offset = offset, offset + len(line)
                if not line.strip():
                    continue
                index += 1
                if index < indexes.start:
                    continue
                if index >= indexes.stop:
                    return
                yield self._row(line, lineno), (start * _SPAN + len(line), lineno)

    def dropped_params(self) -> dict[str, Counter[str]]:
        return self._dropped

    def failed_rows(self, role: str) -> list[Call] | None:
        rows, failed = self._roles.get(role, (0, 0))
        if not rows or failed < rows:
            return None
        return [c for _, c in iter_run_calls(self.run_dir) if c.role == role]


class RunCalls(Sequence[Call]):
    """A run's Call rows, read from its raw.jsonl when first used (``Comparison.calls`` of a
    saved run, which the evaluation itself reads example by example)."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self._run_dir = Path(run_dir)
        self._rows: list[Call] | None = None

    def _all(self) -> list[Call]:
        if self._rows is None:
            self._rows = [c for _, c in iter_run_calls(self._run_dir)]
        return self._rows

    def __len__(self) -> int:
        return len(self._all())

    @overload
    def __getitem__(self, index: int) -> Call: ...

    @overload
    def __getitem__(self, index: slice) -> list[Call]: ...

    def __getitem__(self, index: int | slice) -> Call | list[Call]:
        return self._all()[index]

    def __iter__(self) -> Iterator[Call]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        return list(self._all()) == (list(other) if isinstance(other, Sequence) else other)

    __hash__ = None  # type: ignore[assignment]


def run_rows(base: str | os.PathLike[str], run_id: str) -> tuple[Manifest, Path, SavedRows | MemoryRows]:
    """A run's manifest, folder and rows: read example by example when :func:`written_intact`
    vouches for its files, else loaded whole by :func:`~._runs.load_run`, every row validated."""
    out = existing_run_dir(base, run_id)
    if written_intact(out):
        try:
            return load_manifest(out), out, SavedRows(out)
        except (KeyError, TypeError, ValueError):  # a written.json that lies: read it row by row
            pass
    manifest, examples, calls = load_run(base, run_id)
    return manifest, out, MemoryRows(examples, calls)
