"""Process-wide capture state: the span queue, turns, and the executed side.

Our spans never go through a tracer provider, so the host's own OpenTelemetry setup (and any
provider SDK that emits spans through the global provider) is left untouched.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import random
import threading
from collections.abc import Callable, Mapping
from contextlib import ContextDecorator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from . import schema as A
from ._guard import capture_internal_exceptions
from ._jsonsafe import dumps

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Runtime:
    exporter: Any
    toolsets: Any
    capture_dir: str
    sample_rate: float = 1.0
    processor: Any = None
    """The queue our finished spans go to, for the export thread (``_spans.SpanQueue``)."""
    resource: Any = None
    scope: Any = None
    span_type: Any = None
    """``_spans.CaptureSpan``, given by ``init()`` so that importing the SDK never loads
    OpenTelemetry's SDK."""
    record_exception_text: bool = True
    """False: an error is recorded as its exception type only, never its message."""


_runtime: Runtime | None = None
runtime_lock = threading.RLock()


def get_runtime() -> Runtime | None:
    return _runtime


def set_runtime(rt: Runtime | None) -> None:
    global _runtime
    _runtime = rt


@dataclass
class RequestedCall:
    call_id: str | None
    tool_name: str
    arguments: Any
    executed: bool = False


@dataclass
class TurnState:
    """What one agent turn keeps while it is open; dropped when the turn ends."""

    span: Any
    sampled: bool
    requested: list[RequestedCall] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add_requested(self, calls: list[dict[str, Any]]) -> None:
        with self.lock:
            for c in calls:
                self.requested.append(RequestedCall(c.get("call_id"), c["tool_name"], c.get("arguments")))

    def link(self, name: str, arguments: Any, call_id: str | None) -> str | None:
        """Claim the requested call this execution answers: by id, else by name and arguments."""
        with self.lock:
            if call_id is not None:
                for rc in self.requested:
                    if rc.call_id == call_id:
                        rc.executed = True
                        return call_id
                return call_id
            fallback: RequestedCall | None = None
            for rc in self.requested:
                if rc.executed or rc.tool_name != name:
                    continue
                if rc.arguments == arguments:
                    rc.executed = True
                    return rc.call_id
                if fallback is None:
                    fallback = rc
            if fallback is not None:
                fallback.executed = True
                return fallback.call_id
            return None


_current_turn: contextvars.ContextVar[TurnState | None] = contextvars.ContextVar(
    "evalshift_turn", default=None
)


def current_turn() -> TurnState | None:
    return _current_turn.get()


_TURN_START = capture_internal_exceptions("turn.start")
_TURN_ERROR = capture_internal_exceptions("turn.error")
_TURN_END = capture_internal_exceptions("turn.end")


def _open_turn(
    rt: Runtime, prompt_id: str | None, inputs: Mapping[str, Any] | None, tags: Any, implicit: bool
) -> TurnState:
    sampled = rt.sample_rate >= 1.0 or random.random() < rt.sample_rate
    span = None
    if sampled:
        attrs: dict[str, Any] = {A.OPERATION: A.OP_INVOKE_AGENT}
        if prompt_id is not None:
            attrs[A.PROMPT_ID] = str(prompt_id)
            attrs[A.AGENT_NAME] = str(prompt_id)
        if inputs is not None:
            attrs[A.INPUTS] = dumps(dict(inputs))
        if tags:
            attrs[A.TAGS] = [str(t) for t in tags]
        if implicit:
            attrs[A.IMPLICIT_TURN] = True
        name = f"invoke_agent {prompt_id}" if prompt_id else "invoke_agent"
        # A new trace per turn, never a child of the host's current span: ingest groups by
        # trace, and two turns inside one host request must stay two captures.
        span = rt.span_type(rt, name, None, attrs)
    return TurnState(span=span, sampled=sampled)


class turn(ContextDecorator):  # noqa: N801 - the public ``evalshift_sdk.turn(...)``, used like a function
    """Group the model calls and tool executions inside the block into one captured agent turn.

    A class rather than a ``@contextmanager`` generator: one opens and closes around every
    turn, and a plain ``__enter__``/``__exit__`` pair costs a fraction of the generator's.
    """

    def __init__(
        self,
        prompt_id: str | None = None,
        *,
        inputs: Mapping[str, Any] | None = None,
        tags: list[str] | tuple[str, ...] | None = None,
        _implicit: bool = False,
    ) -> None:
        self._args = (prompt_id, inputs, tags, _implicit)
        self._state: TurnState | None = None
        self._token: Any = None

    def _recreate_cm(self) -> turn:
        # As a decorator: a turn of its own for each call.
        prompt_id, inputs, tags, implicit = self._args
        return type(self)(prompt_id, inputs=inputs, tags=tags, _implicit=implicit)

    def __enter__(self) -> None:
        rt = _runtime
        state = None
        with _TURN_START:
            if rt is not None:
                state = _open_turn(rt, *self._args)
        self._state = state
        self._token = _current_turn.set(state) if state is not None else None

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> bool:
        state, token = self._state, self._token
        if exc is not None:
            with _TURN_ERROR:
                # A generator closed early (the host stopped reading a stream) is not a failure.
                if state is not None and state.span is not None and not isinstance(exc, GeneratorExit):
                    _mark_error(state.span, exc)
        if token is not None:
            try:
                _current_turn.reset(token)
            except ValueError:
                # Closed from another context (a generator finalised elsewhere): that context
                # never saw this turn, so there is nothing to restore there.
                pass
        with _TURN_END:
            if state is not None and state.span is not None:
                state.span.end()
                state.requested.clear()
        return False


def implicit_turn() -> Any:
    """A turn for rounds that belong together but run outside any turn (a provider SDK's own
    tool loop), or None when capture is off or a turn is already open."""
    if _runtime is None or _current_turn.get() is not None:
        return None
    return turn(_implicit=True)


def error_text(error: BaseException | str, limit: int) -> str:
    """What an error records as its message: its text, or only its type when the runtime was
    started with ``record_exception_text=False`` (a string error is then ``ToolError``)."""
    rt = _runtime
    if rt is not None and not rt.record_exception_text:
        return type(error).__qualname__ if isinstance(error, BaseException) else "ToolError"
    return str(error)[:limit]


def _mark_error(span: Any, exc: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.set_status(Status(StatusCode.ERROR, error_text(exc, 500)))
    span.set_attribute(A.ERROR_TYPE, type(exc).__qualname__)


def run_in_turn(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Bind ``fn`` to the caller's current turn, for work handed to a thread pool.

    ``pool.submit(evalshift_sdk.run_in_turn(work), item)`` keeps ``work``'s model calls in the
    turn that submitted it (a new thread otherwise starts with no turn).
    """
    ctx = contextvars.copy_context()

    @functools.wraps(fn)
    def bound(*args: Any, **kwargs: Any) -> Any:
        return ctx.copy().run(fn, *args, **kwargs)

    return bound


def is_failed_result(result: Any) -> bool:
    """A result like ``{"success": false}`` counts as a failed tool call."""
    return isinstance(result, Mapping) and result.get("success") is False


MISSING: Any = object()
"""The result of a tool execution that raised (``None`` is a result like any other)."""


def tool_span(
    name: str, arguments: Any, call_id: str | None
) -> tuple[Any, TurnState | None, Any]:
    """Open the ``execute_tool`` span of one execution, linked to the call the model requested:
    ``(span, turn, call id)``, or Nones when capture is off or the turn is not sampled."""
    rt = _runtime
    if rt is None:
        return None, None, None
    state = _current_turn.get()
    if state is not None and not state.sampled:
        return None, None, None
    linked = state.link(name, arguments, call_id) if state is not None else call_id
    attrs: dict[str, Any] = {
        A.OPERATION: A.OP_EXECUTE_TOOL,
        A.TOOL_NAME: name,
        A.TOOL_CALL_ARGUMENTS: dumps(arguments),
    }
    if linked is not None:
        attrs[A.TOOL_CALL_ID] = str(linked)
    span = rt.span_type(rt, f"execute_tool {name}", state.span if state else None, attrs)
    return span, state, linked


def finish_tool_span(span: Any, result: Any, error: BaseException | str | None) -> None:
    """Record an execution's result (or error) on its span and end it."""
    from opentelemetry.trace import Status, StatusCode

    if error is not None:
        message = error_text(error, 2000)
        span.set_attribute(A.TOOL_ERROR, message)
        span.set_attribute(A.TOOL_FAILED, True)
        span.set_attribute(
            A.ERROR_TYPE, type(error).__qualname__ if isinstance(error, BaseException) else "ToolError"
        )
        span.set_status(Status(StatusCode.ERROR, message[:500]))
    elif result is not MISSING:
        span.set_attribute(A.TOOL_CALL_RESULT, dumps(result))
        if is_failed_result(result):
            span.set_attribute(A.TOOL_FAILED, True)
    span.end()


def record_tool(
    name: str,
    arguments: Mapping[str, Any] | None = None,
    *,
    result: Any = MISSING,
    error: BaseException | str | None = None,
    call_id: str | None = None,
) -> None:
    """Record one tool execution the application ran itself (the executed side)."""
    with capture_internal_exceptions("record_tool"):
        span, _, _ = tool_span(name, dict(arguments or {}), call_id)
        if span is not None:
            finish_tool_span(span, result, error)


def is_recorded(fn: Any) -> bool:
    """``fn`` is (or wraps, through ``functools.wraps`` layers) an ``@evalshift_sdk.tool``."""
    for _ in range(32):  # a __wrapped__ chain is short; a cycle must not hang the host
        if getattr(fn, "__evalshift_tool__", False) is True:
            return True
        fn = getattr(fn, "__wrapped__", None)
        if fn is None:
            return False
    return False


def tool(fn: F | None = None, *, name: str | None = None) -> Any:
    """Decorate a tool function (sync or async) so each execution is captured."""

    def decorate(func: F) -> F:
        tool_name = name or func.__name__
        try:
            signature: inspect.Signature | None = inspect.signature(func)
        except (TypeError, ValueError):
            signature = None

        def arguments_of(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
            if signature is None:
                return {"args": list(args), **kwargs}
            bound = signature.bind_partial(*args, **kwargs)
            return dict(bound.arguments)

        def start(args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            span = None
            with capture_internal_exceptions("tool.start"):
                if _runtime is not None:
                    span, _, _ = tool_span(tool_name, arguments_of(args, kwargs), None)
            return span

        def finish(span: Any, result: Any, error: BaseException | None) -> None:
            if span is None:
                return
            with capture_internal_exceptions("tool.finish"):
                finish_tool_span(span, result, error)

        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                span = start(args, kwargs)
                try:
                    result = await func(*args, **kwargs)
                except BaseException as exc:
                    finish(span, MISSING, exc)
                    raise
                finish(span, result, None)
                return result

            async_wrapper.__evalshift_tool__ = True  # type: ignore[attr-defined]
            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            span = start(args, kwargs)
            try:
                result = func(*args, **kwargs)
            except BaseException as exc:
                finish(span, MISSING, exc)
                raise
            finish(span, result, None)
            return result

        # Marks a recorded function (functools.wraps layers above it inherit the mark), so
        # instrumentation that wraps host callables never records one execution twice.
        wrapper.__evalshift_tool__ = True  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    if fn is not None:
        return decorate(fn)
    return decorate
