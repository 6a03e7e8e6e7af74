"""``evalshift traces import``: attach full agent timelines to a run, for ``agent_trace``.

Each input line is one trace for a ``(prompt_id, example_id, role)`` in the capture event
schema; lines are validated whole before anything is written to ``<run>/traces.jsonl``. A
``baseline`` file is a second run of the source agent: the A/A baseline ``agent_trace`` tests the
target's drift against.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._exceptions import InputError
from .._io import atomic_write_jsonl, iter_jsonl
from .._limits import MAX_DEPTH
from .._models import ToolCall, ToolTrace

TRACES_FILE = "traces.jsonl"
EVENT_TYPES = ("model_call", "tool_call", "tool_result")
ROLES = ("source", "target", "baseline")

TraceKey = tuple[str | None, str, str]


def _is_str_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


class _LineChecker:
    """Validates one line; every error names the file, the line and the field."""

    def __init__(self, file: str, line: int) -> None:
        self.file = file
        self.line = line

    def fail(self, field: str, message: str) -> InputError:
        return InputError(message, file=self.file, line=self.line, field=field)

    def optional_str(self, obj: Mapping[str, Any], key: str, where: str) -> None:
        if not _is_str_or_none(obj.get(key)):
            raise self.fail(f"{where}{key}", f"must be a string or null, not {type(obj.get(key)).__name__}")

    def required_str(self, obj: Mapping[str, Any], key: str, where: str) -> None:
        value = obj.get(key)
        if not isinstance(value, str) or not value:
            raise self.fail(f"{where}{key}", "is required (a non-empty string)")

    def optional_object(self, obj: Mapping[str, Any], key: str, where: str) -> None:
        value = obj.get(key)
        if value is not None and not isinstance(value, dict):
            raise self.fail(f"{where}{key}", f"must be an object or null, not {type(value).__name__}")

    def arguments(self, obj: Mapping[str, Any], where: str) -> None:
        value = obj.get("arguments")
        if value is not None and not isinstance(value, (dict, str)):
            raise self.fail(f"{where}arguments", "must be an object (or the raw JSON text the model emitted)")

    def event(self, event: Any, i: int) -> None:
        where = f"events[{i}]."
        if not isinstance(event, dict):
            raise self.fail(f"events[{i}]", "each event must be an object")
        kind = event.get("type")
        if kind not in EVENT_TYPES:
            raise self.fail(f"{where}type", f"must be one of {', '.join(EVENT_TYPES)}, not {kind!r}")
        if kind == "model_call":
            ri = event.get("round_index")
            if ri is not None and (type(ri) is not int or ri < 1):
                raise self.fail(f"{where}round_index", "must be an integer >= 1")
            for key in ("model", "toolset_ref", "text", "refusal"):
                self.optional_str(event, key, where)
            for key in ("generation_config", "usage"):
                self.optional_object(event, key, where)
            requested = event.get("requested_tool_calls")
            if requested is not None:
                if not isinstance(requested, list):
                    raise self.fail(f"{where}requested_tool_calls", "must be a list or null")
                for j, call in enumerate(requested):
                    cw = f"{where}requested_tool_calls[{j}]."
                    if not isinstance(call, dict):
                        raise self.fail(cw[:-1], "each requested call must be an object")
                    self.required_str(call, "tool_name", cw)
                    self.optional_str(call, "call_id", cw)
                    self.arguments(call, cw)
        elif kind == "tool_call":
            self.required_str(event, "tool_name", where)
            self.optional_str(event, "call_id", where)
            self.arguments(event, where)
        else:
            if not event.get("tool_name") and not event.get("call_id"):
                raise self.fail(f"{where}tool_name", "a tool_result needs its tool_name or call_id")
            self.optional_str(event, "tool_name", where)
            self.optional_str(event, "call_id", where)
            self.optional_str(event, "error", where)

    def trace(self, value: Any, role: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail("(line)", "each line must be a JSON object")
        self.required_str(value, "example_id", "")
        self.optional_str(value, "prompt_id", "")
        # A baseline is a second run of the source: its lines may say either.
        allowed = (role, "source") if role == "baseline" else (role,)
        if value.get("role") is not None and value.get("role") not in allowed:
            raise self.fail("role", f"this file was given as --{role}, but the line says role {value.get('role')!r}")
        events = value.get("events")
        if not isinstance(events, list):
            raise self.fail("events", "is required (a list of capture events)")
        for i, event in enumerate(events):
            self.event(event, i)
        return {"prompt_id": value.get("prompt_id"), "example_id": value["example_id"], "role": role, "events": events}


def read_traces(path: str | os.PathLike[str], role: str, known_examples: set[str] | None = None) -> list[dict[str, Any]]:
    """Validate a traces file; raises InputError naming file, line and field on the first problem."""
    if role not in ROLES:
        raise ValueError(f"role must be source, target or baseline, not {role!r}")
    p = Path(path)
    if not p.is_file():
        raise InputError("file not found", file=str(p))
    out: list[dict[str, Any]] = []
    seen: dict[tuple[str | None, str], int] = {}
    for lineno, value in iter_jsonl(p, what="trace line", max_depth=MAX_DEPTH):
        checker = _LineChecker(str(p), lineno)
        trace = checker.trace(value, role)
        key = (trace["prompt_id"], trace["example_id"])
        if key in seen:
            raise checker.fail("example_id", f"a second trace for example {key[1]!r} (first on line {seen[key]})")
        if known_examples is not None and trace["example_id"] not in known_examples:
            raise checker.fail("example_id", f"the run has no example {trace['example_id']!r}")
        seen[key] = lineno
        out.append(trace)
    return out


def import_traces(
    base: str | os.PathLike[str],
    run_id: str,
    source_file: str | os.PathLike[str],
    target_file: str | os.PathLike[str],
    baseline_file: str | os.PathLike[str] | None = None,
) -> Path:
    """Validate the files, then merge their traces into ``<run>/traces.jsonl``; returns its path.

    ``baseline_file`` holds a second run of the source agent on the same examples: the A/A
    baseline that calibrates ``agent_trace`` on imported timelines. A trace already imported for
    the same ``(prompt_id, example_id, role)`` is replaced; every other one is kept. Nothing is
    written unless every file is valid.
    """
    from ..store._runs import load_run, run_dir_for

    _manifest, examples, _calls = load_run(base, run_id)
    known = {e.id for e in examples}
    incoming = read_traces(source_file, "source", known) + read_traces(target_file, "target", known)
    if baseline_file is not None:
        incoming += read_traces(baseline_file, "baseline", known)
    out = run_dir_for(base, run_id) / TRACES_FILE
    merged: dict[TraceKey, dict[str, Any]] = {}
    if out.exists():
        for row in _stored_traces(out):
            merged[(row.get("prompt_id"), row["example_id"], row["role"])] = row
    for row in incoming:
        merged[(row["prompt_id"], row["example_id"], row["role"])] = row
    atomic_write_jsonl(out, merged.values())
    return out


def load_traces(run_dir: str | os.PathLike[str]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Imported timelines of a run by ``(example_id, role)``; empty when none were imported."""
    path = Path(run_dir) / TRACES_FILE
    if not path.exists():
        return {}
    return {(row["example_id"], row["role"]): row["events"] for row in _stored_traces(path)}


def _stored_traces(path: Path) -> list[dict[str, Any]]:
    """The rows of a run's traces.jsonl, checked again: the file may have been edited since."""
    rows = []
    for lineno, value in iter_jsonl(path, what="trace line"):
        role = value.get("role") if isinstance(value, dict) else None
        checker = _LineChecker(str(path), lineno)
        if role not in ROLES:
            raise checker.fail("role", f"must be source or target, not {role!r}")
        rows.append(checker.trace(value, role))
    return rows


def trace_from_events(events: list[dict[str, Any]]) -> ToolTrace:
    """A ToolTrace from a timeline: requested calls per model round (executed calls otherwise)."""
    model_calls = [e for e in events if e.get("type") == "model_call"]
    calls: list[ToolCall] = []
    multi = len(model_calls) > 1
    for k, mc in enumerate(model_calls, start=1):
        for c in mc.get("requested_tool_calls") or ():
            calls.append(ToolCall(tool_name=c["tool_name"], arguments=c.get("arguments") or {}, call_id=c.get("call_id"),
                                  sequence_index=len(calls), round_index=(mc.get("round_index") or k) if multi else None))
    if not calls:
        calls = [ToolCall(tool_name=e["tool_name"], arguments=e.get("arguments") or {}, call_id=e.get("call_id"),
                          sequence_index=i)
                 for i, e in enumerate(x for x in events if x.get("type") == "tool_call")]
        multi = False
    last = model_calls[-1] if model_calls else {}
    return ToolTrace(calls=calls, final_text=last.get("text"), refusal=last.get("refusal"),
                     round_count=len(model_calls) if multi else None)
