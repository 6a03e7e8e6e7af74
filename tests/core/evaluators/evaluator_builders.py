"""Small builders for evaluator tests: examples and traces from tool names and arguments."""

from __future__ import annotations

from typing import Any

from evalshift_core import Example, ExpectedToolCall, ToolCall, ToolTrace


def call(name: str, i: int = 0, round_index: int | None = None, **arguments: Any) -> ToolCall:
    return ToolCall(tool_name=name, arguments=arguments, sequence_index=i, round_index=round_index)


def trace(*calls: str | ToolCall, text: str | None = None, refusal: str | None = None,
          rounds: list[list[str | ToolCall]] | None = None) -> ToolTrace:
    """A single-shot trace from names/calls, or a multi-round one from ``rounds``."""
    if rounds is not None:
        out: list[ToolCall] = []
        for k, rnd in enumerate(rounds, start=1):
            for c in rnd:
                c = call(c) if isinstance(c, str) else c
                out.append(c.model_copy(update={"round_index": k, "sequence_index": len(out)}))
        return ToolTrace(calls=out, final_text=text, refusal=refusal, round_count=len(rounds))
    built = [call(c) if isinstance(c, str) else c for c in calls]
    built = [c.model_copy(update={"sequence_index": i}) for i, c in enumerate(built)]
    return ToolTrace(calls=built, final_text=text, refusal=refusal)


def expected(name: str, arguments: dict[str, Any] | None = None, match_strategy: str = "exact") -> ExpectedToolCall:
    return ExpectedToolCall(tool_name=name, arguments=arguments, match_strategy=match_strategy)


def example(*expected_tools: str | ExpectedToolCall, **fields: Any) -> Example:
    tools = [expected(t) if isinstance(t, str) else t for t in expected_tools]
    return Example(id=fields.pop("id", "ex1"), expected_tools=tools or fields.pop("expected_tools", None), **fields)
