"""Gemini replay client over the official ``google-genai`` SDK (``generate_content``).

Gemini has no strict mode and no parallel switch: those settings land in ``dropped_params``.
"""

from __future__ import annotations

import base64
import copy
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
    strict_tools,
    texts_of,
)

_NATIVE = {"thinking_config", "response_mime_type", "response_schema", "response_json_schema",
           "safety_settings", "media_resolution", "thinkingConfig", "responseMimeType", "safetySettings"}
_REFUSAL_REASONS = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "RECITATION", "IMAGE_SAFETY"}
# Gemini 3 validates thought signatures on function calls in the history; a call the model did
# not itself produce (a recorded one, teacher-forced) carries the documented bypass value.
SKIP_THOUGHT_SIGNATURE = "skip_thought_signature_validator"


def _function_response(response: Any) -> dict[str, Any]:
    # A recorded error is already {"error": "..."}; any other result rides under "result",
    # the key the SDK's own automatic function calling uses.
    if isinstance(response, Mapping) and set(response) == {"error"}:
        return dict(response)
    return {"result": response}


def to_gemini_contents(messages: list[dict[str, Any]], *, signatures: bool = False
                       ) -> tuple[str | None, list[dict[str, Any]]]:
    """Semconv messages as (system_instruction, contents); tool results are user turns."""
    system: list[str] = []
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for msg in messages:
        role = msg.get("role", "user")
        if role == "system":
            system.extend(texts_of(msg))
            continue
        parts: list[dict[str, Any]] = []
        for p in msg.get("parts", []):
            kind = p.get("type")
            if kind == "text" and p.get("content"):
                parts.append({"text": str(p["content"])})
            elif kind == "tool_call":
                args = p.get("arguments")
                call: dict[str, Any] = {"name": p.get("name", ""),
                                        "args": args if isinstance(args, dict) else {"value": args}}
                if p.get("id"):
                    call["id"] = str(p["id"])
                    names[str(p["id"])] = call["name"]
                part: dict[str, Any] = {"function_call": call}
                if signatures:
                    part["thought_signature"] = SKIP_THOUGHT_SIGNATURE
                parts.append(part)
            elif kind == "tool_call_response":
                call_id = p.get("id")
                fr: dict[str, Any] = {"name": p.get("name") or names.get(str(call_id), ""),
                                      "response": _function_response(p.get("response"))}
                if call_id:
                    fr["id"] = str(call_id)
                parts.append({"function_response": fr})
        if not parts:
            continue
        api_role = "model" if role == "assistant" else "user"
        if out and out[-1]["role"] == api_role and role == "tool":
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": api_role, "parts": parts})
    return ("\n".join(system) if system else None), out


def to_gemini_tools(tools: list[Tool]) -> list[dict[str, Any]]:
    """One Tool holding every function declaration; the JSON schema goes in verbatim."""
    decls = []
    for t in tools:
        decl: dict[str, Any] = {"name": t.name, "parameters_json_schema": t.input_schema}
        if t.description:
            decl["description"] = t.description
        decls.append(decl)
    return [{"function_declarations": decls}]


def gemini_tool_config(cfg: NeutralConfig) -> dict[str, Any] | None:
    """``tool_config.function_calling_config``: mode AUTO/ANY/NONE + allowed_function_names."""
    if cfg.tool_choice is None:
        return None
    mode = {"auto": "AUTO", "required": "ANY", "none": "NONE", "tool": "ANY"}.get(cfg.tool_choice, "AUTO")
    fcc: dict[str, Any] = {"mode": mode}
    if mode == "ANY" and cfg.tool_names:
        fcc["allowed_function_names"] = list(cfg.tool_names)
    return {"function_calling_config": fcc}


class GeminiClient(BaseClient):
    """generate_content through the official ``google-genai`` SDK (async, SDK retries off)."""

    provider = "gemini"

    @property
    def endpoint(self) -> str:
        return (self.settings.base_url or env_first("GOOGLE_GEMINI_BASE_URL")
                or "https://generativelanguage.googleapis.com")

    def _make_sdk(self) -> Any:
        try:
            from google import genai
            from google.genai import types
        except ImportError as exc:  # pragma: no cover
            raise ReplayError("the google-genai SDK is not installed: pip install 'evalshift[gemini]'") from exc
        options = dict(self.settings.options)
        http_options = types.HttpOptions(
            base_url=self.settings.base_url or env_first("GOOGLE_GEMINI_BASE_URL"),
            timeout=int(self.settings.timeout * 1000),
            retry_options=types.HttpRetryOptions(attempts=1),
            **({"headers": dict(self.settings.headers)} if self.settings.headers else {}),
            **options.pop("http_options", {}),
        )
        # GOOGLE_API_KEY wins over GEMINI_API_KEY, as in the SDK's own lookup
        return genai.Client(api_key=self.settings.api_key or env_first("GOOGLE_API_KEY", "GEMINI_API_KEY") or "unset",
                            http_options=http_options, **options)

    def prepare(self, model: ModelRef, messages: list[dict[str, Any]], tools: list[Tool],
                generation_config: Mapping[str, Any]) -> PreparedRequest:
        cfg = neutral_config(generation_config)
        dropped: list[str] = []
        system, contents = to_gemini_contents(messages, signatures=model.name.startswith("gemini-3"))
        config: dict[str, Any] = {}
        if system:
            config["system_instruction"] = system
        if tools:
            config["tools"] = to_gemini_tools(tools)
            if strict_tools(tools):
                dropped.append("tools.strict")
            tool_config = gemini_tool_config(cfg)
            if tool_config is not None:
                config["tool_config"] = tool_config
            if cfg.parallel_tool_calls is not None:
                dropped.append("parallel_tool_calls")
        s = cfg.settings
        for key in ("temperature", "top_p", "top_k", "seed", "presence_penalty", "frequency_penalty"):
            if key in s:
                config[key] = s[key]
        if "max_tokens" in s:
            config["max_output_tokens"] = s["max_tokens"]
        if "stop" in s:
            config["stop_sequences"] = s["stop"]
        for key, value in cfg.native.items():
            if key in _NATIVE:
                config[key] = value
            else:
                dropped.append(key)
        body = {"model": model.name, "contents": contents, "config": config}
        return PreparedRequest(self.provider, model.name, body, self.endpoint, sorted(set(dropped)))

    def _make_call_args(self, body: dict[str, Any]) -> dict[str, Any]:
        """The SDK call's keyword arguments: thought signatures back to the bytes the SDK takes."""
        args = copy.deepcopy(body)
        for content in args["contents"]:
            for part in content["parts"]:
                if "thought_signature" in part:
                    part["thought_signature"] = base64.urlsafe_b64decode(part["thought_signature"])
        return args

    async def _call(self, sdk: Any, request: PreparedRequest) -> ModelResponse:
        return self.parse(await sdk.aio.models.generate_content(**self._make_call_args(request.body)))

    def parse(self, response: Any) -> ModelResponse:
        """A GenerateContentResponse (from the SDK call or a batch result) as a ModelResponse."""
        texts: list[str] = []
        calls: list[ToolCall] = []
        refusal = None
        candidates = response.candidates or []
        if candidates:
            cand = candidates[0]
            for part in (cand.content.parts if cand.content and cand.content.parts else []):
                if part.function_call is not None:
                    fc = part.function_call
                    calls.append(ToolCall(tool_name=fc.name or "", arguments=dict(fc.args or {}), call_id=fc.id))
                elif part.text and not part.thought:
                    texts.append(part.text)
            reason = getattr(cand.finish_reason, "name", cand.finish_reason)
            if reason in _REFUSAL_REASONS:
                refusal = str(reason)
        feedback = getattr(response, "prompt_feedback", None)
        if feedback is not None and feedback.block_reason is not None:
            refusal = str(getattr(feedback.block_reason, "name", feedback.block_reason))
        usage = response.usage_metadata
        return ModelResponse(
            text="".join(texts) if texts else None,
            tool_calls=calls,
            refusal=refusal,
            input_tokens=getattr(usage, "prompt_token_count", 0) or 0,
            output_tokens=(getattr(usage, "candidates_token_count", 0) or 0)
            + (getattr(usage, "thoughts_token_count", 0) or 0),
        )

    async def aclose(self) -> None:
        sdk, self._sdk, self._sdk_loop = self._sdk, None, None
        if sdk is not None:
            aio_close = getattr(sdk.aio, "aclose", None)
            if aio_close is not None:
                await aio_close()
