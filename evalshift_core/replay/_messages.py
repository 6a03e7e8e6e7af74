"""The messages a replay sends: the prompt template filled with an example's inputs, after its
history, then the recorded rounds a teacher-forced replay feeds back (semconv message shape).
"""

from __future__ import annotations

from typing import Any

from .._exceptions import InputError
from .._models import Example, ExpectedToolCall, FixtureResult

DEFAULT_TEMPLATE = "{input}"


def render_prompt(example: Example, template: str = DEFAULT_TEMPLATE) -> str:
    """The user message of round 1: the prompt template filled with the example's inputs."""
    try:
        return template.format_map(example.inputs)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        raise InputError(f"example {example.id!r}: prompt template needs {exc}", field="inputs") from exc


def initial_messages(example: Example, template: str = DEFAULT_TEMPLATE) -> list[dict[str, Any]]:
    """History prefix, then the rendered prompt as the user message."""
    return [*example.history, {"role": "user", "parts": [{"type": "text", "content": render_prompt(example, template)}]}]


def _result_value(fixture: FixtureResult) -> Any:
    # seed 001: a recorded tool error is replayed as {"error": "..."}
    return {"error": fixture.error} if fixture.error is not None else fixture.result


def recorded_rounds(example: Example) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The recorded rounds 1..n-1 as (assistant message, tool message) pairs, in semconv shape.

    Calls come from ``expected_tool_rounds[k]`` (``expected_tools`` for round 1), results from
    ``tool_result_fixtures[k]``, paired by ``call_id`` when both carry one, else by position.
    Missing call ids get stable synthetic ones (``call_r{k}_{i}``).
    """
    fixtures = example.tool_result_fixtures or []
    out = []
    for k, results in enumerate(fixtures, start=1):
        calls: list[ExpectedToolCall] = list(example.expected_round(k) or [])
        if len(calls) != len(results):
            if calls:
                raise InputError(
                    f"example {example.id!r}: round {k} records {len(calls)} call(s) but "
                    f"{len(results)} tool result(s)", field=f"tool_result_fixtures[{k - 1}]")
            # no recorded calls for the round: the fixtures name the tools themselves
            calls = [ExpectedToolCall(tool_name=r.tool_name, call_id=r.call_id) for r in results]
        by_id = {r.call_id: r for r in results if r.call_id}
        call_parts, result_parts = [], []
        for i, call in enumerate(calls):
            result = by_id.get(call.call_id) if call.call_id else None
            if result is None:
                result = results[i]
            call_id = call.call_id or result.call_id or f"call_r{k}_{i}"
            call_parts.append({"type": "tool_call", "id": call_id, "name": call.tool_name,
                               "arguments": call.arguments if call.arguments is not None else {}})
            result_parts.append({"type": "tool_call_response", "id": call_id, "name": call.tool_name,
                                 "response": _result_value(result)})
        out.append(({"role": "assistant", "parts": call_parts}, {"role": "tool", "parts": result_parts}))
    return out


def round_messages(example: Example, template: str = DEFAULT_TEMPLATE) -> list[list[dict[str, Any]]]:
    """The messages of every replayed round: round k = prefix + recorded rounds 1..k-1.

    The candidate's own calls are never fed back, so every model sees byte-identical context.
    """
    prefix = initial_messages(example, template)
    rounds = [prefix]
    for assistant, tool in recorded_rounds(example):
        rounds.append([*rounds[-1], assistant, tool])
    return rounds
