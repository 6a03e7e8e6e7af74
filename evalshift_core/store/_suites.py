"""Suites on disk: ``<base>/suites/<name>.jsonl`` plus ``<base>/toolsets/<hex>.json`` sidecars."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import ValidationError

from evalshift_sdk.schema import canonical_json, toolset_ref

from .._exceptions import InputError, UnknownToolsetError
from .._io import atomic_write_bytes, atomic_write_jsonl, iter_models, validation_error
from .._limits import MAX_DEPTH, load_json
from .._models import SCHEMA_VERSION, Example, Tool
from ._paths import check_name, toolset_filename, under

DEFAULT_BASE = ".evalshift"


def suite_path(base: str | os.PathLike[str], name: str) -> Path:
    """``<base>/suites/<name>.jsonl``; a name that is not a safe file name raises InputError."""
    return under(Path(base) / "suites", check_name(name, what="suite name", field="suite_name") + ".jsonl")


def load_suite(
    path: str | os.PathLike[str], *, on_bad_line: Callable[[InputError], None] | None = None
) -> list[Example]:
    """Read a suite file; a bad line raises InputError naming file, line and field.

    With ``on_bad_line`` every bad line is handed over instead (the same InputError) and left
    out, so the valid examples can still run. A line is bad when it is not JSON, nests too
    deeply, does not validate, holds a value the replay cannot send (``stop: 1.5``, a history
    part that is a string), repeats an example id (the message names both lines), or carries a
    ``schema_version`` newer than this EvalShift reads.
    """
    return [example for _, example in iter_suite(path, on_bad_line=on_bad_line)]


def iter_suite(
    path: str | os.PathLike[str], *, on_bad_line: Callable[[InputError], None] | None = None
) -> Iterator[tuple[int, Example]]:
    """``(line number, example)`` for each valid line of a suite file (see :func:`load_suite`)."""
    file = str(path)
    first_line: dict[str, int] = {}
    for lineno, example in iter_models(path, Example, what="suite example", max_depth=MAX_DEPTH,
                                       on_bad_line=on_bad_line, schema_version=SCHEMA_VERSION):
        try:
            check_example(example)
            if example.id in first_line:
                raise InputError(f"example id {example.id!r} appears twice, on lines {first_line[example.id]} "
                                 f"and {lineno}", field="id")
        except InputError as exc:
            error = InputError(exc.message, file=file, line=lineno, field=exc.field)
            if on_bad_line is None:
                raise error from exc
            on_bad_line(error)
            continue
        first_line[example.id] = lineno
        yield lineno, example


def check_example(example: Example) -> None:
    """What the model cannot see on one example and the replay relies on: every fixture round
    answers as many calls as that round recorded (InputError naming the field otherwise)."""
    for k, results in enumerate(example.tool_result_fixtures or (), start=1):
        calls = example.expected_round(k) or []
        if calls and len(calls) != len(results):
            raise InputError(f"round {k} records {len(calls)} call(s) but {len(results)} tool result(s)",
                             field=f"tool_result_fixtures[{k - 1}]")


def save_suite(path: str | os.PathLike[str], examples: list[Example]) -> None:
    atomic_write_jsonl(path, (e.model_dump(mode="json", exclude_none=True) for e in examples))


def toolset_path(base: str | os.PathLike[str], ref: str) -> Path:
    """``<base>/toolsets/<hex>.json``; anything but ``sha256:`` + 64 hex raises InputError."""
    return under(Path(base) / "toolsets", toolset_filename(ref))


def read_sidecar(path: str | os.PathLike[str], ref: str) -> list[dict] | None:
    """A sidecar's tools when the file exists and its content hashes to ``ref``; else None."""
    try:
        tools = load_json(Path(path).read_bytes(), file=str(path), what="toolset", error=InputError)
    except (OSError, InputError):
        return None
    if not isinstance(tools, list) or toolset_ref(tools) != ref:
        return None
    return tools


def write_toolset(base: str | os.PathLike[str], ref: str, tools: list[dict]) -> None:
    """Write a sidecar in the canonical form its ref is the hash of (atomic)."""
    atomic_write_bytes(toolset_path(base, ref), canonical_json(tools))


def resolve_tools(example: Example, base: str | os.PathLike[str]) -> list[Tool]:
    """The toolset an example offers: its inline ``tools`` or its ``toolset_ref`` sidecar."""
    if example.tools is not None:
        return list(example.tools)
    if example.toolset_ref is None:
        return []
    path = toolset_path(base, example.toolset_ref)
    if not path.exists():
        raise UnknownToolsetError(
            f"example {example.id!r}: toolset_ref {example.toolset_ref} has no sidecar at {path}",
            field="toolset_ref",
        )
    raw = load_json(path.read_bytes(), file=str(path), what="toolset", error=InputError)
    if not isinstance(raw, list):
        raise InputError("a toolset sidecar holds a list of tools", file=str(path), line=1)
    tools = []
    for i, t in enumerate(raw):
        try:
            tools.append(Tool.model_validate(t))
        except ValidationError as exc:
            raise validation_error(exc, file=str(path), line=1, prefix=i) from exc
    return tools
