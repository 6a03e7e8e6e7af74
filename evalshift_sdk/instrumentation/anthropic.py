"""Instrumentation of the official ``anthropic`` client: Messages ``create``, ``parse``, ``stream``,
on ``client.messages`` and ``client.beta.messages`` alike (same request and response shapes).

``messages.stream()`` posts on its own (not through ``create``), so its stream manager is
observed instead: one span per stream either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import wrapt

from .. import _runtime
from .._guard import capture_internal_exceptions
from .._runtime import get_runtime
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

PROVIDER = "anthropic"
MIN_VERSION = (0, 40)
_RAW_HEADER = "X-Stainless-Raw-Response"

# Request arguments that are not generation settings. Besides transport and content: who is
# billed or calling (ids, credit tokens), and MCP server definitions, which carry their own
# authorization tokens — none of it may reach a capture file.
_NOT_GENERATION = frozenset({
    "messages", "model", "system", "tools", "stream", "extra_headers", "extra_query",
    "extra_body", "timeout", "metadata", "betas", "container", "mcp_servers",
    "fallback_credit_token", "billing_policy", "user_profile_id", "workspace_id", "thread",
})

_patched: list[tuple[Any, str, Any]] = []


def _block_text(content: Any) -> Any:
    if isinstance(content, str) or content is None:
        return content
    texts = [str(as_mapping(b).get("text", "")) for b in content if as_mapping(b).get("type") == "text"]
    return "".join(texts)


def messages_to_semconv(messages: Any) -> list[dict[str, Any]]:
    """Anthropic messages as GenAI semconv messages; ``tool_result`` blocks become ``tool``
    messages of ``tool_call_response`` parts, ``tool_use`` blocks ``tool_call`` parts."""
    out: list[dict[str, Any]] = []
    for raw in messages or []:
        msg = as_mapping(raw)
        role = msg.get("role", "user")
        content = msg.get("content")
        if isinstance(content, str):
            out.append({"role": role, "parts": [text_part(content)]})
            continue
        parts: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for block in content or []:
            b = as_mapping(block)
            kind = b.get("type")
            if kind == "text":
                parts.append(text_part(str(b.get("text", ""))))
            elif kind == "tool_use":
                parts.append(tool_call_part(b.get("id"), b.get("name", ""), b.get("input")))
            elif kind == "tool_result":
                part = tool_response_part(b.get("tool_use_id"), parse_arguments(_block_text(b.get("content"))))
                if b.get("is_error"):
                    part["is_error"] = True
                results.append(part)
        if results:
            out.append({"role": "tool", "parts": results})
        if parts or not results:
            out.append({"role": role, "parts": parts})
    return out


def _system(system: Any) -> list[dict[str, Any]] | None:
    if system is None:
        return None
    text = _block_text(system)
    return [text_part(text)] if text else None


def generation_config_of(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for key, value in kwargs.items():
        if key in _NOT_GENERATION or value is None or is_sentinel(value):
            continue
        config[key] = value if key != "output_format" or not isinstance(value, type) else value.__name__
    choice = config.get("tool_choice")
    if isinstance(choice, Mapping) and choice.get("disable_parallel_tool_use") is not None:
        # Anthropic's opt-out is the same setting as OpenAI's parallel_tool_calls, inverted.
        config["parallel_tool_calls"] = not choice["disable_parallel_tool_use"]
    return config


def _tool_param(tool: Any) -> Mapping[str, Any]:
    """One offered tool as the ``tools[]`` entry the SDK sends: ``@beta_tool`` functions and
    other tool objects serialise themselves through ``to_dict()``."""
    if isinstance(tool, Mapping):
        return tool
    to_dict = getattr(tool, "to_dict", None)
    if callable(to_dict) and not hasattr(tool, "model_dump"):
        return as_mapping(to_dict())
    return as_mapping(tool)


def _describe(
    request: Mapping[str, Any], messages: list[Any] | None, system: Any, tools: list[Any] | None
) -> dict[str, Any]:
    return {
        "input_messages": messages_to_semconv(messages) if messages is not None else None,
        "system_instructions": _system(system),
        "tools": [_tool_param(t) for t in tools] if tools is not None else None,
        "generation_config": generation_config_of(request),
    }


def _start_from(kwargs: Mapping[str, Any], streamed: bool) -> ModelCall | None:
    # References only; the conversion runs on the export thread (see ``_genai.Deferred``).
    system = given(kwargs, "system")
    if system is not None and not isinstance(system, str):
        system = snapshot(system)
    request = (_describe, dict(kwargs), snapshot(kwargs.get("messages")), system, snapshot(kwargs.get("tools")))
    return ModelCall.start(provider=PROVIDER, model=given(kwargs, "model"), streamed=streamed, request=request)


def _start(args: Any, kwargs: Mapping[str, Any]) -> ModelCall | None:
    return _start_from(kwargs, kwargs.get("stream") is True)


def finish_kwargs(message: Any) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in getattr(message, "content", None) or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            texts.append(block.text)
        elif kind == "tool_use":
            calls.append({"call_id": block.id, "tool_name": block.name, "arguments": block.input})
    stop = getattr(message, "stop_reason", None)
    text = "".join(texts) or None
    usage = getattr(message, "usage", None)
    return {
        "text": text,
        "tool_calls": calls,
        "refusal": (text or "refusal") if stop == "refusal" else None,
        "finish_reasons": [stop] if stop else [],
        "input_tokens": getattr(usage, "input_tokens", None),
        "output_tokens": getattr(usage, "output_tokens", None),
        "response_model": getattr(message, "model", None),
        "response_id": getattr(message, "id", None),
    }


def _finish(call: ModelCall, response: Any) -> None:
    if is_raw_response(response):
        # with_raw_response: the body is already read and parse() is cached by the SDK, so
        # the host gets the same object; with_streaming_response ("stream") is left unread.
        mode = response.http_response.request.headers.get(_RAW_HEADER)
        if mode == "stream" or response.http_response.is_stream_consumed is False:
            call.abandon()
            return
        response = response.parse()
        if not hasattr(response, "content"):
            call.abandon()  # a raw stream: reading it would take it from the host
            return
    call.finish(**finish_kwargs(response))


class MessagesAccumulator(Accumulator):
    """Raw Messages stream events folded into one message (``input_json_delta`` joined)."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stop: str | None = None
        self.model: str | None = None
        self.id: str | None = None
        self.input_tokens: int | None = None
        self.output_tokens: int | None = None

    def on_chunk(self, event: Any) -> None:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            message = event.message
            self.model, self.id = message.model, message.id
            usage = getattr(message, "usage", None)
            self.input_tokens = getattr(usage, "input_tokens", None)
            self.output_tokens = getattr(usage, "output_tokens", None)
        elif kind == "content_block_start":
            block = event.content_block
            self.blocks[event.index] = {
                "type": block.type,
                "id": getattr(block, "id", None),
                "name": getattr(block, "name", None),
                "text": [getattr(block, "text", "") or ""],
                "json": [],
            }
        elif kind == "content_block_delta":
            slot = self.blocks.get(event.index)
            if slot is None:
                return
            delta = event.delta
            if delta.type == "text_delta":
                slot["text"].append(delta.text)
            elif delta.type == "input_json_delta":
                slot["json"].append(delta.partial_json)
        elif kind == "message_delta":
            self.stop = getattr(event.delta, "stop_reason", None) or self.stop
            usage = getattr(event, "usage", None)
            if getattr(usage, "output_tokens", None) is not None:
                self.output_tokens = usage.output_tokens

    def result(self) -> dict[str, Any]:
        # messages.stream()'s MessageStream: text_stream and get_final_message() read it
        # directly, past the proxy, so its own snapshot is the complete record.
        snapshot = None
        if hasattr(type(self.stream), "current_message_snapshot"):
            try:
                snapshot = self.stream.current_message_snapshot
            except Exception:  # noqa: BLE001 - asserts before the first event arrived
                snapshot = None
        if snapshot is not None:
            return finish_kwargs(snapshot)
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        for _, b in sorted(self.blocks.items()):
            if b["type"] == "text":
                texts.append("".join(b["text"]))
            elif b["type"] == "tool_use":
                calls.append({"call_id": b["id"], "tool_name": b["name"], "arguments": parse_arguments("".join(b["json"]))})
        text = "".join(texts) or None
        return {
            "text": text,
            "tool_calls": calls,
            "refusal": (text or "refusal") if self.stop == "refusal" else None,
            "finish_reasons": [self.stop] if self.stop else [],
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "response_model": self.model,
            "response_id": self.id,
        }


def _streams(kwargs: Mapping[str, Any]) -> bool:
    headers = kwargs.get("extra_headers")
    raw = isinstance(headers, Mapping) and headers.get(_RAW_HEADER) is not None
    return kwargs.get("stream") is True and not raw


def _create(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    streamed = False
    with capture_internal_exceptions("anthropic.messages.mode"):
        streamed = _streams(kwargs)
    acc = MessagesAccumulator if streamed else None
    return observe_sync("anthropic.messages", wrapped, args, kwargs, _start, _finish, acc)


async def _acreate(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    streamed = False
    with capture_internal_exceptions("anthropic.messages.mode"):
        streamed = _streams(kwargs)
    acc = MessagesAccumulator if streamed else None
    return await observe_async("anthropic.messages", wrapped, args, kwargs, _start, _finish, acc)


class _StreamManagerProxy(wrapt.ObjectProxy):  # type: ignore[misc]
    """``messages.stream()``'s manager: the request is made on ``__enter__``; the stream the
    host gets back is proxied, and the span ends when the manager exits at the latest.

    Observing the manager (not the request inside it) works across releases: anthropic < 0.4x
    rebuilds its MessageStream from the raw response, dropping any wrapper put around that.
    """

    def __init__(self, wrapped: Any, kwargs: Mapping[str, Any]) -> None:
        super().__init__(wrapped)
        self._self_kwargs = kwargs
        self._self_stream: Any = None

    def _self_start(self) -> ModelCall | None:
        call = None
        with capture_internal_exceptions("anthropic.messages.stream.request"):
            call = _start_from(self._self_kwargs, True)
        return call

    def _self_observe(self, call: ModelCall | None, stream: Any, proxy_cls: Any) -> Any:
        if call is None:
            return stream
        out = stream
        with capture_internal_exceptions("anthropic.messages.stream.response"):
            acc = MessagesAccumulator()
            acc.stream = stream
            out = self._self_stream = proxy_cls(stream, call, acc)
        if out is stream:
            call.abandon()
        return out

    def _self_end(self, exc: BaseException | None) -> None:
        proxy, self._self_stream = self._self_stream, None
        if proxy is not None:
            proxy._self_end(exc, incomplete=False)

    def __enter__(self) -> Any:
        call = self._self_start()
        try:
            stream = self.__wrapped__.__enter__()
        except BaseException as exc:
            if call is not None:
                with capture_internal_exceptions("anthropic.messages.stream.error"):
                    call.fail(exc)
            raise
        return self._self_observe(call, stream, SyncStreamProxy)

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        try:
            return self.__wrapped__.__exit__(exc_type, exc, tb)
        finally:
            self._self_end(exc)

    async def __aenter__(self) -> Any:
        call = self._self_start()
        try:
            stream = await self.__wrapped__.__aenter__()
        except BaseException as exc:
            if call is not None:
                with capture_internal_exceptions("anthropic.messages.stream.error"):
                    call.fail(exc)
            raise
        return self._self_observe(call, stream, AsyncStreamProxy)

    async def __aexit__(self, exc_type: Any, exc: Any, tb: Any) -> Any:
        try:
            return await self.__wrapped__.__aexit__(exc_type, exc, tb)
        finally:
            self._self_end(exc)


def _stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    manager = wrapped(*args, **kwargs)
    out = manager
    with capture_internal_exceptions("anthropic.messages.stream"):
        if get_runtime() is not None:
            out = _StreamManagerProxy(manager, kwargs)
    return out


def _targets(sync: Any, aio: Any) -> list[tuple[Any, str, Any]]:
    # ``patch`` skips a method the class does not define (``parse`` and the beta ``stream``
    # arrived after 0.40), so an older release is patched for what it has.
    return [
        (sync, "create", _create),
        (aio, "create", _acreate),
        (sync, "parse", _create),
        (aio, "parse", _acreate),
        (sync, "stream", _stream),
        (aio, "stream", _stream),
    ]


def _beta_classes() -> tuple[Any, Any] | None:
    """``client.beta.messages``' resource classes, or None on a release without them."""
    try:
        from anthropic.resources.beta.messages import AsyncMessages, Messages
    except ImportError:
        return None
    return Messages, AsyncMessages


def _tool_arguments(args: Any, kwargs: Mapping[str, Any]) -> dict[str, Any]:
    value = args[0] if args else kwargs.get("input")
    return dict(value) if isinstance(value, Mapping) else {"input": value}


def _start_tool(instance: Any, args: Any, kwargs: Mapping[str, Any]) -> Any:
    """The execution span of a ``@beta_tool`` function the SDK's tool runner calls, unless the
    function is an ``@evalshift_sdk.tool`` already (then it records itself)."""
    span = None
    with capture_internal_exceptions("anthropic.tool.start"):
        if get_runtime() is not None and not _runtime.is_recorded(getattr(instance, "func", None)):
            span, _, _ = _runtime.tool_span(str(instance.name), _tool_arguments(args, kwargs), None)
    return span


def _end_tool(span: Any, result: Any, error: BaseException | None) -> None:
    if span is not None:
        with capture_internal_exceptions("anthropic.tool.end"):
            _runtime.finish_tool_span(span, result, error)


def _tool_call(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    span = _start_tool(instance, args, kwargs)
    try:
        result = wrapped(*args, **kwargs)
    except BaseException as exc:
        _end_tool(span, _runtime.MISSING, exc)
        raise
    _end_tool(span, result, None)
    return result


async def _atool_call(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    span = _start_tool(instance, args, kwargs)
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        _end_tool(span, _runtime.MISSING, exc)
        raise
    _end_tool(span, result, None)
    return result


def _implicit_turn() -> Any:
    """Outside any turn, the tool runner's rounds and executions still form one turn (as
    google-genai's automatic function calling does), rather than one turn per round."""
    scope = None
    with capture_internal_exceptions("anthropic.runner"):
        scope = _runtime.implicit_turn()
    return scope


def _rounds_in_turn(rounds: Any) -> Any:
    # Decided at the first round, not when the runner is made: it may be iterated in a turn.
    scope = _implicit_turn()
    if scope is None:
        return (yield from rounds)
    with scope:
        return (yield from rounds)


async def _arounds_in_turn(rounds: Any) -> Any:
    scope = _implicit_turn()
    try:
        if scope is None:
            async for item in rounds:
                yield item
            return
        with scope:
            async for item in rounds:
                yield item
    finally:
        await rounds.aclose()  # closing the runner early closes its own loop too


def _runner_rounds(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return _rounds_in_turn(wrapped(*args, **kwargs))


def _arunner_rounds(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return _arounds_in_turn(wrapped(*args, **kwargs))


def _function_tool_classes() -> list[tuple[Any, str, Any]]:
    """``@beta_tool`` functions' ``call``, which the beta tool runner uses to execute them, and
    the runner's loop (on releases that have the runner)."""
    try:
        from anthropic.lib.tools import BetaAsyncFunctionTool, BetaFunctionTool
    except ImportError:
        return []
    targets = [(BetaFunctionTool, "call", _tool_call), (BetaAsyncFunctionTool, "call", _atool_call)]
    try:
        from anthropic.lib.tools._beta_runner import BaseAsyncToolRunner, BaseSyncToolRunner
    except ImportError:
        return targets
    # The runner's loop: its rounds run inside this generator, whichever method drives it.
    return targets + [(BaseSyncToolRunner, "__run__", _runner_rounds), (BaseAsyncToolRunner, "__run__", _arunner_rounds)]


def instrument() -> None:
    import anthropic

    require_version("anthropic", anthropic.__version__, MIN_VERSION)
    # A package since 0.4x, a module before: both export the two resource classes.
    from anthropic.resources.messages import AsyncMessages, Messages

    targets = _targets(Messages, AsyncMessages)
    beta = _beta_classes()
    if beta is not None:
        targets += _targets(*beta)
    patch(targets + _function_tool_classes(), _patched)


def uninstrument() -> None:
    unpatch(_patched)
