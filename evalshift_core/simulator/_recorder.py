"""Record a golden suite from a scripted model: what ``capture sync`` would promote, without an app.

An agent loop runs each ticket against a :class:`Simulator` model in process (its own request
path, so noise and repeats count as for any client), executes the tools with a given function,
and builds each example as promotion does from a capture with requested calls: the recorded
rounds (``expected_tool_rounds``, the answer round last), the tool results as
``tool_result_fixtures`` under ``rounds="all"``, and the ``recording`` (model, answer text,
refusal) that calibrates the drift comparisons. Validity checks and demos use it to build many
seeded suites quickly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import orjson

from .._models import Example
from ._server import Simulator

ToolRunner = Callable[[str, dict[str, Any]], Any]

MAX_ROUNDS = 12
"""An agent loop that has not answered after this many rounds is cut off (a script that loops)."""


def _openai_tool(tool: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": tool["name"], "description": tool.get("description", ""),
                                             "parameters": tool.get("input_schema", {"type": "object"})}}


def record_example(
    sim: Simulator,
    model: str,
    text: str,
    *,
    example_id: str,
    tools: Sequence[dict[str, Any]],
    run_tool: ToolRunner,
    rounds: Literal["first", "all"] = "all",
    tags: Sequence[str] = (),
    system: str | None = None,
) -> Example:
    """Run one ticket to its answer on ``model`` and promote the recording into an example."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
    messages.append({"role": "user", "content": text})
    offered = [_openai_tool(t) for t in tools]
    recorded: list[list[dict[str, Any]]] = []
    results: list[list[dict[str, Any]]] = []
    answers: list[tuple[str | None, str | None]] = []  # (text, refusal) per round
    for _ in range(MAX_ROUNDS):
        status, _headers, payload = sim.handle("/v1/chat/completions",
                                               {"model": model, "messages": messages, "tools": offered})
        if status != 200:
            raise RuntimeError(f"{model} answered {status}: {payload[:200]!r}")
        message = orjson.loads(payload)["choices"][0]["message"]
        answers.append((message.get("content"), message.get("refusal")))
        calls = [{"tool_name": c["function"]["name"], "arguments": orjson.loads(c["function"]["arguments"] or "{}"),
                  "call_id": c["id"]} for c in message.get("tool_calls") or ()]
        recorded.append(calls)
        if not calls:
            break
        messages.append({"role": "assistant", "content": message.get("content"),
                         "tool_calls": message["tool_calls"]})
        round_results = []
        for call in calls:
            result = run_tool(call["tool_name"], call["arguments"])
            round_results.append({"tool_name": call["tool_name"], "result": result, "call_id": call["call_id"]})
            messages.append({"role": "tool", "tool_call_id": call["call_id"],
                             "content": result if isinstance(result, str) else orjson.dumps(result).decode()})
        results.append(round_results)
    replayed = len(recorded) if rounds == "all" and len(recorded) > 1 and not recorded[-1] else 1
    covered = answers[:replayed]
    refusal = covered[-1][1] or next((r for _, r in covered if r), None)
    example: dict[str, Any] = {
        "id": example_id, "inputs": {"input": text}, "tags": list(tags),
        "history": [{"role": "system", "parts": [{"type": "text", "content": system}]}] if system else [],
        "tools": list(tools), "expected_tools": recorded[0], "expected_tool_rounds": recorded,
    }
    if replayed > 1:
        example["tool_result_fixtures"] = results[:replayed - 1]
    if recorded[0]:
        example["expected_tool_count"] = len(recorded[0])
        example["expected_parallel"] = len(recorded[0]) > 1
    if not any(recorded):
        example["expected_no_tools"] = True
    example["promotion_source"] = "requested"
    recording: dict[str, Any] = {"model": model, "text": covered[-1][0] or ""}
    if refusal:
        recording["refusal"] = refusal
    example["recording"] = recording
    return Example.model_validate(example)
