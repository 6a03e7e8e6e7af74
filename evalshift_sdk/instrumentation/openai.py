"""Instrumentation of the official ``openai`` client: Chat Completions and Responses.

Patches ``create`` (sync and async, streamed or not) and the ``parse`` helpers, which bypass
``create``; the ``stream`` helpers call ``create(stream=True)`` inside, so they give one span.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import wrapt

from .._guard import capture_internal_exceptions
from ._genai import (
    ModelCall,
    as_mapping,
    given,
    is_raw_response,
    is_sentinel,
    observe_async,
    observe_sync,
    parse_arguments,
    snapshot,
    text_part,
    tool_call_part,
    tool_response_part,
)
from ._patching import patch, require_version, unpatch
from ._streams import Accumulator, AsyncStreamProxy, SyncStreamProxy

PROVIDER = "openai"
MIN_VERSION = (1, 66)  # the first release with the Responses API
_RAW_HEADER = "X-Stainless-Raw-Response"

# Request keys that are not generation settings: the conversation, the toolset (recorded as a
# ref), transport options (headers may carry credentials) and bookkeeping the model never sees.
_NOT_GENERATION = frozenset({
    "messages", "input", "instructions", "model", "tools", "functions", "stream", "stream_options",
    "extra_headers", "extra_query", "extra_body", "timeout", "metadata", "user",
    "safety_identifier", "prompt_cache_key", "store", "previous_response_id", "conversation",
    "include", "background",
})

_patched: list[tuple[Any, str, Any]] = []


def _content_text(content: Any) -> str | None:
    if content is None or is_sentinel(content):
        return None
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        part = as_mapping(part)
        if part.get("type") in {"text", "input_text", "output_text"}:
            texts.append(str(part.get("text", "")))
    return "".join(texts) if texts else None


def messages_to_semconv(messages: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Chat messages as GenAI semconv messages, and the system/developer prompts apart."""
    out: list[dict[str, Any]] = []
    system: list[dict[str, Any]] = []
    for raw in messages or []:
        msg = as_mapping(raw)
        role = msg.get("role", "user")
        if role in {"system", "developer"}:
            text = _content_text(msg.get("content"))
            if text:
                system.append(text_part(text))
            continue
        parts: list[dict[str, Any]] = []
        if role in {"tool", "function"}:
            call_id = msg.get("tool_call_id") if role == "tool" else None
            parts.append(tool_response_part(call_id, parse_arguments(_content_text(msg.get("content")))))
        else:
            text = _content_text(msg.get("content"))
            if text:
                parts.append(text_part(text))
            for call in msg.get("tool_calls") or []:
                call = as_mapping(call)
                fn = as_mapping(call.get("function") or {})
                parts.append(tool_call_part(call.get("id"), fn.get("name", ""), parse_arguments(fn.get("arguments"))))
            legacy = msg.get("function_call")
            if legacy:
                legacy = as_mapping(legacy)
                parts.append(tool_call_part(None, legacy.get("name", ""), parse_arguments(legacy.get("arguments"))))
        out.append({"role": "tool" if role == "function" else role, "parts": parts})
    return out, system


def responses_input_to_semconv(value: Any) -> list[dict[str, Any]]:
    """Responses ``input`` (text or items) as GenAI semconv messages."""
    if value is None:
        return []
    if isinstance(value, str):
        return [{"role": "user", "parts": [text_part(value)]}]
    out: list[dict[str, Any]] = []
    for raw in value:
        item = as_mapping(raw)
        kind = item.get("type")
        if kind == "function_call":
            part = tool_call_part(item.get("call_id"), item.get("name", ""), parse_arguments(item.get("arguments")))
            # Parallel calls arrive as consecutive items; keep them in one assistant message.
            if out and out[-1]["role"] == "assistant" and out[-1].get("_calls"):
                out[-1]["parts"].append(part)
            else:
                out.append({"role": "assistant", "parts": [part], "_calls": True})
        elif kind == "function_call_output":
            out.append({"role": "tool", "parts": [tool_response_part(item.get("call_id"), parse_arguments(item.get("output")))]})
        elif "role" in item and kind in {None, "message"}:
            text = _content_text(item.get("content"))
            out.append({"role": item["role"], "parts": [text_part(text)] if text else []})
    for message in out:
        message.pop("_calls", None)
    return out


def _json_safe_setting(value: Any) -> Any:
    if inspect.isclass(value):
        return value.__name__  # a pydantic response_format class given to .parse()
    return value


def generation_config_of(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in _NOT_GENERATION or value is None or is_sentinel(value):
            continue
        config[key] = _json_safe_setting(value)
    return config


def _function_tools(tools: Any) -> tuple[list[Any] | None, list[str]]:
    """The function tools (the toolset) and the types of built-in tools offered beside them."""
    if tools is None:
        return None, []
    functions: list[Any] = []
    builtin: list[str] = []
    for tool in tools:
        t = as_mapping(tool)
        if t.get("type", "function") == "function" and (t.get("function") or t.get("name")):
            functions.append(t)
        else:
            builtin.append(str(t.get("type")))
    return functions, builtin


def _raw_mode(kwargs: Mapping[str, Any]) -> str | None:
    headers = kwargs.get("extra_headers")
    if isinstance(headers, Mapping):
        value = headers.get(_RAW_HEADER)
        return str(value) if value is not None else None
    return None


def _describe_chat(
    request: Mapping[str, Any], messages: list[Any] | None, offered: list[Any] | None, legacy: list[Any] | None
) -> dict[str, Any]:
    converted, system = messages_to_semconv(messages)
    tools, builtin = _function_tools(offered)
    if tools is None and legacy is not None:
        tools = [as_mapping(f) for f in legacy]
    config = generation_config_of(request)
    if builtin:
        config["builtin_tools"] = builtin
    return {
        "input_messages": converted if messages is not None else None,
        "system_instructions": system,
        "tools": tools,
        "generation_config": config,
    }


def _start_chat(args: Any, kwargs: Mapping[str, Any]) -> ModelCall | None:
    # References only; the conversion runs on the export thread (see ``_genai.Deferred``).
    request = (
        _describe_chat,
        dict(kwargs),
        snapshot(kwargs.get("messages")),
        snapshot(kwargs.get("tools")),
        snapshot(kwargs.get("functions")),
    )
    return ModelCall.start(
        provider=PROVIDER, model=given(kwargs, "model"), streamed=kwargs.get("stream") is True, request=request
    )


def _describe_responses(request: Mapping[str, Any], items: Any, one_shot: bool, offered: list[Any] | None) -> dict[str, Any]:
    tools, builtin = _function_tools(offered)
    config = generation_config_of(request)
    if builtin:
        config["builtin_tools"] = builtin
    instructions = given(request, "instructions")
    return {
        "input_messages": None if one_shot else responses_input_to_semconv(items),
        "system_instructions": [text_part(str(instructions))] if instructions else None,
        "tools": tools,
        "generation_config": config,
    }


def _start_responses(args: Any, kwargs: Mapping[str, Any]) -> ModelCall | None:
    given_input = items = given(kwargs, "input")
    if not isinstance(items, str):
        items = snapshot(items)
    one_shot = given_input is not None and items is None  # an iterator: the host's to consume
    request = (_describe_responses, dict(kwargs), items, one_shot, snapshot(kwargs.get("tools")))
    return ModelCall.start(
        provider=PROVIDER, model=given(kwargs, "model"), streamed=kwargs.get("stream") is True, request=request
    )


def _unwrap_raw(response: Any) -> Any:
    """The parsed body behind ``with_raw_response`` (cached by the SDK, so the host gets the
    same object), or None when the body is a stream we must not read."""
    if not is_raw_response(response):
        return response
    mode = response.http_response.request.headers.get(_RAW_HEADER)
    if mode != "stream":
        parsed = response.parse()
        if hasattr(parsed, "response") and hasattr(parsed, "__iter__"):
            return None  # a raw stream: reading it would take it from the host
        return parsed
    return None  # with_streaming_response: the body is the host's to read


def chat_finish_kwargs(response: Any) -> dict[str, Any]:
    choices = getattr(response, "choices", None) or []
    text = None
    refusal = None
    tool_calls: list[dict[str, Any]] = []
    finish_reasons: list[str] = []
    if choices:
        message = choices[0].message
        text = message.content
        refusal = getattr(message, "refusal", None)
        for tc in getattr(message, "tool_calls", None) or []:
            fn = getattr(tc, "function", None)
            if fn is None:
                continue
            tool_calls.append({"call_id": tc.id, "tool_name": fn.name, "arguments": parse_arguments(fn.arguments)})
        legacy = getattr(message, "function_call", None)
        if legacy is not None and not tool_calls:
            tool_calls.append({"call_id": None, "tool_name": legacy.name, "arguments": parse_arguments(legacy.arguments)})
        finish_reasons = [c.finish_reason for c in choices if getattr(c, "finish_reason", None)]
    usage = getattr(response, "usage", None)
    return {
        "text": text,
        "tool_calls": tool_calls,
        "refusal": refusal,
        "finish_reasons": finish_reasons,
        "input_tokens": getattr(usage, "prompt_tokens", None),
        "output_tokens": getattr(usage, "completion_tokens", None),
        "response_model": getattr(response, "model", None),
        "response_id": getattr(response, "id", None),
    }


def responses_finish_kwargs(response: Any) -> dict[str, Any]:
    texts: list[str] = []
    refusals: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for item in getattr(response, "output", None) or []:
        kind = getattr(item, "type", None)
        if kind == "function_call":
            tool_calls.append({"call_id": item.call_id, "tool_name": item.name, "arguments": parse_arguments(item.arguments)})
        elif kind == "message":
            for part in getattr(item, "content", None) or []:
                ptype = getattr(part, "type", None)
                if ptype == "output_text":
                    texts.append(part.text)
                elif ptype == "refusal":
                    refusals.append(part.refusal)
    status = getattr(response, "status", None)
    details = getattr(response, "incomplete_details", None)
    reason = getattr(details, "reason", None) if details is not None else None
    usage = getattr(response, "usage", None)
    return {
        "text": "".join(texts) or None,
        "tool_calls": tool_calls,
        "refusal": "".join(refusals) or None,
        "finish_reasons": [str(reason or status)] if (reason or status) else [],
        "input_tokens": getattr(usage, "input_tokens", None),
        "output_tokens": getattr(usage, "output_tokens", None),
        "response_model": getattr(response, "model", None),
        "response_id": getattr(response, "id", None),
    }


def _finisher(extract: Any, accumulator: type[Accumulator]) -> Any:
    def finish(call: ModelCall, response: Any) -> Any:
        body = _unwrap_raw(response)
        if body is None:
            if is_raw_response(response) and response.http_response.request.headers.get(_RAW_HEADER) == "stream":
                # with_streaming_response: the body stays the host's; observed when it parses it
                return StreamedBody(response, call, extract, accumulator)
            call.abandon()
            return None
        # Read now rather than on the export thread: the fields are a few small objects,
        # where keeping the response alive until the export kept its whole pydantic graph
        # (about twenty objects a call) for the garbage collector to walk again and again.
        call.finish(**extract(body))
        return None

    return finish


class StreamedBody(wrapt.ObjectProxy):  # type: ignore[misc]
    """A ``with_streaming_response`` response, unchanged for the host: the body is read only by
    the host's own ``parse()``, whose stream (or body) is then observed like ``create``'s. Agent
    frameworks (the OpenAI Agents SDK's ``Runner.run_streamed``) stream this way."""

    def __init__(self, wrapped: Any, call: ModelCall, extract: Any, accumulator: type[Accumulator]) -> None:
        super().__init__(wrapped)
        self._self_call = call
        self._self_extract = extract
        self._self_accumulator = accumulator
        self._self_handed = False
        self._self_parsed: Any = None
        self._self_out: Any = None

    def _self_observe(self, parsed: Any) -> Any:
        if self._self_handed:  # parse() again: the SDK hands back its cached body, and so do we
            return self._self_out if parsed is self._self_parsed else parsed
        self._self_handed = True
        call, out = self._self_call, parsed
        with capture_internal_exceptions("openai.streamed_body"):
            import openai

            if isinstance(parsed, (openai.Stream, openai.AsyncStream)):
                acc = self._self_accumulator()
                acc.stream = parsed
                proxy = AsyncStreamProxy if isinstance(parsed, openai.AsyncStream) else SyncStreamProxy
                out = proxy(parsed, call, acc)
            else:
                call.finish(**self._self_extract(parsed))
        if out is parsed:
            call.abandon()  # a no-op when finish ended it
        self._self_parsed, self._self_out = parsed, out
        return out

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        parsed = self.__wrapped__.parse(*args, **kwargs)
        if inspect.isawaitable(parsed):
            async def observed() -> Any:
                return self._self_observe(await parsed)

            return observed()
        return self._self_observe(parsed)

    def close(self) -> Any:
        try:
            return self.__wrapped__.close()
        finally:
            self._self_unread()

    def __del__(self) -> None:
        if not getattr(self, "_self_handed", True):
            self._self_unread()

    def _self_unread(self) -> None:
        """Closed or dropped before the host parsed it: the span ends with the request only."""
        if not self._self_handed:
            with capture_internal_exceptions("openai.streamed_body.end"):
                self._self_call.abandon()


class ChatAccumulator(Accumulator):
    """Chat Completions chunks folded into one response (first choice; fragments joined)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reasons: list[str] = []
        self.usage: Any = None
        self.first: Any = None
        self.last: Any = None

    def on_chunk(self, chunk: Any) -> None:
        # Runs between the host's chunks, dozens of times a call: the common chunk (one choice,
        # a text or argument fragment) takes the fewest lookups and allocates nothing. Model
        # and id are read once, at the end, from the last chunk that has them.
        if self.first is None:
            self.first = chunk
        self.last = chunk
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            self.usage = usage
        for choice in getattr(chunk, "choices", None) or ():
            if getattr(choice, "index", 0) != 0:
                continue
            delta = choice.delta
            if delta is not None:
                if delta.content:
                    self.text.append(delta.content)
                for tc in getattr(delta, "tool_calls", None) or ():
                    slot = self.calls.get(tc.index)
                    if slot is None:
                        slot = self.calls[tc.index] = {"id": None, "name": "", "args": []}
                    if tc.id:
                        slot["id"] = tc.id
                    fn = tc.function
                    if fn is not None:
                        if fn.name:
                            slot["name"] += fn.name
                        if fn.arguments:
                            slot["args"].append(fn.arguments)
                if getattr(delta, "refusal", None):
                    self.refusal.append(delta.refusal)
                legacy = getattr(delta, "function_call", None)
                if legacy is not None:
                    slot = self.calls.setdefault(-1, {"id": None, "name": "", "args": []})
                    if legacy.name:
                        slot["name"] += legacy.name
                    if legacy.arguments:
                        slot["args"].append(legacy.arguments)
            if choice.finish_reason:
                self.finish_reasons.append(choice.finish_reason)

    def _last(self, field: str) -> Any:
        """``field`` of the last chunk, else of the first (some servers fill it in only once)."""
        return getattr(self.last, field, None) or getattr(self.first, field, None) or None

    def result(self) -> dict[str, Any]:
        calls = [
            {"call_id": c["id"], "tool_name": c["name"], "arguments": parse_arguments("".join(c["args"]))}
            for _, c in sorted(self.calls.items())
        ]
        return {
            "text": "".join(self.text) or None,
            "tool_calls": calls,
            "refusal": "".join(self.refusal) or None,
            "finish_reasons": self.finish_reasons,
            "input_tokens": getattr(self.usage, "prompt_tokens", None),
            "output_tokens": getattr(self.usage, "completion_tokens", None),
            "response_model": self._last("model"),
            "response_id": self._last("id"),
        }


class ResponsesAccumulator(Accumulator):
    """Responses stream events: the final ``response`` when it arrives, else the items done."""

    def __init__(self) -> None:
        self.final: Any = None
        self.items: list[Any] = []
        self.text: list[str] = []
        self.refusal: list[str] = []

    @property
    def complete(self) -> bool:
        """The final response arrived: a stream closed after it lost nothing."""
        return self.final is not None

    def on_chunk(self, event: Any) -> None:
        kind = getattr(event, "type", "")
        if kind in {"response.completed", "response.incomplete", "response.failed"}:
            self.final = event.response
        elif kind == "response.output_item.done":
            self.items.append(event.item)
        elif kind == "response.output_text.delta":
            self.text.append(event.delta)
        elif kind == "response.refusal.delta":
            self.refusal.append(event.delta)

    def result(self) -> dict[str, Any]:
        if self.final is not None:
            return responses_finish_kwargs(self.final)
        calls = [
            {"call_id": i.call_id, "tool_name": i.name, "arguments": parse_arguments(i.arguments)}
            for i in self.items
            if getattr(i, "type", None) == "function_call"
        ]
        return {"text": "".join(self.text) or None, "tool_calls": calls, "refusal": "".join(self.refusal) or None}


_finish_chat = _finisher(chat_finish_kwargs, ChatAccumulator)
_finish_responses = _finisher(responses_finish_kwargs, ResponsesAccumulator)


def _streams(kwargs: Mapping[str, Any]) -> bool:
    # A raw (with_raw_response / with_streaming_response) stream is handed back unread.
    return kwargs.get("stream") is True and _raw_mode(kwargs) is None


def _sync(site: str, start: Any, finish: Any, acc: Any) -> Any:
    mode = capture_internal_exceptions(site + ".mode")

    def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        streamed = False
        with mode:
            streamed = _streams(kwargs)
        return observe_sync(site, wrapped, args, kwargs, start, finish, acc if streamed else None)

    return wrapper


def _async(site: str, start: Any, finish: Any, acc: Any) -> Any:
    mode = capture_internal_exceptions(site + ".mode")

    async def wrapper(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        streamed = False
        with mode:
            streamed = _streams(kwargs)
        return await observe_async(site, wrapped, args, kwargs, start, finish, acc if streamed else None)

    return wrapper


def _targets() -> list[tuple[Any, str, Any]]:
    targets: list[tuple[Any, str, Any]] = []
    from openai.resources.chat.completions import completions as chat

    chat_sync = _sync("openai.chat", _start_chat, _finish_chat, ChatAccumulator)
    chat_async = _async("openai.chat", _start_chat, _finish_chat, ChatAccumulator)
    targets += [(chat.Completions, "create", chat_sync), (chat.AsyncCompletions, "create", chat_async)]
    # parse() posts directly, never through create(); stream() calls create(stream=True).
    targets += [(chat.Completions, "parse", chat_sync), (chat.AsyncCompletions, "parse", chat_async)]
    try:  # openai < 1.92 keeps the helpers under beta
        from openai.resources.beta.chat import completions as beta_chat
    except ImportError:
        beta_chat = None
    if beta_chat is not None:
        targets += [
            (beta_chat.Completions, "parse", chat_sync),
            (beta_chat.AsyncCompletions, "parse", chat_async),
        ]
    try:
        from openai.resources.responses import responses as resp
    except ImportError:
        return targets
    resp_sync = _sync("openai.responses", _start_responses, _finish_responses, ResponsesAccumulator)
    resp_async = _async("openai.responses", _start_responses, _finish_responses, ResponsesAccumulator)
    targets += [
        (resp.Responses, "create", resp_sync),
        (resp.AsyncResponses, "create", resp_async),
        (resp.Responses, "parse", resp_sync),
        (resp.AsyncResponses, "parse", resp_async),
    ]
    return targets


def instrument() -> None:
    import openai

    require_version("openai", openai.__version__, MIN_VERSION)
    patch(_targets(), _patched)


def uninstrument() -> None:
    unpatch(_patched)
