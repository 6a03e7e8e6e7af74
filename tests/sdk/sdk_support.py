"""Helpers for the SDK tests: recorded fixtures' location, captured spans, clients on a server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def _cassette_module() -> Any:
    """The cassette server; loaded by path when the core's dependencies are not installed
    (the oldest-provider test environment installs only what the SDK needs)."""
    try:
        from evalshift_core.simulator import _cassette
    except ImportError:
        import importlib.util

        path = Path(__file__).resolve().parents[2] / "evalshift_core" / "simulator" / "_cassette.py"
        spec = importlib.util.spec_from_file_location("evalshift_cassette", path)
        assert spec is not None and spec.loader is not None
        _cassette = importlib.util.module_from_spec(spec)
        sys.modules["evalshift_cassette"] = _cassette
        spec.loader.exec_module(_cassette)
    return _cassette


_cassette = _cassette_module()
CassetteServer = _cassette.CassetteServer
Interaction = _cassette.Interaction
request_kwargs = _cassette.request_kwargs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"
API_KEY = "sk-test-SECRET-KEY-0123456789"

_JSON_KEYS = {
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
    "evalshift.requested_tool_calls", "evalshift.generation_config", "evalshift.inputs",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
}


def _value(v: dict[str, Any]) -> Any:
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "intValue" in v:
        return int(v["intValue"])
    return next(iter(v.values())) if v else None


def read_spans(directory: Path) -> list[dict[str, Any]]:
    """Every span under ``directory``, with ``attrs`` decoded (JSON attributes parsed)."""
    out = []
    for f in sorted(directory.glob("*.jsonl")):
        for line in f.read_text().splitlines():
            if not line:
                continue
            for rs in json.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for s in ss["spans"]:
                        attrs = {}
                        for kv in s["attributes"]:
                            value = _value(kv["value"])
                            if kv["key"] in _JSON_KEYS and isinstance(value, str):
                                value = json.loads(value)
                            attrs[kv["key"]] = value
                        s["attrs"] = attrs
                        s["file"] = f.name
                        out.append(s)
    out.sort(key=lambda s: int(s["startTimeUnixNano"]))
    return out


def openai_client(server: CassetteServer, *, aio: bool = False) -> Any:
    import openai

    cls = openai.AsyncOpenAI if aio else openai.OpenAI
    return cls(base_url=server.openai_base_url, api_key=API_KEY, max_retries=0)


def anthropic_client(server: CassetteServer, *, aio: bool = False) -> Any:
    import anthropic

    cls = anthropic.AsyncAnthropic if aio else anthropic.Anthropic
    return cls(base_url=server.base_url, api_key=API_KEY, max_retries=0)


def genai_client(server: CassetteServer) -> Any:
    from google import genai

    return genai.Client(api_key=API_KEY, http_options={"base_url": server.base_url, "api_version": "v1beta"})


TOOL_CALL_COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order_id":"A1"}'}}
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
}


def in_process_openai(*, aio: bool = False, echo: bool = False) -> Any:
    """A real openai client over an in-process transport (no sockets). With ``echo`` the
    first tool call's arguments carry the request's last user message, so a test can check
    that each response's span sits in the turn that sent it."""
    import openai

    try:  # openai 3.x ships on httpx2; the 1.x releases on httpx
        import httpx2
    except ImportError:
        import httpx as httpx2  # type: ignore[no-redef]

    def reply(request: Any) -> Any:
        body = dict(TOOL_CALL_COMPLETION)
        if echo:
            sent = json.loads(request.content)["messages"][-1]["content"]
            body = json.loads(json.dumps(TOOL_CALL_COMPLETION))
            body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = json.dumps({"order_id": sent})
        return httpx2.Response(200, headers={"content-type": "application/json"}, content=json.dumps(body).encode())

    if aio:

        async def areply(request: Any) -> Any:
            return reply(request)

        http = httpx2.AsyncClient(transport=httpx2.MockTransport(areply))
        return openai.AsyncOpenAI(api_key=API_KEY, base_url="http://in-process/v1", http_client=http, max_retries=0)
    http = httpx2.Client(transport=httpx2.MockTransport(reply))
    return openai.OpenAI(api_key=API_KEY, base_url="http://in-process/v1", http_client=http, max_retries=0)


def chat_helpers(client: Any) -> Any:
    """Where ``parse`` and ``stream`` live: ``chat.completions`` (openai >= 1.92) or ``beta``."""
    if hasattr(client.chat.completions, "stream"):
        return client.chat.completions
    return client.beta.chat.completions


def omit_of(module: Any) -> Any:
    """The SDK's "not given" sentinel (``omit`` in recent releases, ``NOT_GIVEN`` before)."""
    return getattr(module, "omit", None) or module.NOT_GIVEN
