"""What every model client shares: the prepared request, the neutral response, error triage.

Also the provider-neutral reading of a recorded ``generation_config`` (any provider's spelling).
"""

from __future__ import annotations

import asyncio
import copy
import email.utils
import hashlib
import json
import os
import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..._models import Tool, ToolCall
from .._routing import ModelRef


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

    def to_json(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "tool_calls": [c.model_dump(mode="json", exclude_none=True) for c in self.tool_calls],
            "refusal": self.refusal,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "latency_ms": self.latency_ms,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModelResponse:
        return cls(
            text=data.get("text"),
            tool_calls=[ToolCall.model_validate(c) for c in data.get("tool_calls", [])],
            refusal=data.get("refusal"),
            input_tokens=int(data.get("input_tokens", 0)),
            output_tokens=int(data.get("output_tokens", 0)),
            latency_ms=float(data.get("latency_ms", 0.0)),
        )


@dataclass
class PreparedRequest:
    """A provider-native request body, built without I/O so it can be priced and cache-keyed."""

    provider: str
    model: str
    body: dict[str, Any]
    """Exactly what the client passes to its SDK call (JSON-able)."""
    endpoint: str
    """Where it goes (base URL and API flavour): part of the cache key, since another server
    behind the same model name is another model."""
    dropped_params: list[str] = field(default_factory=list)
    """Settings this provider cannot honour."""

    _key: str | None = field(default=None, repr=False, compare=False)

    def cache_key(self) -> str:
        """sha256 of the canonical request: provider, endpoint, model, messages, tools, settings.

        Computed once: the pre-flight, the cache lookup and the cache write all ask for it.
        """
        if self._key is None:
            canonical = orjson.dumps(
                {"provider": self.provider, "endpoint": self.endpoint, "model": self.model, "body": self.body},
                option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
            )
            self._key = hashlib.sha256(canonical).hexdigest()
        return self._key

    def size_chars(self) -> int:
        return len(orjson.dumps(self.body, option=orjson.OPT_NON_STR_KEYS))


class ModelCallError(Exception):
    """A model call failed; ``retryable`` says whether trying again may help."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


_RETRYABLE_STATUS = {408, 409, 425, 429}


def _retry_after(headers: Any, details: Any = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date) or a
    Google ``RetryInfo.retryDelay`` in the error body."""
    if headers is not None:
        try:
            ms = headers.get("retry-after-ms")
            if ms is not None:
                return max(0.0, float(ms) / 1000.0)
            value = headers.get("retry-after")
            if value is not None:
                try:
                    return max(0.0, float(value))
                except ValueError:
                    parsed = email.utils.parsedate_to_datetime(value)
                    return max(0.0, parsed.timestamp() - time.time())
        except (TypeError, ValueError, AttributeError):
            pass
    if isinstance(details, Mapping):
        for item in (details.get("error") or {}).get("details") or []:
            delay = item.get("retryDelay") if isinstance(item, Mapping) else None
            found = re.fullmatch(r"([\d.]+)s", str(delay or ""))
            if found:
                return float(found.group(1))
    return None


def classify_error(exc: BaseException) -> ModelCallError:
    """Translate any SDK exception into a ModelCallError (duck-typed across the three SDKs)."""
    if isinstance(exc, ModelCallError):
        return exc
    status = getattr(exc, "status_code", None)
    code = getattr(exc, "code", None)
    if status is None and isinstance(code, int):
        status = code  # google-genai's APIError
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    name = type(exc).__name__
    transient = isinstance(exc, (asyncio.TimeoutError, TimeoutError, ConnectionError)) or any(
        word in name for word in ("Timeout", "Connect", "RemoteProtocol", "ReadError", "WriteError")
    )
    retryable = transient or (status is not None and (status in _RETRYABLE_STATUS or status >= 500))
    message = getattr(exc, "message", None) or str(exc) or name
    label = f"{status} " if status is not None else ""
    return ModelCallError(
        f"{name}: {label}{message}".strip(),
        status=status,
        retryable=retryable,
        retry_after=_retry_after(headers, getattr(exc, "details", None)),
    )


def tool_result_text(value: Any) -> str:
    """A tool result as message text: a string verbatim, anything else as JSON (seed 001)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def arguments_text(value: Any) -> str:
    """Tool-call arguments as the JSON text OpenAI carries them in."""
    if isinstance(value, str):
        return value
    return orjson.dumps(value if value is not None else {}).decode()


def parse_arguments(raw: Any) -> Any:
    """Arguments as a value; text that is not JSON is kept as text."""
    if isinstance(raw, str):
        try:
            return orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            return raw
    return raw if raw is not None else {}


def texts_of(message: Mapping[str, Any]) -> list[str]:
    return [str(p.get("content", "")) for p in message.get("parts", []) if p.get("type") == "text"]


def env_first(*names: str) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


# -- generation_config, read in any provider's spelling ------------------------------------

# The keys every provider understands, in the neutral spelling, with the aliases captures
# from each SDK record them under.
_ALIASES: dict[str, str] = {
    "temperature": "temperature",
    "top_p": "top_p",
    "topP": "top_p",
    "top_k": "top_k",
    "topK": "top_k",
    "max_tokens": "max_tokens",
    "max_completion_tokens": "max_tokens",
    "max_output_tokens": "max_tokens",
    "maxOutputTokens": "max_tokens",
    "stop": "stop",
    "stop_sequences": "stop",
    "stopSequences": "stop",
    "seed": "seed",
    "presence_penalty": "presence_penalty",
    "presencePenalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "frequencyPenalty": "frequency_penalty",
    "tool_choice": "tool_choice",
    "tool_config": "tool_choice",
    "toolConfig": "tool_choice",
    "parallel_tool_calls": "parallel_tool_calls",
}


@dataclass
class NeutralConfig:
    """A recorded generation_config in one spelling, ready to re-emit per provider."""

    settings: dict[str, Any] = field(default_factory=dict)
    """temperature, top_p, top_k, max_tokens, stop (list), seed, presence/frequency_penalty."""
    tool_choice: str | None = None
    """``auto``, ``required``, ``none`` or ``tool`` (then ``tool_names`` says which)."""
    tool_names: list[str] = field(default_factory=list)
    parallel_tool_calls: bool | None = None
    native: dict[str, Any] = field(default_factory=dict)
    """Keys with no cross-provider meaning, kept under their recorded name."""
    original_max_key: str | None = None


def neutral_config(config: Mapping[str, Any]) -> NeutralConfig:
    """Read a generation_config recorded by any of the three SDKs."""
    out = NeutralConfig()
    for key, value in config.items():
        if value is None:
            continue
        neutral = _ALIASES.get(key)
        if neutral is None:
            out.native[key] = value
        elif neutral == "tool_choice":
            _read_tool_choice(value, out)
        elif neutral == "parallel_tool_calls":
            out.parallel_tool_calls = bool(value)
        elif neutral == "stop":
            out.settings["stop"] = [value] if isinstance(value, str) else list(value)
        else:
            if neutral == "max_tokens":
                out.original_max_key = key
            out.settings[neutral] = value
    return out


def _read_tool_choice(value: Any, out: NeutralConfig) -> None:
    if isinstance(value, str):
        # OpenAI: auto | required | none; Anthropic's "any" is OpenAI's "required".
        out.tool_choice = {"any": "required"}.get(value.lower(), value.lower())
        return
    if not isinstance(value, Mapping):
        return
    fcc = value.get("function_calling_config") or value.get("functionCallingConfig")
    if isinstance(fcc, Mapping):  # Gemini tool_config
        mode = str(fcc.get("mode", "AUTO")).upper()
        names = list(fcc.get("allowed_function_names") or fcc.get("allowedFunctionNames") or [])
        if mode in ("ANY", "VALIDATED") and len(names) == 1:
            out.tool_choice, out.tool_names = "tool", names
        else:
            out.tool_choice = {"ANY": "required", "NONE": "none"}.get(mode, "auto")
            out.tool_names = names
        return
    kind = str(value.get("type", "")).lower()
    if "disable_parallel_tool_use" in value:  # Anthropic
        out.parallel_tool_calls = not bool(value["disable_parallel_tool_use"])
    if kind in ("function", "tool"):
        name = value.get("name") or (value.get("function") or {}).get("name")
        out.tool_choice, out.tool_names = "tool", [name] if name else []
    elif kind in ("auto", "any", "none", "required"):
        out.tool_choice = {"any": "required"}.get(kind, kind)


def strict_tools(tools: list[Tool]) -> bool:
    return any(t.strict for t in tools)


@dataclass
class ClientSettings:
    """Per-provider settings from ``providers:`` in evalshift.yaml (or ``compare(providers=)``)."""

    api_key: str | None = None
    base_url: str | None = None
    timeout: float = 120.0
    api: str | None = None
    """OpenAI only: ``chat`` (default) or ``responses``."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra HTTP headers sent with every request (a gateway's routing or auth header)."""
    options: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, settings: Mapping[str, Any] | None) -> ClientSettings:
        data = dict(settings or {})
        key_env = data.pop("api_key_env", None)
        api_key = data.pop("api_key", None) or (os.environ.get(key_env) if key_env else None)
        timeout = float(data.pop("timeout", 120.0))
        # runner-side settings live in the same mapping; the client ignores them
        for runner_key in ("rpm", "concurrency", "max_concurrency", "prices"):
            data.pop(runner_key, None)
        headers = {str(k): str(v) for k, v in (data.pop("headers", None) or {}).items()}
        return cls(api_key=api_key, base_url=data.pop("base_url", None), timeout=timeout,
                   api=data.pop("api", None), headers=headers, options=data)


class BaseClient:
    """One provider's replay client: ``prepare`` (pure) then ``send`` (one HTTP call)."""

    provider = ""

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self._sdk: Any = None
        self._sdk_loop: Any = None

    @property
    def endpoint(self) -> str:
        return self.settings.base_url or "default"

    def prepare(self, model: ModelRef, messages: list[dict[str, Any]], tools: list[Tool],
                generation_config: Mapping[str, Any]) -> PreparedRequest:
        raise NotImplementedError

    async def _call(self, sdk: Any, request: PreparedRequest) -> ModelResponse:
        raise NotImplementedError

    def parse(self, response: Any) -> ModelResponse:
        """The SDK's response object as a ModelResponse (online calls and batch results alike)."""
        raise NotImplementedError

    def _make_sdk(self) -> Any:
        raise NotImplementedError

    def sdk(self) -> Any:
        """The async SDK client for the running event loop (what batch submission calls)."""
        return self._sdk_for_loop()

    def _sdk_for_loop(self) -> Any:
        # Async SDK clients hold a connection pool bound to the loop that created them.
        loop = asyncio.get_running_loop()
        if self._sdk is None or self._sdk_loop is not loop:
            self._sdk, self._sdk_loop = self._make_sdk(), loop
        return self._sdk

    async def send(self, request: PreparedRequest) -> ModelResponse:
        """One model call; every failure comes out as a ModelCallError."""
        sdk = self._sdk_for_loop()
        t0 = time.perf_counter()
        try:
            response = await self._call(sdk, request)
        except ModelCallError:
            raise
        except Exception as exc:  # noqa: BLE001 - triaged into retryable or not
            raise classify_error(exc) from exc
        response.latency_ms = (time.perf_counter() - t0) * 1000.0
        response.dropped_params = list(request.dropped_params)
        return response

    async def acomplete(self, model: ModelRef, messages: list[dict[str, Any]], tools: list[Tool],
                        generation_config: Mapping[str, Any]) -> ModelResponse:
        return await self.send(self.prepare(model, messages, tools, generation_config))

    def complete(self, model: ModelRef, messages: list[dict[str, Any]], tools: list[Tool],
                 generation_config: Mapping[str, Any], *, attempts: int = 4) -> ModelResponse:
        """Blocking convenience over :meth:`acomplete` for one-off calls (the llm_judge), with a
        few retries on 429/5xx/timeouts. Thread-safe: each call uses its own SDK client."""
        request = self.prepare(model, messages, tools, generation_config)

        async def once() -> ModelResponse:
            own = copy.copy(self)
            own._sdk = own._sdk_loop = None
            try:
                for attempt in range(attempts):
                    try:
                        return await own.send(request)
                    except ModelCallError as err:
                        if not err.retryable or attempt == attempts - 1:
                            raise
                        delay = err.retry_after if err.retry_after is not None else 0.5 * 2**attempt
                        await asyncio.sleep(delay * (1 + random.random() * 0.1))
                raise AssertionError("unreachable")
            finally:
                await own.aclose()

        return asyncio.run(once())

    async def aclose(self) -> None:
        sdk, self._sdk, self._sdk_loop = self._sdk, None, None
        close = getattr(sdk, "close", None) or getattr(sdk, "aclose", None)
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result):
                await result
