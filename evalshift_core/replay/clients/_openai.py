"""OpenAI replay clients over the official ``openai`` SDK: Chat Completions and Responses.

Any OpenAI-compatible server (vLLM, Ollama) is an ``openai:`` model with a ``base_url``.
"""

from __future__ import annotations

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
    arguments_text,
    env_first,
    neutral_config,
    parse_arguments,
    texts_of,
    tool_result_text,
)


def to_openai_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Semconv messages (role + parts) as OpenAI Chat Completions messages."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role", "user")
        parts = msg.get("parts", [])
        responses = [p for p in parts if p.get("type") == "tool_call_response"]
        if responses:
            for p in responses:
                out.append({"role": "tool", "tool_call_id": p.get("id") or "",
                            "content": tool_result_text(p.get("response"))})
            continue
        texts = texts_of(msg)
        calls = [p for p in parts if p.get("type") == "tool_call"]
        entry: dict[str, Any] = {"role": role, "content": "\n".join(texts) if texts else None}
        if calls:
            entry["tool_calls"] = [
                {"id": p.get("id") or f"call_{i}", "type": "function",
                 "function": {"name": p.get("name", ""), "arguments": arguments_text(p.get("arguments"))}}
                for i, p in enumerate(calls)
            ]
        elif entry["content"] is None:
            entry["content"] = ""
        out.append(entry)
    return out


def to_openai_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    """Chat Completions tools; ``function.strict`` only when the toolset sets it."""
    out = []
    for t in tools:
        fn: dict[str, Any] = {"name": t.name, "parameters": t.input_schema}
        if t.description:
            fn["description"] = t.description
        if t.strict is not None:
            fn["strict"] = t.strict
        out.append({"type": "function", "function": fn})
    return out


def to_responses_input(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Semconv messages as Responses API input items."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role", "user")
        texts = texts_of(msg)
        if texts:
            out.append({"role": role if role != "tool" else "user", "content": "\n".join(texts)})
        for p in msg.get("parts", []):
            if p.get("type") == "tool_call":
                out.append({"type": "function_call", "call_id": p.get("id") or "",
                            "name": p.get("name", ""), "arguments": arguments_text(p.get("arguments"))})
            elif p.get("type") == "tool_call_response":
                out.append({"type": "function_call_output", "call_id": p.get("id") or "",
                            "output": tool_result_text(p.get("response"))})
    return out


def to_responses_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    out = []
    for t in tools:
        fn: dict[str, Any] = {"type": "function", "name": t.name, "parameters": t.input_schema,
                              # The Responses API treats an absent strict as true, so a toolset
                              # that never asked for strict must say false to mean what it meant.
                              "strict": bool(t.strict)}
        if t.description:
            fn["description"] = t.description
        out.append(fn)
    return out


def _chat_tool_choice(cfg: NeutralConfig) -> Any:
    if cfg.tool_choice == "tool" and cfg.tool_names:
        return {"type": "function", "function": {"name": cfg.tool_names[0]}}
    return cfg.tool_choice if cfg.tool_choice in ("auto", "required", "none") else None


def _responses_tool_choice(cfg: NeutralConfig) -> Any:
    if cfg.tool_choice == "tool" and cfg.tool_names:
        return {"type": "function", "name": cfg.tool_names[0]}
    return cfg.tool_choice if cfg.tool_choice in ("auto", "required", "none") else None


_CHAT_NATIVE = {"response_format", "reasoning_effort", "logit_bias", "logprobs", "top_logprobs",
                "service_tier", "verbosity", "modalities", "prediction", "web_search_options"}
_RESPONSES_NATIVE = {"reasoning", "text", "truncation", "service_tier", "max_tool_calls", "top_logprobs"}


class OpenAIChatClient(BaseClient):
    """Chat Completions through the official ``openai`` SDK (async client, SDK retries off)."""

    provider = "openai"
    api = "chat"

    @property
    def endpoint(self) -> str:
        base = self.settings.base_url or env_first("OPENAI_BASE_URL") or "https://api.openai.com/v1"
        return f"{base}#{self.api}"

    def _make_sdk(self) -> Any:
        try:
            import openai
        except ImportError as exc:  # pragma: no cover - exercised only without the extra
            raise ReplayError("the openai SDK is not installed: pip install 'evalshift[openai]'") from exc
        return openai.AsyncOpenAI(
            api_key=self.settings.api_key or env_first("OPENAI_API_KEY") or "unset",
            base_url=self.settings.base_url or env_first("OPENAI_BASE_URL"),
            timeout=self.settings.timeout, max_retries=0, default_headers=self.settings.headers or None,
            **self.settings.options,
        )

    def _max_tokens_key(self, cfg: NeutralConfig) -> str:
        # OpenAI's own API takes max_completion_tokens on every model (o-series reject
        # max_tokens); an OpenAI-compatible server may know only the older max_tokens.
        if self.endpoint.startswith("https://api.openai.com"):
            return "max_completion_tokens"
        return "max_completion_tokens" if cfg.original_max_key == "max_completion_tokens" else "max_tokens"

    def _settings(self, cfg: NeutralConfig, body: dict[str, Any], dropped: list[str], *, responses: bool) -> None:
        s = cfg.settings
        for key in ("temperature", "top_p"):
            if key in s:
                body[key] = s[key]
        if "max_tokens" in s:
            if responses:
                body["max_output_tokens"] = s["max_tokens"]
            else:
                body[self._max_tokens_key(cfg)] = s["max_tokens"]
        for key in ("stop", "seed", "presence_penalty", "frequency_penalty"):
            if key in s:
                if responses and key in ("stop", "seed"):
                    dropped.append(key)
                else:
                    body[key] = s[key]
        if "top_k" in s:
            dropped.append("top_k")
        native = _RESPONSES_NATIVE if responses else _CHAT_NATIVE
        for key, value in cfg.native.items():
            if key in native:
                body[key] = value
            else:
                dropped.append(key)

    def prepare(self, model: ModelRef, messages: list[dict[str, Any]], tools: list[Tool],
                generation_config: Mapping[str, Any]) -> PreparedRequest:
        cfg = neutral_config(generation_config)
        dropped: list[str] = []
        body: dict[str, Any] = {"model": model.name, "messages": to_openai_messages(messages)}
        if tools:
            body["tools"] = to_openai_tools(tools)
            choice = _chat_tool_choice(cfg)
            if choice is not None:
                body["tool_choice"] = choice
            if cfg.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = cfg.parallel_tool_calls
        self._settings(cfg, body, dropped, responses=False)
        return PreparedRequest(self.provider, model.name, body, self.endpoint, sorted(set(dropped)))

    async def _call(self, sdk: Any, request: PreparedRequest) -> ModelResponse:
        return self.parse(await sdk.chat.completions.create(**request.body))

    def parse(self, response: Any) -> ModelResponse:
        """A ChatCompletion (from the SDK call or a batch output line) as a ModelResponse."""
        if not response.choices:
            return ModelResponse(text=None, tool_calls=[])
        message = response.choices[0].message
        calls = [
            ToolCall(tool_name=tc.function.name, arguments=parse_arguments(tc.function.arguments), call_id=tc.id)
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
        )


class OpenAIResponsesClient(OpenAIChatClient):
    """The Responses API (``providers: {openai: {api: responses}}``)."""

    api = "responses"

    def prepare(self, model: ModelRef, messages: list[dict[str, Any]], tools: list[Tool],
                generation_config: Mapping[str, Any]) -> PreparedRequest:
        cfg = neutral_config(generation_config)
        dropped: list[str] = []
        system = [t for m in messages if m.get("role") == "system" for t in texts_of(m)]
        body: dict[str, Any] = {
            "model": model.name,
            "input": to_responses_input([m for m in messages if m.get("role") != "system"]),
            # replay is stateless: nothing is stored server-side between rounds
            "store": False,
        }
        if system:
            body["instructions"] = "\n".join(system)
        if tools:
            body["tools"] = to_responses_tools(tools)
            choice = _responses_tool_choice(cfg)
            if choice is not None:
                body["tool_choice"] = choice
            if cfg.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = cfg.parallel_tool_calls
        self._settings(cfg, body, dropped, responses=True)
        return PreparedRequest(self.provider, model.name, body, self.endpoint, sorted(set(dropped)))

    async def _call(self, sdk: Any, request: PreparedRequest) -> ModelResponse:
        return self.parse(await sdk.responses.create(**request.body))

    def parse(self, response: Any) -> ModelResponse:
        """A Responses API Response (from the SDK call or a batch output line) as a ModelResponse."""
        texts: list[str] = []
        refusal = None
        calls: list[ToolCall] = []
        for item in response.output or []:
            kind = getattr(item, "type", None)
            if kind == "message":
                for content in item.content or []:
                    if content.type == "output_text":
                        texts.append(content.text)
                    elif content.type == "refusal":
                        refusal = content.refusal
            elif kind == "function_call":
                calls.append(ToolCall(tool_name=item.name, arguments=parse_arguments(item.arguments),
                                      call_id=item.call_id))
        usage = response.usage
        return ModelResponse(
            text="".join(texts) if texts else None,
            tool_calls=calls,
            refusal=refusal,
            input_tokens=getattr(usage, "input_tokens", 0) or 0,
            output_tokens=getattr(usage, "output_tokens", 0) or 0,
        )
