"""Provider-neutral span bookkeeping shared by every instrumentation.

The provider modules turn their SDK's request and response into plain values; this module
turns those values into one ``chat {model}`` span per model call.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from .. import _attributes as A
from .._jsonsafe import dumps
from .._runtime import current_turn, get_runtime
from .._toolsets import normalise_toolset, toolset_ref


def is_sentinel(value: Any) -> bool:
    """The provider SDKs' "not given" markers (openai/anthropic ``Omit``/``NotGiven``)."""
    return type(value).__name__ in {"Omit", "NotGiven", "_NotGiven", "_Omit"}


def given(kwargs: Mapping[str, Any], key: str) -> Any:
    value = kwargs.get(key)
    return None if value is None or is_sentinel(value) else value


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def tool_call_part(call_id: str | None, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def tool_response_part(call_id: str | None, response: Any) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, "response": response}


class ModelCall:
    """One model call in flight: its span, the turn it belongs to and its start time."""

    __slots__ = ("span", "turn", "t0", "ended")

    def __init__(self, span: Any, turn: Any, t0: float) -> None:
        self.span = span
        self.turn = turn
        self.t0 = t0
        self.ended = False

    @classmethod
    def start(
        cls,
        *,
        provider: str,
        model: Any,
        input_messages: list[dict[str, Any]] | None,
        tools: Iterable[Mapping[str, Any]] | None,
        generation_config: Mapping[str, Any] | None,
        system_instructions: list[dict[str, Any]] | None = None,
        streamed: bool = False,
    ) -> ModelCall | None:
        rt = get_runtime()
        if rt is None:
            return None
        turn = current_turn()
        if turn is not None and not turn.sampled:
            return None
        attrs: dict[str, Any] = {A.OPERATION: A.OP_CHAT, A.PROVIDER: provider}
        if model is not None:
            attrs[A.REQUEST_MODEL] = str(model)
        if input_messages is not None:
            attrs[A.INPUT_MESSAGES] = dumps(input_messages)
        if system_instructions:
            attrs[A.SYSTEM_INSTRUCTIONS] = dumps(system_instructions)
        if tools is not None:
            normalised = normalise_toolset(tools)
            ref = toolset_ref(normalised)
            rt.toolsets.offer(ref, normalised)
            attrs[A.TOOLSET_REF] = ref
        if generation_config:
            attrs[A.GENERATION_CONFIG] = dumps(dict(generation_config))
        if streamed:
            attrs[A.STREAMED] = True
        if turn is not None:
            context = turn.context
        else:
            from opentelemetry.context import Context

            # A call outside any turn is a turn of its own; never a child of the host's spans.
            context = Context()
            attrs[A.IMPLICIT_TURN] = True
        name = f"chat {model}" if model else "chat"
        from opentelemetry.trace import SpanKind

        span = rt.tracer.start_span(name, context=context, kind=SpanKind.CLIENT, attributes=attrs)
        return cls(span, turn, time.perf_counter())

    def finish(
        self,
        *,
        text: str | None,
        tool_calls: list[dict[str, Any]],
        refusal: str | None = None,
        finish_reasons: list[str] | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        response_model: str | None = None,
        response_id: str | None = None,
    ) -> None:
        """Record the response; ``tool_calls`` are ``{call_id, tool_name, arguments}`` dicts."""
        if self.ended:
            return
        self.ended = True
        span = self.span
        span.set_attribute(A.LATENCY_MS, round((time.perf_counter() - self.t0) * 1000.0, 3))
        if response_model:
            span.set_attribute(A.RESPONSE_MODEL, response_model)
        if response_id:
            span.set_attribute(A.RESPONSE_ID, response_id)
        if finish_reasons:
            span.set_attribute(A.FINISH_REASONS, [str(r) for r in finish_reasons])
        if input_tokens is not None:
            span.set_attribute(A.INPUT_TOKENS, int(input_tokens))
        if output_tokens is not None:
            span.set_attribute(A.OUTPUT_TOKENS, int(output_tokens))
        if text:
            span.set_attribute(A.OUTPUT_TEXT, text)
        if refusal:
            span.set_attribute(A.REFUSAL, refusal)
        span.set_attribute(A.REQUESTED_TOOL_CALLS, dumps(tool_calls))
        parts: list[dict[str, Any]] = []
        if text:
            parts.append(text_part(text))
        for call in tool_calls:
            parts.append(tool_call_part(call.get("call_id"), call["tool_name"], call.get("arguments")))
        message: dict[str, Any] = {"role": "assistant", "parts": parts}
        if finish_reasons:
            message["finish_reason"] = finish_reasons[0]
        span.set_attribute(A.OUTPUT_MESSAGES, dumps([message]))
        if self.turn is not None and tool_calls:
            self.turn.add_requested(tool_calls)
        span.end()

    def fail(self, exc: BaseException) -> None:
        if self.ended:
            return
        self.ended = True
        from opentelemetry.trace import Status, StatusCode

        self.span.set_attribute(A.LATENCY_MS, round((time.perf_counter() - self.t0) * 1000.0, 3))
        self.span.set_attribute(A.ERROR_TYPE, type(exc).__qualname__)
        self.span.set_status(Status(StatusCode.ERROR, str(exc)[:500]))
        self.span.end()
