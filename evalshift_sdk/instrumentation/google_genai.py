"""Instrumentation of ``google-genai``: ``models.generate_content(_stream)`` and the ``aio`` twins.

Each request the SDK sends is one span (its private ``_generate_content*`` methods), so every
round of automatic function calling is its own model call, inside one turn; the Python functions
the SDK runs for it are handed over wrapped, so each execution is recorded like ``@tool``'s.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from .. import _runtime
from .._guard import capture_internal_exceptions
from . import DidNotEnable
from ._genai import (
    ModelCall,
    observe_async,
    observe_sync,
    text_part,
    tool_call_part,
    tool_response_part,
)
from ._patching import patch, require_version, unpatch
from ._streams import Accumulator

PROVIDER = "gcp.gemini"
MIN_VERSION = (1, 0)

# Finish reasons (and prompt block reasons) that mean the model declined: Gemini's refusals.
_REFUSAL_REASONS = frozenset({
    "SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY", "OTHER_BLOCKED",
})
_NOT_GENERATION = frozenset({
    "tools", "system_instruction", "http_options", "automatic_function_calling", "labels",
    "cached_content", "should_return_http_response",
})

_patched: list[tuple[Any, str, Any]] = []


def _dump(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    return value


def _enum_name(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, enum.Enum):
        return str(value.value)
    return str(value)


def _contents(contents: Any) -> list[Any]:
    from google.genai import _transformers as t

    try:
        return list(t.t_contents(contents))
    except TypeError:  # google-genai < 1.10 takes the client first
        return list(t.t_contents(None, contents))  # type: ignore[call-arg]


def contents_to_semconv(contents: Any) -> list[dict[str, Any]]:
    """Gemini contents as GenAI semconv messages; ``functionResponse`` parts become ``tool``
    messages, ``model`` turns ``assistant`` ones; thought parts are left out."""
    out: list[dict[str, Any]] = []
    if contents is None:
        return out
    for content in _contents(contents):
        role = "assistant" if content.role == "model" else (content.role or "user")
        parts: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for part in content.parts or []:
            if part.function_call is not None:
                fc = part.function_call
                parts.append(tool_call_part(fc.id, fc.name or "", _dump(fc.args)))
            elif part.function_response is not None:
                fr = part.function_response
                results.append(tool_response_part(fr.id, _dump(fr.response)))
            elif part.text is not None and not part.thought:
                parts.append(text_part(part.text))
        if results:
            out.append({"role": "tool", "parts": results})
        if parts or not results:
            out.append({"role": role, "parts": parts})
    return out


def _field(config: Any, name: str) -> Any:
    if isinstance(config, Mapping):
        return config.get(name)
    return getattr(config, name, None)


def _system(config: Any) -> list[dict[str, Any]] | None:
    value = _field(config, "system_instruction")
    if value is None:
        return None
    if isinstance(value, str):
        return [text_part(value)]
    texts = [m["parts"] for m in contents_to_semconv([value] if not isinstance(value, list) else value)]
    return [p for parts in texts for p in parts if p["type"] == "text"] or None


def _declaration_of_callable(instance: Any, fn: Any) -> dict[str, Any]:
    from google.genai import types

    try:
        decl = types.FunctionDeclaration.from_callable(client=instance._api_client, callable=fn)
        return _dump(decl)
    except Exception:  # noqa: BLE001 - an odd callable still gets its name recorded
        return {"name": getattr(fn, "__name__", repr(fn)), "description": (fn.__doc__ or "").strip()}


def tools_of(instance: Any, config: Any) -> tuple[list[dict[str, Any]] | None, list[str]]:
    """Function declarations offered (Python callables declared as the SDK would) and the
    kinds of built-in tools (search, code execution) offered beside them."""
    tools = _field(config, "tools")
    if not tools:
        return None, []
    functions: list[dict[str, Any]] = []
    builtin: list[str] = []
    for tool in tools:
        if callable(tool) and not hasattr(tool, "model_dump"):
            functions.append(_declaration_of_callable(instance, tool))
            continue
        t = _dump(tool)
        if not isinstance(t, Mapping):
            continue
        declarations = t.get("function_declarations") or t.get("functionDeclarations") or []
        functions += [dict(_dump(decl)) for decl in declarations]
        builtin += [k for k, v in t.items() if k not in {"function_declarations", "functionDeclarations"} and v]
    return functions, builtin


def generation_config_of(config: Any) -> dict[str, Any]:
    if config is None:
        return {}
    if isinstance(config, Mapping):
        raw = config
    else:  # callables in tools do not serialise; the toolset is recorded apart anyway
        raw = config.model_dump(mode="json", exclude_none=True, exclude=set(_NOT_GENERATION))
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if key in _NOT_GENERATION or value is None:
            continue
        out[key] = _dump(value)
    fcc = _field(out.get("tool_config") or {}, "function_calling_config")
    if fcc:
        fcc = _dump(fcc)
        mode = fcc.get("mode")
        # Gemini's function_calling_config is the same setting as OpenAI's tool_choice.
        out["tool_choice"] = {"mode": _enum_name(mode), **({"allowed_function_names": fcc["allowed_function_names"]} if fcc.get("allowed_function_names") else {})}
    return out


def _start(instance: Any, kwargs: Mapping[str, Any], streamed: bool) -> ModelCall | None:
    config = kwargs.get("config")
    tools, builtin = tools_of(instance, config)
    settings = generation_config_of(config)
    if builtin:
        settings["builtin_tools"] = builtin
    return ModelCall.start(
        provider=PROVIDER,
        model=kwargs.get("model"),
        input_messages=contents_to_semconv(kwargs.get("contents")),
        system_instructions=_system(config),
        tools=tools,
        generation_config=settings,
        streamed=streamed,
    )


class GenerateAccumulator(Accumulator):
    """``GenerateContentResponse`` chunks (or one whole response) folded into one answer."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.calls: list[dict[str, Any]] = []
        self.finish: str | None = None
        self.block: str | None = None
        self.usage: Any = None
        self.model: str | None = None
        self.id: str | None = None

    def on_chunk(self, chunk: Any) -> None:
        self.model = getattr(chunk, "model_version", None) or self.model
        self.id = getattr(chunk, "response_id", None) or self.id
        if getattr(chunk, "usage_metadata", None) is not None:
            self.usage = chunk.usage_metadata
        feedback = getattr(chunk, "prompt_feedback", None)
        if feedback is not None and feedback.block_reason is not None:
            self.block = _enum_name(feedback.block_reason)
        candidates = getattr(chunk, "candidates", None) or []
        if not candidates:
            return
        candidate = candidates[0]
        if candidate.finish_reason is not None:
            self.finish = _enum_name(candidate.finish_reason)
        content = candidate.content
        for part in (content.parts if content is not None else None) or []:
            if part.function_call is not None:
                fc = part.function_call
                self.calls.append({"call_id": fc.id, "tool_name": fc.name, "arguments": _dump(fc.args) or {}})
            elif part.text is not None and not part.thought:
                self.text.append(part.text)

    def result(self) -> dict[str, Any]:
        refusal = None
        if self.block is not None:
            refusal = f"prompt blocked: {self.block}"
        elif self.finish in _REFUSAL_REASONS:
            refusal = f"response blocked: {self.finish}"
        return {
            "text": "".join(self.text) or None,
            "tool_calls": self.calls,
            "refusal": refusal,
            "finish_reasons": [self.finish or self.block] if (self.finish or self.block) else [],
            "input_tokens": getattr(self.usage, "prompt_token_count", None),
            "output_tokens": getattr(self.usage, "candidates_token_count", None),
            "response_model": self.model,
            "response_id": self.id,
        }


def _finish(call: ModelCall, response: Any) -> None:
    acc = GenerateAccumulator()
    acc.on_chunk(response)
    call.finish(**acc.result())


def _is_function_tool(tool: Any) -> bool:
    """A Python callable offered for automatic function calling (not a ``Tool`` model)."""
    return callable(tool) and not hasattr(tool, "model_dump")


def _has_callables(kwargs: Mapping[str, Any]) -> bool:
    tools = _field(kwargs.get("config"), "tools") or []
    return any(_is_function_tool(t) for t in tools)


def _afc_disabled(config: Any) -> bool:
    """The host turned automatic function calling off: the SDK will not run the functions."""
    afc = _field(config, "automatic_function_calling")
    if afc is None:
        return False
    if _field(afc, "disable"):
        return True
    most = _field(afc, "maximum_remote_calls")
    return most is not None and int(most) <= 0


def _recording(fn: Any) -> Any:
    """``fn`` wrapped so its execution is recorded like ``@tool``'s, or ``fn`` itself when it
    already is, or when a wrapper could change what google-genai reads off it."""
    if not (inspect.isfunction(fn) or inspect.ismethod(fn)) or _runtime.is_recorded(fn):
        return fn
    # The SDK declares and invokes the function through inspect.signature (which follows
    # __wrapped__), __name__, __doc__ and get_type_hints; functools.wraps keeps all four, and
    # the wrapper of a coroutine function is one too.
    wrapper: Callable[..., Any] = _runtime.tool(fn)
    if wrapper.__name__ != fn.__name__ or inspect.iscoroutinefunction(wrapper) != inspect.iscoroutinefunction(fn):
        return fn
    return wrapper


def _with_recording_tools(kwargs: dict[str, Any]) -> dict[str, Any]:
    """``kwargs`` whose config offers the same functions, wrapped to record their executions.

    The host's config is copied, never changed: it may be reused for other calls, or read back.
    """
    config = kwargs.get("config")
    tools = _field(config, "tools")
    if not tools or _afc_disabled(config):
        return kwargs
    turn = _runtime.current_turn()
    if turn is not None and not turn.sampled:
        return kwargs
    swapped = [_recording(t) if _is_function_tool(t) else t for t in tools]
    if all(a is b for a, b in zip(swapped, tools)):
        return kwargs
    if isinstance(config, Mapping):
        copied: Any = {**config, "tools": swapped}
    else:
        copied = config.model_copy(update={"tools": swapped})
    return {**kwargs, "config": copied}


def _generate(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return observe_sync(
        "genai.generate", wrapped, args, kwargs, lambda a, k: _start(instance, k, False), _finish
    )


async def _agenerate(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return await observe_async(
        "genai.generate", wrapped, args, kwargs, lambda a, k: _start(instance, k, False), _finish
    )


def _generate_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return observe_sync(
        "genai.stream", wrapped, args, kwargs, lambda a, k: _start(instance, k, True), _finish,
        GenerateAccumulator,
    )


async def _agenerate_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    return await observe_async(
        "genai.stream", wrapped, args, kwargs, lambda a, k: _start(instance, k, True), _finish,
        GenerateAccumulator,
    )


def _afc_turn(kwargs: Mapping[str, Any]) -> Any:
    """Outside any turn, automatic function calling still forms one turn: its rounds belong
    together, so they are grouped under an implicit turn rather than split into several."""
    scope = None
    with capture_internal_exceptions("genai.afc"):
        scope = _runtime.implicit_turn()
        if scope is not None and not _has_callables(kwargs):
            scope = None
    return scope


def _afc_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """What to call the SDK with: the functions wrapped to record their executions, or, on any
    fault while wrapping, the host's own arguments untouched."""
    out = kwargs
    with capture_internal_exceptions("genai.afc.tools"):
        if _runtime.get_runtime() is not None:
            out = _with_recording_tools(kwargs)
    return out


def _public_generate(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    scope = _afc_turn(kwargs)
    if scope is None:
        return wrapped(*args, **_afc_kwargs(kwargs))
    with scope:
        return wrapped(*args, **_afc_kwargs(kwargs))


async def _apublic_generate(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    scope = _afc_turn(kwargs)
    if scope is None:
        return await wrapped(*args, **_afc_kwargs(kwargs))
    with scope:
        return await wrapped(*args, **_afc_kwargs(kwargs))


def _stream_in_turn(scope: Any, chunks: Any) -> Any:
    with scope:
        yield from chunks


async def _astream_in_turn(scope: Any, chunks: Any) -> Any:
    with scope:
        async for chunk in chunks:
            yield chunk


def _public_generate_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    # The SDK's AFC loop runs while the host iterates, so the implicit turn spans the iteration.
    scope = _afc_turn(kwargs)
    if scope is None:
        return wrapped(*args, **_afc_kwargs(kwargs))
    return _stream_in_turn(scope, wrapped(*args, **_afc_kwargs(kwargs)))


async def _apublic_generate_stream(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
    scope = _afc_turn(kwargs)
    if scope is None:
        return await wrapped(*args, **_afc_kwargs(kwargs))
    return _astream_in_turn(scope, await wrapped(*args, **_afc_kwargs(kwargs)))


def instrument() -> None:
    from google.genai import version

    require_version("google-genai", version.__version__, MIN_VERSION)
    from google.genai import models

    targets = [
        (models.Models, "_generate_content", _generate),
        (models.AsyncModels, "_generate_content", _agenerate),
        (models.Models, "_generate_content_stream", _generate_stream),
        (models.AsyncModels, "_generate_content_stream", _agenerate_stream),
        (models.Models, "generate_content", _public_generate),
        (models.AsyncModels, "generate_content", _apublic_generate),
        (models.Models, "generate_content_stream", _public_generate_stream),
        (models.AsyncModels, "generate_content_stream", _apublic_generate_stream),
    ]
    if any(owner.__dict__.get(attr) is None for owner, attr, _ in targets[:4]):
        raise DidNotEnable("google-genai's request methods moved; this release is not supported")
    patch(targets, _patched)


def uninstrument() -> None:
    unpatch(_patched)
