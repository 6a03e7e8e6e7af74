"""Model clients over the official provider SDKs, speaking the semconv message model."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ._exceptions import ReplayError
from ._models import Tool, ToolCall
from ._routing import ModelRef


@dataclass
class ModelResponse:
    """One model call's answer, provider-neutral."""

    text: str | None
    tool_calls: list[ToolCall]
    refusal: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    dropped_params: list[str] = field(default_factory=list)


def _json_text(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def to_openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Semconv messages (role + parts) as OpenAI Chat Completions messages."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role", "user")
        parts = msg.get("parts", [])
        texts = [str(p.get("content", "")) for p in parts if p.get("type") == "text"]
        calls = [p for p in parts if p.get("type") == "tool_call"]
        responses = [p for p in parts if p.get("type") == "tool_call_response"]
        if responses:
            for p in responses:
                out.append({"role": "tool", "tool_call_id": p.get("id") or "", "content": _json_text(p.get("response"))})
            continue
        entry: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else None}
        if calls:
            entry["tool_calls"] = [
                {
                    "id": p.get("id") or f"call_{i}",
                    "type": "function",
                    "function": {"name": p.get("name", ""), "arguments": _json_text(p.get("arguments") or {})},
                }
                for i, p in enumerate(calls)
            ]
        elif entry["content"] is None:
            entry["content"] = ""
        out.append(entry)
    return out


def to_openai_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    out = []
    for t in tools:
        fn: dict[str, Any] = {"name": t.name, "parameters": t.input_schema}
        if t.description:
            fn["description"] = t.description
        if t.strict is not None:
            fn["strict"] = t.strict
        out.append({"type": "function", "function": fn})
    return out


def _parse_args(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            return raw
    return raw or {}


class OpenAIChatClient:
    """Chat Completions through the official ``openai`` SDK."""

    provider = "openai"

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None, **options: Any) -> None:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise ReplayError("the openai SDK is not installed: pip install 'evalshift[openai]'") from exc
        self._client = openai.OpenAI(api_key=api_key or _env("OPENAI_API_KEY", "unset"), base_url=base_url, **options)

    def complete(
        self, model: ModelRef, messages: list[dict[str, Any]], tools: list[Tool], generation_config: Mapping[str, Any]
    ) -> ModelResponse:
        kwargs: dict[str, Any] = {"model": model.name, "messages": to_openai_messages(messages)}
        if tools:
            kwargs["tools"] = to_openai_tools(tools)
            for key in ("tool_choice", "parallel_tool_calls"):
                if key in generation_config:
                    kwargs[key] = generation_config[key]
        for key in ("temperature", "top_p", "max_tokens", "max_completion_tokens", "seed", "stop"):
            if key in generation_config:
                kwargs[key] = generation_config[key]
        t0 = time.perf_counter()
        response = self._client.chat.completions.create(**kwargs)
        latency = (time.perf_counter() - t0) * 1000.0
        choice = response.choices[0]
        message = choice.message
        calls = [
            ToolCall(tool_name=tc.function.name, arguments=_parse_args(tc.function.arguments), call_id=tc.id)
            for tc in (message.tool_calls or [])
            if getattr(tc, "function", None) is not None
        ]
        usage = response.usage
        return ModelResponse(
            text=message.content,
            tool_calls=calls,
            refusal=getattr(message, "refusal", None),
            input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            output_tokens=getattr(usage, "completion_tokens", 0) or 0,
            latency_ms=latency,
        )


def _env(name: str, default: str) -> str:
    import os

    return os.environ.get(name) or default


CLIENTS: dict[str, type] = {"openai": OpenAIChatClient}


def make_client(provider: str, settings: Mapping[str, Any] | None = None) -> Any:
    cls = CLIENTS.get(provider)
    if cls is None:
        raise ReplayError(f"no replay client for provider {provider!r} yet")
    return cls(**dict(settings or {}))
