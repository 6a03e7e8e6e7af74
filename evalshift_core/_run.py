"""``evalshift run``: replay every example through the source and the target model."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ._clients import make_client
from ._exceptions import EvalShiftError, RunNotFoundError
from ._io import append_jsonl, atomic_write_json, iter_jsonl
from ._models import SCHEMA_VERSION, Call, Example, ToolTrace, Usage
from ._routing import route
from ._suite import DEFAULT_BASE, resolve_tools

DEFAULT_TEMPLATE = "{input}"


@dataclass
class RunResult:
    """A finished run: its id, its folder and its Call rows."""

    run_id: str
    run_dir: Path
    calls: list[Call]
    manifest: dict[str, Any]


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def run_dir_for(base: str | os.PathLike[str], run_id: str) -> Path:
    return Path(base) / "runs" / run_id


def render_prompt(example: Example, template: str = DEFAULT_TEMPLATE) -> str:
    """The user message of round 1: the prompt template filled with the example's inputs."""
    try:
        return template.format_map(example.inputs)
    except (KeyError, IndexError, ValueError) as exc:
        raise EvalShiftError(f"example {example.id!r}: prompt template needs {exc}", field="inputs") from exc


def initial_messages(example: Example, template: str = DEFAULT_TEMPLATE) -> list[dict[str, Any]]:
    return [*example.history, {"role": "user", "parts": [{"type": "text", "content": render_prompt(example, template)}]}]


def replay_example(
    client: Any, model: str, example: Example, base: str | os.PathLike[str], role: str, template: str = DEFAULT_TEMPLATE
) -> Call:
    """Single-shot replay of one example: one model call, no tool results fed back."""
    ref = route(model)
    tools = resolve_tools(example, base)
    try:
        response = client.complete(ref, initial_messages(example, template), tools, example.generation_config)
    except EvalShiftError:
        raise
    except Exception as exc:  # noqa: BLE001 - a model error fails the example, not the run
        return Call(example_id=example.id, role=role, model=str(ref), error=f"round 1/1: {type(exc).__name__}: {exc}")
    calls = [c.model_copy(update={"sequence_index": i}) for i, c in enumerate(response.tool_calls)]
    trace = ToolTrace(calls=calls, final_text=response.text, refusal=response.refusal)
    return Call(
        example_id=example.id,
        role=role,
        model=str(ref),
        trace=trace,
        text=response.text,
        usage=Usage(input_tokens=response.input_tokens, output_tokens=response.output_tokens),
        latency_ms=response.latency_ms,
        dropped_params=response.dropped_params,
    )


def run(
    examples: list[Example],
    *,
    source: str,
    target: str,
    base: str | os.PathLike[str] = DEFAULT_BASE,
    suite_name: str | None = None,
    providers: Mapping[str, Mapping[str, Any]] | None = None,
    template: str = DEFAULT_TEMPLATE,
    run_id: str | None = None,
) -> RunResult:
    """Replay ``examples`` through ``source`` and ``target``; write ``raw.jsonl`` and ``run.json``."""
    run_id = run_id or new_run_id()
    out = run_dir_for(base, run_id)
    out.mkdir(parents=True, exist_ok=True)
    manifest = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "suite": suite_name,
        "source_model": str(route(source)),
        "target_model": str(route(target)),
        "examples": len(examples),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    atomic_write_json(out / "run.json", manifest)
    (out / "examples.jsonl").write_bytes(b"")
    append_jsonl(out / "examples.jsonl", (e.model_dump(mode="json", exclude_none=True) for e in examples))
    clients: dict[str, Any] = {}
    calls: list[Call] = []
    raw = out / "raw.jsonl"
    raw.write_bytes(b"")
    for example in examples:
        rows = []
        for role, model in (("source", source), ("target", target)):
            provider = route(model).provider
            if provider not in clients:
                clients[provider] = make_client(provider, (providers or {}).get(provider))
            rows.append(replay_example(clients[provider], model, example, base, role, template))
        append_jsonl(raw, (c.model_dump(mode="json", exclude_none=True) for c in rows))
        calls.extend(rows)
    return RunResult(run_id=run_id, run_dir=out, calls=calls, manifest=manifest)


def load_run(base: str | os.PathLike[str], run_id: str) -> tuple[dict[str, Any], list[Example], list[Call]]:
    """Read a run's manifest, examples and Call rows back."""
    import orjson

    out = run_dir_for(base, run_id)
    if not (out / "run.json").exists():
        raise RunNotFoundError(f"no run {run_id!r} under {Path(base) / 'runs'}")
    manifest = orjson.loads((out / "run.json").read_bytes())
    examples = [Example.model_validate(r) for _, r in iter_jsonl(out / "examples.jsonl")]
    calls = [Call.model_validate(r) for _, r in iter_jsonl(out / "raw.jsonl")]
    return manifest, examples, calls
