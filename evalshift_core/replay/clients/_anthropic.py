"""Anthropic replay client over the official ``anthropic`` SDK (Messages API).

Tools keep a top-level ``strict`` only when set; tool_choice and parallel use Anthropic's form.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Mapping
from typing import Any

from ..._exceptions import ReplayError
from ..._models import Tool, ToolCall
from .._routing import ModelRef
from ._base import (
    BaseClient,
    ModelResponse,
    NeutralConfig,
    PreparedRequest,
    env_first,
    neutral_config,
    texts_of,
    tool_result_text,
)

DEFAULT_MAX_TOKENS = 4096
"""Anthropic requires max_tokens; used when the recording had none."""

_NATIVE = {"thinking", "metadata", "service_tier", "container", "context_management", "output_config",
           "inference_geo", "speed", "cache_control"}


@functools.lru_cache(maxsize=1)
def sdk_accepts() -> frozenset[str]:
    """Keyword arguments the installed SDK's ``messages.create`` takes. Newer SDKs dropped the
    sampling knobs (temperature, top_p, top_k); a recorded one they cannot carry is dropped."""
    try:
        from anthropic.resources.messages import AsyncMessages
    except ImportError:  # pragma: no cover
        return frozenset()
    return frozenset(inspect.signature(AsyncMessages.create).parameters)


def _tool_use_id(raw: Any, fallback: str) -> str:
    # Anthropic ids must match ^[a-zA-Z0-9_-]+$; recorded ids from other providers may not.
    text = str(raw or fallback)
    return re.sub(r"[^a-zA-Z0-9_-]", "_", text)


def to_anthropic_messages(messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """Semconv messages as (system, Messages API messages); tool results ride in user turns."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role", "user")
        if role == "system":
            system.extend(texts_of(msg))
            continue
        blocks: list[dict[str, Any]] = []
        for i, p in enumerate(msg.get("parts", [])):
            kind = p.get("type")
            if kind == "text" and p.get("content"):
                blocks.append({"type": "text", "text": str(p["content"])})
            elif kind == "tool_call":
                args = p.get("arguments")
                blocks.append({"type": "tool_use", "id": _tool_use_id(p.get("id"), f"toolu_{len(out)}_{i}"),
                               "name": p.get("name", ""),
                               "input": args if isinstance(args, dict) else {"value": args}})
            elif kind == "tool_call_response":
                response = p.get("response")
                block: dict[str, Any] = {"type": "tool_result",
                                         "tool_use_id": _tool_use_id(p.get("id"), f"toolu_{len(out)}_{i}"),
                                         "content": tool_result_text(response)}
                if isinstance(response, Mapping) and set(response) == {"error"}:
                    block["is_error"] = True
                blocks.append(block)
        if not blocks:
            continue
        api_role = "assistant" if role == "assistant" else "user"
        # consecutive tool messages are one user turn of tool_result blocks
        if out and out[-1]["role"] == api_role and role == "tool":
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": api_role, "content": blocks})
    return ("\n".join(system) if system else None), out


def to_anthropic_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    """Messages API tools; top-level ``strict`` only when the toolset sets it."""
    out = []
    for t in tools:
        tool: dict[str, Any] = {"name": t.name, "input_schema": t.input_schema}
        if t.description:
            tool["description"] = t.description
        if t.strict is not None:
            tool["strict"] = t.strict
        out.append(tool)
    return out


def anthropic_tool_choice(cfg: NeutralConfig, dropped: list[str]) -> dict[str, Any] | None:
    """``{type: auto|any|tool|none, name?, disable_parallel_tool_use?}``."""
    kind = {"auto": "auto", "required": "any", "none": "none", "tool": "tool"}.get(cfg.tool_choice or "")
    if kind is None and cfg.parallel_tool_calls is None:
        return None
    choice: dict[str, Any] = {"type": kind or "auto"}
    if kind == "tool":
        if not cfg.tool_names:
            choice = {"type": "any"}
        else:
            choice["name"] = cfg.tool_names[0]
    if cfg.parallel_tool_calls is not None:
        if choice["type"] == "none":
            dropped.append("parallel_tool_calls")
        else:
            choice["disable_parallel_tool_use"] = not cfg.parallel_tool_calls
    return choice


class AnthropicClient(BaseClient):
    """Messages through the official ``anthropic`` SDK (async client, SDK retries off)."""

    provider = "anthropic"

    @property
    def endpoint(self) -> str:
        return self.settings.base_url or env_first("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"

    def _make_sdk(self) -> Any:
        try:
            import anthropic
        except ImportError as exc:  # pragma: no cover
            raise ReplayError("the anthropic SDK is not installed: pip install 'evalshift[anthropic]'") from exc
        return anthropic.AsyncAnthropic(
            api_key=self.settings.api_key or env_first("ANTHROPIC_API_KEY") or "unset",
            base_url=self.settings.base_url or env_first("ANTHROPIC_BASE_URL"),
            timeout=self.settings.timeout, max_retries=0, default_headers=self.settings.headers or None,
            **self.settings.options,
        )

    def prepare(self, model: ModelRef, messages: list[dict[str, Any]], tools: list[Tool],
                generation_config: Mapping[str, Any]) -> PreparedRequest:
        cfg = neutral_config(generation_config)
        dropped: list[str] = []
        system, api_messages = to_anthropic_messages(messages)
        s = cfg.settings
        body: dict[str, Any] = {"model": model.name, "max_tokens": int(s.get("max_tokens", DEFAULT_MAX_TOKENS)),
                                "messages": api_messages}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = to_anthropic_tools(tools)
            choice = anthropic_tool_choice(cfg, dropped)
            if choice is not None:
                body["tool_choice"] = choice
        accepted = sdk_accepts()
        for key in ("temperature", "top_p", "top_k"):
            if key in s:
                if key in accepted:
                    body[key] = s[key]
                else:
                    dropped.append(key)
        if "stop" in s:
            body["stop_sequences"] = s["stop"]
        dropped.extend(k for k in ("seed", "presence_penalty", "frequency_penalty") if k in s)
        for key, value in cfg.native.items():
            if key in _NATIVE and key in accepted:
                body[key] = value
            else:
                dropped.append(key)
        return PreparedRequest(self.provider, model.name, body, self.endpoint, sorted(set(dropped)))

    async def _call(self, sdk: Any, request: PreparedRequest) -> ModelResponse:
        return self.parse(await sdk.messages.create(**request.body))

    def parse(self, message: Any) -> ModelResponse:
        """A Message (from the SDK call or a batch result) as a ModelResponse."""
        texts: list[str] = []
        calls: list[ToolCall] = []
        for block in message.content or []:
            if block.type == "text":
                texts.append(block.text)
            elif block.type == "tool_use":
                calls.append(ToolCall(tool_name=block.name, arguments=block.input, call_id=block.id))
        text = "".join(texts) if texts else None
        refusal = None
        if message.stop_reason == "refusal":
            refusal = text or "refusal"
        usage = message.usage
        return ModelResponse(
            text=text, tool_calls=calls, refusal=refusal,
            input_tokens=getattr(usage, "input_tokens", 0) or 0,
            output_tokens=getattr(usage, "output_tokens", 0) or 0,
        )
