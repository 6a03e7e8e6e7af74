"""Instrumentation of the official ``openai`` client: Chat Completions ``create``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import wrapt

from .._guard import capture_internal_exceptions
from ._genai import ModelCall, given, is_sentinel, text_part, tool_call_part, tool_response_part

PROVIDER = "openai"
MIN_VERSION = (1, 40)

_NOT_GENERATION = {
    "messages", "model", "tools", "stream", "extra_headers", "extra_query", "extra_body",
    "timeout", "functions", "stream_options", "metadata", "user", "safety_identifier",
    "prompt_cache_key", "store",
}

_patched: list[tuple[Any, str, Any]] = []


def parse_arguments(raw: Any) -> Any:
    """Tool-call arguments as a value; text that is not JSON is kept as text."""
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw) if raw else {}
    except orjson.JSONDecodeError:
        return raw


def _content_text(content: Any) -> str | None:
    if content is None or is_sentinel(content):
        return None
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") in {"text", "input_text", "output_text"}:
            texts.append(str(part.get("text", "")))
    return "".join(texts) if texts else None


def messages_to_semconv(messages: Any) -> list[dict[str, Any]]:
    """OpenAI chat messages in the GenAI semconv message shape (role + parts)."""
    out: list[dict[str, Any]] = []
    for msg in messages or []:
        if not isinstance(msg, Mapping):
            dump = getattr(msg, "model_dump", None)
            msg = dump() if callable(dump) else {}
        role = msg.get("role", "user")
        parts: list[dict[str, Any]] = []
        if role == "tool":
            parts.append(tool_response_part(msg.get("tool_call_id"), _content_text(msg.get("content"))))
        else:
            text = _content_text(msg.get("content"))
            if text:
                parts.append(text_part(text))
            for call in msg.get("tool_calls") or []:
                fn = call.get("function") or {}
                parts.append(tool_call_part(call.get("id"), fn.get("name", ""), parse_arguments(fn.get("arguments"))))
        out.append({"role": "system" if role == "developer" else role, "parts": parts})
    return out


def generation_config_of(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in _NOT_GENERATION or value is None or is_sentinel(value):
            continue
        config[key] = value
    return config


def _start(kwargs: Mapping[str, Any]) -> ModelCall | None:
    tools = given(kwargs, "tools")
    return ModelCall.start(
        provider=PROVIDER,
        model=given(kwargs, "model"),
        input_messages=messages_to_semconv(given(kwargs, "messages")),
        tools=list(tools) if tools is not None else None,
        generation_config=generation_config_of(kwargs),
    )


def _finish(call: ModelCall, response: Any) -> None:
    choices = getattr(response, "choices", None) or []
    text = None
    refusal = None
    tool_calls: list[dict[str, Any]] = []
    finish_reasons: list[str] = []
    if choices:
        choice = choices[0]
        message = choice.message
        text = message.content
        refusal = getattr(message, "refusal", None)
        for tc in getattr(message, "tool_calls", None) or []:
            fn = getattr(tc, "function", None)
            if fn is None:
                continue
            tool_calls.append(
                {"call_id": tc.id, "tool_name": fn.name, "arguments": parse_arguments(fn.arguments)}
            )
        legacy = getattr(message, "function_call", None)
        if legacy is not None and not tool_calls:
            tool_calls.append(
                {"call_id": None, "tool_name": legacy.name, "arguments": parse_arguments(legacy.arguments)}
            )
        finish_reasons = [c.finish_reason for c in choices if getattr(c, "finish_reason", None)]
    usage = getattr(response, "usage", None)
    call.finish(
        text=text,
        tool_calls=tool_calls,
        refusal=refusal,
        finish_reasons=finish_reasons,
        input_tokens=getattr(usage, "prompt_tokens", None),
        output_tokens=getattr(usage, "completion_tokens", None),
        response_model=getattr(response, "model", None),
        response_id=getattr(response, "id", None),
    )


def _chat_create(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if kwargs.get("stream") is True:
        return wrapped(*args, **kwargs)
    call = None
    with capture_internal_exceptions("openai.chat.request"):
        call = _start(kwargs)
    try:
        response = wrapped(*args, **kwargs)
    except BaseException as exc:
        if call is not None:
            with capture_internal_exceptions("openai.chat.error"):
                call.fail(exc)
        raise
    if call is not None:
        with capture_internal_exceptions("openai.chat.response"):
            _finish(call, response)
    return response


async def _achat_create(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    if kwargs.get("stream") is True:
        return await wrapped(*args, **kwargs)
    call = None
    with capture_internal_exceptions("openai.chat.request"):
        call = _start(kwargs)
    try:
        response = await wrapped(*args, **kwargs)
    except BaseException as exc:
        if call is not None:
            with capture_internal_exceptions("openai.chat.error"):
                call.fail(exc)
        raise
    if call is not None:
        with capture_internal_exceptions("openai.chat.response"):
            _finish(call, response)
    return response


def instrument() -> None:
    from openai.resources.chat.completions import completions as mod

    for owner, attr, wrapper in (
        (mod.Completions, "create", _chat_create),
        (mod.AsyncCompletions, "create", _achat_create),
    ):
        original = owner.__dict__[attr]
        if isinstance(original, wrapt.FunctionWrapper):
            continue
        wrapt.wrap_function_wrapper(owner, attr, wrapper)
        _patched.append((owner, attr, original))


def uninstrument() -> None:
    while _patched:
        owner, attr, original = _patched.pop()
        setattr(owner, attr, original)
