"""Suites on disk: ``<base>/suites/<name>.jsonl`` plus ``<base>/toolsets/<hex>.json`` sidecars."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
from pydantic import ValidationError

from evalshift_sdk._toolsets import canonical_json, ref_filename, toolset_ref

from ._exceptions import InputError, UnknownToolsetError
from ._io import atomic_write_bytes, atomic_write_jsonl, iter_jsonl
from ._models import Example, Tool

DEFAULT_BASE = ".evalshift"


def suite_path(base: str | os.PathLike[str], name: str) -> Path:
    return Path(base) / "suites" / f"{name}.jsonl"


def load_suite(path: str | os.PathLike[str]) -> list[Example]:
    """Read a suite file; a bad line raises InputError naming file, line and field."""
    examples = []
    for lineno, row in iter_jsonl(path, what="suite example"):
        try:
            examples.append(Example.model_validate(row))
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(p) for p in err["loc"]) or None
            raise InputError(err["msg"], file=str(path), line=lineno, field=field) from exc
    return examples


def save_suite(path: str | os.PathLike[str], examples: list[Example]) -> None:
    atomic_write_jsonl(path, (e.model_dump(mode="json", exclude_none=True) for e in examples))


def toolset_path(base: str | os.PathLike[str], ref: str) -> Path:
    return Path(base) / "toolsets" / ref_filename(ref)


def read_sidecar(path: str | os.PathLike[str], ref: str) -> list[dict] | None:
    """A sidecar's tools when the file exists and its content hashes to ``ref``; else None."""
    try:
        tools = orjson.loads(Path(path).read_bytes())
    except (OSError, orjson.JSONDecodeError):
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
    raw = orjson.loads(path.read_bytes())
    return [Tool.model_validate(t) for t in raw]
