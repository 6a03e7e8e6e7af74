"""Promotion: captures become golden-suite examples with rounds, ground truth and fixtures."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ._captures import Capture
from ._models import Example, ExpectedToolCall

RoundsMode = Literal["first", "all"]


@dataclass
class Promotion:
    """One promoted example and the warnings its capture raised."""

    example: Example
    warnings: list[str] = field(default_factory=list)


def _text_of(message: dict[str, Any]) -> str:
    return "\n".join(
        str(p.get("content", "")) for p in message.get("parts", []) if p.get("type") == "text"
    )


def _split_history(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str | None]:
    """History prefix and the last user message's text of round 1's input."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].get("role") == "user":
            return messages[:i], _text_of(messages[i])
    return list(messages), None


def _rounds(capture: Capture) -> tuple[list[list[dict[str, Any]]], Literal["requested", "executed"]]:
    calls = capture.model_calls()
    if calls and all(c.get("requested_tool_calls") is not None for c in calls):
        return [list(c["requested_tool_calls"]) for c in calls], "requested"
    rounds: list[list[dict[str, Any]]] = []
    for event in capture.events:
        if event["type"] == "model_call":
            rounds.append([])
        elif event["type"] == "tool_call" and rounds:
            rounds[-1].append(
                {"call_id": event.get("call_id"), "tool_name": event["tool_name"], "arguments": event.get("arguments")}
            )
    return rounds, "executed"


def promote_capture(capture: Capture, *, rounds: RoundsMode = "first", names_only: bool = False) -> Promotion:
    """Promote one capture (see seed 001, "Agent rounds")."""
    model_calls = capture.model_calls()
    first = model_calls[0]
    history, last_user = _split_history(first.get("messages") or [])
    inputs = dict(capture.inputs or {})
    if last_user is not None:
        inputs.setdefault("input", last_user)
    recorded_rounds, source = _rounds(capture)

    def expected(call: dict[str, Any]) -> ExpectedToolCall:
        args = call.get("arguments")
        return ExpectedToolCall(
            tool_name=call["tool_name"],
            arguments=None if names_only or not isinstance(args, dict) else args,
            call_id=call.get("call_id"),
        )

    tool_rounds = [[expected(c) for c in r] for r in recorded_rounds]
    total_calls = sum(len(r) for r in tool_rounds)
    example = Example(
        id=f"{capture.prompt_id or 'turn'}-{capture.trace_id[:16]}",
        inputs=inputs,
        tags=list(capture.tags),
        prompt_id=capture.prompt_id,
        history=history,
        toolset_ref=first.get("toolset_ref"),
        tools=None if first.get("toolset_ref") else [],
        generation_config=dict(first.get("generation_config") or {}),
        expected_tools=tool_rounds[0] if tool_rounds else [],
        expected_tool_rounds=tool_rounds,
        expected_tool_count=len(tool_rounds[0]) if tool_rounds and tool_rounds[0] else None,
        expected_no_tools=True if total_calls == 0 else None,
        expected_parallel=True if tool_rounds and len(tool_rounds[0]) > 1 else None,
        promotion_source=source,
        cluster=capture.trace_id,
    )
    warnings: list[str] = []
    later = [c.tool_name for r in tool_rounds[1:] for c in r]
    if rounds == "first" and later:
        warnings.append(
            f"{example.id}: --rounds first replays round 1 only; later calls not replayed: {', '.join(later)}"
        )
    return Promotion(example=example, warnings=warnings)


def promote(
    captures: list[Capture], *, rounds: RoundsMode = "first", names_only: bool = False
) -> list[Promotion]:
    return [promote_capture(c, rounds=rounds, names_only=names_only) for c in captures]
