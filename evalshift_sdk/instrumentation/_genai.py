"""Provider-neutral span bookkeeping shared by every instrumentation.

The provider modules turn their SDK's request and response into plain values; this module
turns those values into one ``chat {model}`` span per model call (streams are proxied by
``_streams``). What can wait (message conversion, toolset hashing, JSON) waits for the export
thread (``Deferred``).
"""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import orjson
import wrapt
from opentelemetry.trace import SpanKind, Status, StatusCode

from .. import schema as A
from .._guard import capture_internal_exceptions
from .._jsonsafe import dumps
from .._runtime import current_turn, error_text, get_runtime
from .._spans import CaptureSpan
from ..schema import normalise_toolset, toolset_ref
from ._streams import Accumulator, AsyncStreamProxy, SyncStreamProxy

_SENTINEL_NAMES = frozenset({"Omit", "NotGiven", "_NotGiven", "_Omit", "NotGivenOr"})


def is_sentinel(value: Any) -> bool:
    """The provider SDKs' "not given" markers (openai/anthropic ``Omit``/``NotGiven``)."""
    return type(value).__name__ in _SENTINEL_NAMES


def given(kwargs: Mapping[str, Any], key: str) -> Any:
    """``kwargs[key]`` unless it is missing, None or an SDK's not-given sentinel."""
    value = kwargs.get(key)
    return None if value is None or is_sentinel(value) else value


def parse_arguments(raw: Any) -> Any:
    """Tool-call arguments as a value; text that is not JSON is kept as text."""
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw) if raw else {}
    except orjson.JSONDecodeError:
        return raw


def as_mapping(value: Any) -> Mapping[str, Any]:
    """A plain mapping view of a request item (dicts pass through; SDK models are dumped)."""
    if type(value) is dict:  # nearly always: ahead of the slower abstract-class check
        return value
    if isinstance(value, Mapping):
        return value
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(exclude_none=True)
    return {}


def is_raw_response(value: Any) -> bool:
    """A ``with_raw_response`` / ``with_streaming_response`` wrapper rather than the parsed body.

    Looked up in the instance dict: ``hasattr`` on a pydantic response model goes through its
    ``__getattr__`` and an exception, several microseconds on every call.
    """
    return "http_response" in (getattr(value, "__dict__", None) or ())


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "content": text}


def tool_call_part(call_id: str | None, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def tool_response_part(call_id: str | None, response: Any) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, "response": response}


# Normalising and hashing a toolset costs more than the rest of a call's bookkeeping, and an
# agent offers the same few toolsets over and over: cache by the serialised bytes, which is
# exact (a toolset mutated in place serialises differently) and cheap for orjson.
_TOOLSET_CACHE_MAX = 512
_toolset_cache: dict[bytes, tuple[list[dict[str, Any]], str]] = {}
_toolset_cache_lock = threading.Lock()


def _reinit_after_fork() -> None:
    global _toolset_cache_lock
    _toolset_cache_lock = threading.Lock()  # a parent thread may have held it at fork time


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reinit_after_fork)


def toolset_of(tools: list[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """The normalised toolset and its ``sha256:`` ref, cached by the raw tools' JSON bytes."""
    try:
        key: bytes | None = orjson.dumps(tools)
    except TypeError:
        key = None
    if key is not None:
        hit = _toolset_cache.get(key)
        if hit is not None:
            return hit
    normalised = normalise_toolset(tools)
    entry = (normalised, toolset_ref(normalised))
    if key is not None:
        with _toolset_cache_lock:
            if len(_toolset_cache) >= _TOOLSET_CACHE_MAX:
                _toolset_cache.clear()
            _toolset_cache[key] = entry
    return entry


def snapshot(value: Any) -> list[Any] | None:
    """A shallow copy of a request's list (messages, tools), taken on the caller's thread so
    the host may append to its own list right after the call.

    None when there is nothing to copy, and for a one-shot iterator: that is the host's to
    consume, and reading it here would send the provider an empty list.
    """
    if value is None or is_sentinel(value) or isinstance(value, (str, bytes)):
        return None
    if isinstance(value, (list, tuple)):
        return list(value)
    try:
        if iter(value) is value:
            return None
    except TypeError:
        return None
    return list(value)


class Deferred:
    """The part of a model call's bookkeeping that runs on the export thread.

    The caller's thread keeps references (a copy of the request's keyword arguments and
    shallow copies of its lists), the response's fields and timestamps; converting the request
    to GenAI semconv messages, normalising and hashing the toolset and JSON-encoding every
    structured attribute happen when the batch is exported. Measured between the host's own
    client work, that conversion costs about 2.5x what it does in a tight loop (a cold
    cache), so on the caller's thread it was most of our cost per call; the exporter pays it
    in batches, off the host's path.

    It travels inside the span's attributes under ``A.DEFERRED`` and :meth:`resolve` replaces
    it with the attributes it stands for; each half is guarded, so a fault in one still
    exports the span with the rest.
    """

    __slots__ = ("rt", "attributes", "request", "response", "latency_s")

    def __init__(self, rt: Any, attributes: dict[str, Any], request: Any) -> None:
        self.rt = rt
        self.attributes = attributes
        self.request = request
        self.response: dict[str, Any] | None = None
        self.latency_s: float | None = None

    def resolve(self) -> None:
        attrs = self.attributes
        attrs.pop(A.DEFERRED, None)
        if self.latency_s is not None:
            attrs[A.LATENCY_MS] = round(self.latency_s * 1000.0, 3)
        with capture_internal_exceptions("export.request"):
            request = self.request
            if isinstance(request, tuple):
                describe, *args = request
                request = describe(*args)
            attrs.update(_request_attributes(self.rt, **request))
        if self.response is not None:
            with capture_internal_exceptions("export.response"):
                attrs.update(_response_attributes(**self.response))
        self.request = self.response = None  # nothing of the host's outlives the export


def _request_attributes(
    rt: Any,
    *,
    input_messages: list[dict[str, Any]] | None = None,
    system_instructions: list[dict[str, Any]] | None = None,
    tools: Iterable[Mapping[str, Any]] | None = None,
    generation_config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {}
    if input_messages is not None:
        attrs[A.INPUT_MESSAGES] = dumps(input_messages)
    if system_instructions:
        attrs[A.SYSTEM_INSTRUCTIONS] = dumps(system_instructions)
    if tools is not None:
        normalised, ref = toolset_of(list(tools))
        rt.toolsets.offer(ref, normalised)
        attrs[A.TOOLSET_REF] = ref
    if generation_config:
        attrs[A.GENERATION_CONFIG] = dumps(dict(generation_config))
    return attrs


def _response_attributes(
    *,
    text: str | None,
    tool_calls: list[dict[str, Any]],
    refusal: str | None = None,
    finish_reasons: list[str] | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    response_model: str | None = None,
    response_id: str | None = None,
    incomplete: bool = False,
) -> dict[str, Any]:
    attrs: dict[str, Any] = {A.REQUESTED_TOOL_CALLS: dumps(tool_calls)}
    if response_model:
        attrs[A.RESPONSE_MODEL] = str(response_model)
    if response_id:
        attrs[A.RESPONSE_ID] = str(response_id)
    if finish_reasons:
        attrs[A.FINISH_REASONS] = [str(r) for r in finish_reasons]
    if input_tokens is not None:
        attrs[A.INPUT_TOKENS] = int(input_tokens)
    if output_tokens is not None:
        attrs[A.OUTPUT_TOKENS] = int(output_tokens)
    if text:
        attrs[A.OUTPUT_TEXT] = text
    if refusal:
        attrs[A.REFUSAL] = refusal
    if incomplete:
        attrs[A.STREAM_INCOMPLETE] = True
    parts: list[dict[str, Any]] = []
    if text:
        parts.append(text_part(text))
    if refusal:
        parts.append({"type": "refusal", "content": refusal})
    for call in tool_calls:
        parts.append(tool_call_part(call.get("call_id"), call["tool_name"], call.get("arguments")))
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    if finish_reasons:
        message["finish_reason"] = finish_reasons[0]
    attrs[A.OUTPUT_MESSAGES] = dumps([message])
    return attrs


class ModelCall:
    """One model call in flight: its span, the turn it belongs to and its start time."""

    __slots__ = ("span", "turn", "t0", "ended", "deferred")

    def __init__(self, span: Any, turn: Any, t0: float, deferred: Deferred) -> None:
        self.span = span
        self.turn = turn
        self.t0 = t0
        self.ended = False
        self.deferred = deferred

    @classmethod
    def start(
        cls,
        *,
        provider: str,
        model: Any,
        input_messages: list[dict[str, Any]] | None = None,
        tools: Iterable[Mapping[str, Any]] | None = None,
        generation_config: Mapping[str, Any] | None = None,
        system_instructions: list[dict[str, Any]] | None = None,
        streamed: bool = False,
        request: tuple[Any, ...] | None = None,
    ) -> ModelCall | None:
        """Open a model call's span.

        ``request`` is ``(describe, *references)``: on the export thread,
        ``describe(*references)`` returns the request's ``input_messages``,
        ``system_instructions``, ``tools`` and ``generation_config`` (a tuple rather than a
        closure: one object for the garbage collector instead of a function and its cells).
        Without it, those are given already converted.
        """
        rt = get_runtime()
        if rt is None:
            return None
        turn = current_turn()
        if turn is not None:
            if not turn.sampled:
                return None
        elif rt.sample_rate < 1.0 and random.random() >= rt.sample_rate:
            return None  # a call outside any turn is its own turn, sampled on its own
        attrs: dict[str, Any] = {A.OPERATION: A.OP_CHAT, A.PROVIDER: provider}
        if model is not None:
            attrs[A.REQUEST_MODEL] = str(model)
        if streamed:
            attrs[A.STREAMED] = True
        parent = None
        if turn is not None:
            parent = turn.span
        else:
            # A call outside any turn is a turn of its own; never a child of the host's spans.
            attrs[A.IMPLICIT_TURN] = True
        if request is None:
            request = {
                "input_messages": input_messages,
                "system_instructions": system_instructions,
                "tools": tools,
                "generation_config": generation_config,
            }
        deferred = attrs[A.DEFERRED] = Deferred(rt, attrs, request)
        name = f"chat {model}" if model else "chat"
        return cls(CaptureSpan(rt, name, parent, attrs, SpanKind.CLIENT), turn, time.perf_counter(), deferred)

    def finish(self, **fields: Any) -> None:
        """Record the response: the keyword arguments of :func:`_response_attributes`, where
        ``tool_calls`` are ``{call_id, tool_name, arguments}`` dicts."""
        if self.ended:
            return
        self.ended = True
        try:
            self.deferred.latency_s = time.perf_counter() - self.t0
            self.deferred.response = fields
            if self.turn is not None and fields.get("tool_calls"):
                self.turn.add_requested(fields["tool_calls"])
        finally:
            # Whatever the extraction did, the span ends once: an open span would leak.
            self.span.end()

    def fail(self, exc: BaseException) -> None:
        """Record the host's exception (span status and error type); the host still gets it."""
        if self.ended:
            return
        self.ended = True
        try:
            self.deferred.latency_s = time.perf_counter() - self.t0
            self.span.set_attribute(A.ERROR_TYPE, type(exc).__qualname__)
            self.span.set_status(Status(StatusCode.ERROR, error_text(exc, 500)))
        finally:
            self.span.end()

    def abandon(self) -> None:
        """End the span without a response (our own bookkeeping failed mid-way)."""
        if not self.ended:
            self.ended = True
            self.span.end()


Start = Callable[[tuple[Any, ...], dict[str, Any]], "ModelCall | None"]
Finish = Callable[[ModelCall, Any], Any]


class _Guards:
    """The four guards around one call site, made once per site rather than per call."""

    __slots__ = ("request", "error", "response", "end")

    def __init__(self, site: str) -> None:
        self.request = capture_internal_exceptions(site + ".request")
        self.error = capture_internal_exceptions(site + ".error")
        self.response = capture_internal_exceptions(site + ".response")
        self.end = capture_internal_exceptions(site + ".end")


_guards: dict[str, _Guards] = {}


def _guards_for(site: str) -> _Guards:
    guards = _guards.get(site)
    if guards is None:
        guards = _guards[site] = _Guards(site)
    return guards


def observe_sync(
    site: str,
    wrapped: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    start: Start,
    finish: Finish,
    accumulator: Callable[[], Accumulator] | None = None,
) -> Any:
    """Call ``wrapped`` for the host with our bookkeeping guarded on both sides.

    Only ``wrapped(*args, **kwargs)`` runs outside the guard; the host's exception is re-raised
    bare. With ``accumulator`` the result is a stream and comes back proxied.
    """
    call: ModelCall | None = None
    guards = _guards_for(site)
    with guards.request:
        call = start(args, kwargs)
    if call is None:
        return wrapped(*args, **kwargs)
    try:
        result = wrapped(*args, **kwargs)
    except BaseException as exc:
        with guards.error:
            call.fail(exc)
        raise
    return _respond(guards, call, result, finish, accumulator, SyncStreamProxy)


async def observe_async(
    site: str,
    wrapped: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    start: Start,
    finish: Finish,
    accumulator: Callable[[], Accumulator] | None = None,
) -> Any:
    """The async twin of :func:`observe_sync`."""
    call: ModelCall | None = None
    guards = _guards_for(site)
    with guards.request:
        call = start(args, kwargs)
    if call is None:
        return await wrapped(*args, **kwargs)
    try:
        result = await wrapped(*args, **kwargs)
    except BaseException as exc:
        with guards.error:
            call.fail(exc)
        raise
    return _respond(guards, call, result, finish, accumulator, AsyncStreamProxy)


def _respond(
    guards: _Guards,
    call: ModelCall,
    result: Any,
    finish: Finish,
    accumulator: Callable[[], Accumulator] | None,
    proxy_cls: type[wrapt.ObjectProxy],
) -> Any:
    out = result
    try:
        with guards.response:
            if accumulator is not None:
                acc = accumulator()
                acc.stream = result
                out = proxy_cls(result, call, acc)
            else:
                replacement = finish(call, result)
                if replacement is not None:  # a proxy of the result that observes it later
                    out = replacement
    finally:
        if out is result:
            with guards.end:
                call.abandon()  # a no-op when finish already ended it
    return out
