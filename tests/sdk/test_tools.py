"""The executed side: @tool (sync and async) and record_tool, linked to the requested calls."""

from __future__ import annotations

import asyncio

import pytest
from sdk_support import in_process_openai

import evalshift_sdk


def _ask(client) -> list[str]:
    response = client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "A1?"}])
    return [c.id for c in response.choices[0].message.tool_calls]


def test_tool_links_to_the_requested_call_by_name_and_arguments(capture_dir, spans):
    """Without a call id, an execution links to the requested call by name and arguments."""

    @evalshift_sdk.tool
    def lookup_order(order_id: str) -> dict:
        return {"order_id": order_id, "status": "shipped"}

    client = in_process_openai()
    with evalshift_sdk.turn(prompt_id="tools"):
        [call_id] = _ask(client)
        assert lookup_order("A1") == {"order_id": "A1", "status": "shipped"}
    [tool] = spans("execute_tool")
    assert tool["attrs"]["gen_ai.tool.call.id"] == call_id
    assert tool["attrs"]["gen_ai.tool.call.arguments"] == {"order_id": "A1"}
    assert tool["attrs"]["gen_ai.tool.call.result"] == {"order_id": "A1", "status": "shipped"}
    assert "evalshift.tool.failed" not in tool["attrs"]


def test_record_tool_links_by_call_id(capture_dir, spans):
    client = in_process_openai()
    with evalshift_sdk.turn(prompt_id="tools"):
        [call_id] = _ask(client)
        evalshift_sdk.record_tool("lookup_order", {"order_id": "other"}, result={"ok": True}, call_id=call_id)
    [tool] = spans("execute_tool")
    assert tool["attrs"]["gen_ai.tool.call.id"] == call_id


def test_async_tool_and_exception_recorded_as_failed(capture_dir, spans):
    @evalshift_sdk.tool(name="issue_refund")
    async def refund(order_id: str, amount_usd: float) -> dict:
        raise PermissionError(f"order {order_id} not verified")

    async def main():
        with evalshift_sdk.turn(prompt_id="tools"), pytest.raises(PermissionError, match="not verified"):
            await refund("A1", amount_usd=20.0)

    asyncio.run(main())
    [tool] = spans("execute_tool")
    a = tool["attrs"]
    assert tool["name"] == "execute_tool issue_refund"
    assert a["gen_ai.tool.call.arguments"] == {"order_id": "A1", "amount_usd": 20.0}
    assert a["evalshift.tool.failed"] is True and a["error.type"] == "PermissionError"
    assert "not verified" in a["evalshift.tool.error"]
    assert tool["status"]["code"] == 2


def test_success_false_result_is_a_failed_tool_call(capture_dir, spans):
    """Results like {"success": false} are recorded as failed."""
    evalshift_sdk.record_tool("issue_refund", {"order_id": "A1"}, result={"success": False, "reason": "closed"})
    evalshift_sdk.record_tool("issue_refund", {"order_id": "A2"}, result={"success": True})
    failed, ok = spans("execute_tool")
    assert failed["attrs"]["evalshift.tool.failed"] is True
    assert "evalshift.tool.failed" not in ok["attrs"]


def test_parallel_calls_each_linked_once(capture_dir, spans):
    """Two requested calls of the same tool: each execution claims a different one."""
    import openai

    try:
        import httpx2
    except ImportError:  # openai 1.x
        import httpx as httpx2

    body = {
        "id": "c", "object": "chat.completion", "created": 1, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Rome\"}"}},
        ]}}],
    }
    client = openai.OpenAI(api_key="k", base_url="http://in-process/v1", max_retries=0,
                           http_client=httpx2.Client(transport=httpx2.MockTransport(lambda r: httpx2.Response(200, json=body))))

    @evalshift_sdk.tool
    def get_weather(city: str) -> str:
        return "sunny"

    with evalshift_sdk.turn(prompt_id="parallel"):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
        get_weather("Rome")
        get_weather(city="Paris")
    rome, paris = spans("execute_tool")
    assert rome["attrs"]["gen_ai.tool.call.id"] == "call_b"
    assert paris["attrs"]["gen_ai.tool.call.id"] == "call_a"


def test_tool_outside_capture_is_just_the_function():
    @evalshift_sdk.tool
    def add(a: int, b: int) -> int:
        return a + b

    assert not evalshift_sdk.is_enabled()
    assert add(2, 3) == 5
    assert add.__name__ == "add"
