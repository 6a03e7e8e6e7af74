"""Atomic writes, line-numbered JSON lines reading, and the one check of a record's schema version."""

from __future__ import annotations

import contextlib
import gzip
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from ._exceptions import InputError
from ._limits import MAX_DEPTH, format_path, load_json

DERIVED_MAX_DEPTH = 2 * MAX_DEPTH
"""Depth allowed in the files EvalShift writes from inputs (raw rows and scores wrap a suite's
values a few levels deeper); still far inside what orjson writes (254) and Python recurses."""


def _alive(pid: int) -> bool:
    """Whether a process with this id exists (where that cannot be asked safely: assume so)."""
    if os.name != "posix":
        return True  # os.kill(pid, 0) would send CTRL_C_EVENT on Windows
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: alive, owned by someone else
        return True
    return True


def remove_stale_temps(target: Path) -> int:
    """Remove the temp files of writes to ``target`` (``.<name>.<pid>.….tmp``) that a process
    which has since died left behind; returns how many. Temps of live processes are kept."""
    prefix = f".{target.name}."
    removed = 0
    try:
        entries = list(os.scandir(target.parent))
    except OSError:
        return 0
    for entry in entries:
        name = entry.name
        if not (name.startswith(prefix) and name.endswith(".tmp")):
            continue
        pid_text = name[len(prefix):-len(".tmp")].split(".", 1)[0]
        if not pid_text.isdigit() or len(pid_text) > 10:
            continue
        pid = int(pid_text)
        if pid == os.getpid() or _alive(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(entry.path)
            removed += 1
    return removed


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file and rename, so readers never see half a file.

    The temp file's name carries the writer's pid, so the next write to ``path`` removes the
    temp files of writers killed mid-write.
    """
    with atomic_writer(path) as fh:
        fh.write(data)


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike[str]) -> Iterator[Any]:
    """A binary file to write ``path`` through piece by piece, renamed into place when the block
    ends without an exception (removed when it raises), like :func:`atomic_write_bytes`."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temps(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class LineSpool:
    """Bytes spooled to a temporary file of their own, written at explicit offsets, so a forked
    process can write a spool its parent then reads (:meth:`state` / :meth:`adopt` carry over
    how far it got)."""

    def __init__(self, flush_bytes: int = 1 << 20) -> None:
        self._file = tempfile.TemporaryFile()  # noqa: SIM115 - closed by close() or the with block
        self._pending: list[bytes] = []
        self._pending_size = 0
        self._offset = 0
        self._flush_bytes = flush_bytes

    def __enter__(self) -> LineSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._file.close()

    @property
    def size(self) -> int:
        """Bytes written so far (the offset the next write lands at)."""
        return self._offset + self._pending_size

    def write(self, data: bytes) -> None:
        self._pending.append(data)
        self._pending_size += len(data)
        if self._pending_size >= self._flush_bytes:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            os.pwrite(self._file.fileno(), data, self._offset)
            self._offset += len(data)
            self._pending, self._pending_size = [], 0

    def state(self) -> int:
        """How far the spool was written (everything written so far is on disk)."""
        self._flush()
        return self._offset

    def adopt(self, offset: int) -> None:
        """Take over the :meth:`state` of this spool as another process wrote it."""
        self._pending, self._pending_size, self._offset = [], 0, offset

    def copy_to(self, fh: Any, start: int = 0, end: int | None = None, chunk: int = 1 << 22) -> None:
        """Write the spooled bytes ``[start, end)`` (all of them by default) into ``fh``."""
        self._flush()
        fd, end = self._file.fileno(), self._offset if end is None else end
        while start < end:
            data = os.pread(fd, min(chunk, end - start), start)
            fh.write(data)
            start += len(data)


def atomic_write_jsonl(path: str | os.PathLike[str], rows: Iterable[Any]) -> None:
    with atomic_writer(path) as fh:
        write = fh.write
        for row in rows:
            write(orjson.dumps(row) + b"\n")


def atomic_write_json(path: str | os.PathLike[str], value: Any) -> None:
    atomic_write_bytes(path, orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n")


def open_maybe_gzip(path: str | os.PathLike[str]) -> Any:
    p = Path(path)
    if p.suffix == ".gz":
        return gzip.open(p, "rb")
    return open(p, "rb")


def iter_jsonl(
    path: str | os.PathLike[str],
    *,
    what: str = "JSON line",
    max_depth: int = DERIVED_MAX_DEPTH,
    on_bad_line: Callable[[InputError], None] | None = None,
) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)``, each line parsed under the depth and size limits.

    A line that is not JSON, or past a limit, raises InputError naming the file and line; with
    ``on_bad_line`` it is handed that error instead and skipped.
    """
    with open_maybe_gzip(path) as fh:
        for lineno, raw in enumerate(fh, start=1):
            if not raw.strip():
                continue
            try:
                value = load_json(raw, file=str(path), line=lineno, what=what, error=InputError,
                                  max_depth=max_depth)
            except InputError as exc:
                if on_bad_line is None:
                    raise
                on_bad_line(exc)
                continue
            yield lineno, value


def validation_error(exc: ValidationError, *, file: str | None = None, line: int | None = None,
                     prefix: str | int = "") -> InputError:
    """A pydantic error as an InputError naming the file, line and the field it was about."""
    from ._shapes import ShapeError

    err = exc.errors()[0]
    path: list[Any] = list(err.get("loc", ()))
    message = str(err.get("msg", "invalid value")).removeprefix("Value error, ")
    original = (err.get("ctx") or {}).get("error")
    if isinstance(original, ShapeError):
        path += original.path
        message = original.message
    if err.get("type") == "model_type" and not path:
        message = "each line must be a JSON object"
    field = format_path([prefix, *path] if prefix != "" else path) or None
    return InputError(message, file=file, line=line, field=field)


def check_schema_version(value: Any, newest: int, *, file: str | None = None, line: int | None = None,
                         field: str = "schema_version") -> None:
    """Refuse a record written by a newer EvalShift, by name: ``file:line: field: written by a
    newer EvalShift (schema 2; this one reads up to 1): upgrade evalshift``; a version that is not a
    positive integer is an InputError too. Older versions are read as they are."""
    if type(value) is not int or value < 1:
        raise InputError(f"must be a positive integer, not {str(value)[:40]!r}", file=file, line=line, field=field)
    if value > newest:
        raise InputError(f"written by a newer EvalShift (schema {value}; this one reads up to {newest}): "
                         "upgrade evalshift", file=file, line=line, field=field)


M = TypeVar("M", bound=BaseModel)


def iter_models(
    path: str | os.PathLike[str],
    model: type[M],
    *,
    what: str,
    max_depth: int = DERIVED_MAX_DEPTH,
    on_bad_line: Callable[[InputError], None] | None = None,
    schema_version: int | None = None,
) -> Iterator[tuple[int, M]]:
    """Yield ``(line_number, model)`` for each line of a JSON lines file; a line that does not
    validate raises (or, with ``on_bad_line``, hands over and skips) an InputError naming the
    file, the line and the field.

    With ``schema_version`` (the newest this EvalShift writes) a line may carry its own
    ``schema_version`` key: a newer one is refused like any bad line (:func:`check_schema_version`),
    and the key is not part of the record. Lines without one are of the current version.
    """
    for lineno, value in iter_jsonl(path, what=what, max_depth=max_depth, on_bad_line=on_bad_line):
        try:
            if schema_version is not None and type(value) is dict and "schema_version" in value:
                check_schema_version(value.pop("schema_version"), schema_version, file=str(path), line=lineno)
            record = model.model_validate(value)
        except ValidationError as exc:
            error = validation_error(exc, file=str(path), line=lineno)
            if on_bad_line is None:
                raise error from exc
            on_bad_line(error)
            continue
        except InputError as exc:
            if on_bad_line is None:
                raise
            on_bad_line(exc)
            continue
        yield lineno, record


def read_json_object(path: str | os.PathLike[str], *, what: str = "JSON file") -> dict[str, Any]:
    """A whole JSON file holding one object (a run manifest, an analysis), read under the limits;
    anything else raises InputError naming the file."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=str(path)) from exc
    value = load_json(data, file=str(path), what=what, error=InputError, max_depth=DERIVED_MAX_DEPTH)
    if not isinstance(value, dict):
        raise InputError(f"a {what} holds one JSON object", file=str(path), line=1)
    return value
