"""``client.beta.messages`` through the real anthropic client against the simulator: the same
span as ``client.messages`` for ``create`` (sync, async, ``stream=True``), ``stream()`` and
``parse()`` where the installed release has them."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from anthropic.resources.beta.messages import AsyncMessages, Messages
from sdk_support import API_KEY, omit_of, read_spans

import evalshift_sdk
from evalshift_core.simulator import Simulator, load_scripts
from evalshift_sdk.instrumentation.anthropic import generation_config_of

MODEL = "claude-sim"
BETAS = ["token-efficient-tools-2025-02-19"]
LOOKUP = {
    "name": "lookup_order",
    "description": "Look an order up by id.",
    "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]},
}
NOTIFY = {
    "name": "notify_security_team",
    "description": "Escalate a security-sensitive ticket.",
    "input_schema": {"type": "object", "properties": {"summary": {"type": "string"}}},
}
SCRIPT = {
    MODEL: [
        {"when": {"user_matches": "json order (?P<order_id>[A-Z]\\d+)"},
         "reply": {"text": '{{"order_id": "{order_id}", "status": "shipped"}}'}},
        {"when": {"user_matches": "order (?P<order_id>[A-Z]\\d+)", "after": []},
         "reply": {"text": "Checking.", "tool_calls": [
             {"name": "lookup_order", "arguments": {"order_id": "{order_id}"}},
             {"name": "notify_security_team", "arguments": {"summary": "order {order_id} looked up"}}]}},
        {"when": {"user_matches": "broken"}, "reply": {"error": {"status": 400, "message": "prompt is too long"}}},
        {"when": {}, "reply": {"text": "Done."}},
    ]
}
has_stream = pytest.mark.skipif("stream" not in Messages.__dict__, reason="this anthropic has no beta.messages.stream()")
has_parse = pytest.mark.skipif("parse" not in Messages.__dict__, reason="this anthropic has no beta.messages.parse()")


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with Simulator(load_scripts(SCRIPT)) as server:
        yield server


def _client(sim: Simulator, *, aio: bool = False) -> Any:
    cls = anthropic.AsyncAnthropic if aio else anthropic.Anthropic
    return cls(base_url=sim.anthropic_base_url, api_key=API_KEY, max_retries=0)


def _ask(text: str = "where is order A1?") -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 256, "messages": [{"role": "user", "content": text}],
            "tools": [LOOKUP, NOTIFY], "betas": BETAS}


def lookup_order(order_id: str) -> str:
    """Look an order up by id."""
    return "shipped"


def notify_security_team(summary: str) -> str:
    """Escalate a security-sensitive ticket."""
    return "notified"


def _runner_tools() -> list[Any]:
    """The two tools as ``@beta_tool`` functions, for the beta tool runner."""
    return [anthropic.beta_tool(lookup_order), anthropic.beta_tool(notify_security_team)]


def _host_calls(blocks: Any) -> list[tuple[str, str, Any]]:
    return [(b.id, b.name, b.input) for b in blocks if b.type == "tool_use"]


def _span_calls(chat: dict[str, Any]) -> list[tuple[str, str, Any]]:
    return [(c["call_id"], c["tool_name"], c["arguments"]) for c in chat["attrs"]["evalshift.requested_tool_calls"]]


def test_beta_create_records_offered_requested_and_settings(capture_dir, spans, sim):
    """One ``chat`` span per beta call: offered toolset, requested calls, generation settings."""
    message = _client(sim).beta.messages.create(
        **_ask(), stop_sequences=["END"], tool_choice={"type": "auto", "disable_parallel_tool_use": False}
    )
    [chat] = spans("chat")
    a = chat["attrs"]
    # Older releases post the beta to /v1/messages?beta=true, recent ones to /v1/messages: both served.
    assert sim.requests[0]["path"] in {"/v1/messages?beta=true", "/v1/messages"}
    assert _span_calls(chat) == _host_calls(message.content)
    assert [c[1] for c in _span_calls(chat)] == ["lookup_order", "notify_security_team"]
    assert a["evalshift.output_text"] == "Checking."
    assert a["gen_ai.provider.name"] == "anthropic" and a["gen_ai.request.model"] == MODEL
    assert a["evalshift.toolset_ref"].startswith("sha256:")
    config = a["evalshift.generation_config"]
    assert config == {"max_tokens": 256, "stop_sequences": ["END"], "parallel_tool_calls": True,
                      "tool_choice": {"type": "auto", "disable_parallel_tool_use": False}}
    assert "betas" not in config  # a beta header, not a generation setting
    assert a["gen_ai.usage.output_tokens"] == message.usage.output_tokens


def test_beta_and_plain_messages_offer_the_same_toolset(capture_dir, spans, sim):
    client = _client(sim)
    client.messages.create(**{k: v for k, v in _ask().items() if k != "betas"})
    client.beta.messages.create(**_ask())
    plain, beta = spans("chat")
    assert plain["attrs"]["evalshift.toolset_ref"] == beta["attrs"]["evalshift.toolset_ref"]
    assert _span_calls(plain)[0][1:] == _span_calls(beta)[0][1:]


def test_beta_create_stream_with_context_manager_keeps_the_proxy(capture_dir, spans, sim):
    """``with client.beta.messages.create(stream=True) as s:`` is observed; arguments arrive in fragments."""
    with _client(sim).beta.messages.create(**_ask(), stream=True) as stream:
        assert type(stream).__name__ == "SyncStreamProxy"
        events = list(stream)
    fragments = [e for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta"]
    assert len(fragments) > 2
    [chat] = spans("chat")
    started = [e.content_block for e in events if e.type == "content_block_start" and e.content_block.type == "tool_use"]
    assert _span_calls(chat) == [(b.id, b.name, {"order_id": "A1"} if b.name == "lookup_order" else
                                  {"summary": "order A1 looked up"}) for b in started]
    assert chat["attrs"]["evalshift.streamed"] is True
    assert chat["attrs"]["gen_ai.response.finish_reasons"] == ["tool_use"]
    assert "evalshift.stream_incomplete" not in chat["attrs"]


def test_beta_stream_dropped_half_read_ends_its_span_incomplete(capture_dir, spans, sim):
    stream = _client(sim).beta.messages.create(**_ask(), stream=True)
    for event in stream:
        if event.type == "content_block_start":
            break
    del stream, event
    gc.collect()
    [chat] = spans("chat")
    assert chat["attrs"]["evalshift.stream_incomplete"] is True


@has_stream
def test_beta_stream_helper_is_one_span_with_the_final_message(capture_dir, spans, sim):
    with _client(sim).beta.messages.stream(**_ask()) as stream:
        assert type(stream).__name__ == "SyncStreamProxy"
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert len(sim.requests) == 1
    [chat] = spans("chat")  # stream() does not go through create(): still exactly one span
    assert _span_calls(chat) == _host_calls(final.content)
    assert chat["attrs"]["evalshift.output_text"] == text == "Checking."


@has_parse
def test_beta_parse_records_the_answer_and_output_format(capture_dir, spans, sim):
    from pydantic import BaseModel

    class Order(BaseModel):
        order_id: str
        status: str

    parsed = _client(sim).beta.messages.parse(
        model=MODEL, max_tokens=64, messages=[{"role": "user", "content": "json order B7"}],
        output_format=Order, betas=BETAS,
    )
    assert parsed.parsed_output == Order(order_id="B7", status="shipped")
    [chat] = spans("chat")
    assert chat["attrs"]["evalshift.output_text"] == '{"order_id": "B7", "status": "shipped"}'
    assert chat["attrs"]["evalshift.generation_config"]["output_format"] == "Order"


def test_async_beta_create_stream_and_helper_share_the_turn(capture_dir, spans, sim):
    client = _client(sim, aio=True)

    async def main() -> Any:
        with evalshift_sdk.turn(prompt_id="beta-aio"):
            first = await client.beta.messages.create(**_ask())
            async with await client.beta.messages.create(**_ask(), stream=True) as s:
                assert type(s).__name__ == "AsyncStreamProxy"
                async for _ in s:
                    pass
            if "stream" in AsyncMessages.__dict__:
                async with client.beta.messages.stream(**_ask()) as s:
                    await s.get_final_message()
        return first

    first = asyncio.run(main())
    chats = spans("chat")
    assert len(chats) == len(sim.requests) >= 2
    assert len({c["traceId"] for c in chats}) == 1
    assert _span_calls(chats[0]) == _host_calls(first.content)
    assert all(len(c["attrs"]["evalshift.requested_tool_calls"]) == 2 for c in chats)


def test_beta_error_is_recorded_and_reaches_the_host_unchanged(capture_dir, spans, sim):
    with pytest.raises(anthropic.BadRequestError, match="prompt is too long"):
        _client(sim).beta.messages.create(**_ask("broken request"))
    [chat] = spans("chat")
    assert chat["status"]["code"] == 2
    assert chat["attrs"]["error.type"] == "BadRequestError"


def test_beta_omit_sentinels_are_not_recorded(capture_dir, spans, sim):
    _client(sim).beta.messages.create(**_ask(), stop_sequences=omit_of(anthropic), tool_choice=anthropic.NOT_GIVEN)
    [chat] = spans("chat")
    config = chat["attrs"]["evalshift.generation_config"]
    assert "stop_sequences" not in config and "tool_choice" not in config


def test_beta_with_raw_response_keeps_working(capture_dir, spans, sim):
    raw = _client(sim).beta.messages.with_raw_response.create(**_ask())
    message = raw.parse()
    assert raw.http_response.status_code == 200
    [chat] = spans("chat")
    assert _span_calls(chat) == _host_calls(message.content)


@pytest.mark.skipif(not hasattr(anthropic, "beta_tool"), reason="this anthropic has no @beta_tool")
def test_beta_tool_objects_are_offered_as_the_tools_they_send(capture_dir, spans, sim):
    """``@beta_tool`` functions are recorded as the ``tools[]`` entry the SDK sends for them."""

    @anthropic.beta_tool
    def lookup_order(order_id: str) -> str:
        """Look an order up by id.

        Args:
            order_id: the order's id.
        """
        return "shipped"

    _client(sim).beta.messages.create(**{**_ask(), "tools": [lookup_order]})
    [chat] = spans("chat")
    sent = sim.requests[0]["body"]["tools"]
    offered = (capture_dir / "toolsets" / (chat["attrs"]["evalshift.toolset_ref"].split(":")[1] + ".json")).read_text()
    assert [t["name"] for t in sent] == ["lookup_order"]
    assert '"lookup_order"' in offered and '"order_id"' in offered


@pytest.mark.skipif("tool_runner" not in Messages.__dict__, reason="this anthropic has no tool_runner()")
@pytest.mark.parametrize("stream", [False, True])
def test_tool_runner_rounds_are_each_a_model_call_in_the_turn(capture_dir, spans, sim, stream):
    """The beta tool runner sends each round through ``beta.messages.create``: one span a round."""

    client = _client(sim)
    with evalshift_sdk.turn(prompt_id="runner"):
        runner = client.beta.messages.tool_runner(
            model=MODEL, max_tokens=128, messages=[{"role": "user", "content": "where is order A1?"}],
            tools=_runner_tools(), thread=False, stream=stream,
        )
        for round_ in runner:
            if stream:
                round_.get_final_message()
    first, second = spans("chat")
    assert [c["tool_name"] for c in first["attrs"]["evalshift.requested_tool_calls"]] == ["lookup_order", "notify_security_team"]
    assert second["attrs"]["evalshift.output_text"] == "Done."
    assert [m["role"] for m in second["attrs"]["gen_ai.input.messages"]] == ["user", "assistant", "tool"]
    assert first["traceId"] == second["traceId"]
    executed = spans("execute_tool")
    # Each @beta_tool run by the runner is an execution, linked to the call it answers.
    requested = {c["tool_name"]: c["call_id"] for c in first["attrs"]["evalshift.requested_tool_calls"]}
    assert sorted((s["attrs"]["gen_ai.tool.name"], s["attrs"]["gen_ai.tool.call.id"]) for s in executed) == sorted(
        requested.items())
    assert {s["attrs"]["gen_ai.tool.name"]: s["attrs"]["gen_ai.tool.call.result"] for s in executed} == {
        "lookup_order": "shipped", "notify_security_team": "notified"}
    assert {s["traceId"] for s in executed} == {first["traceId"]}


@pytest.mark.skipif("tool_runner" not in Messages.__dict__, reason="this anthropic has no tool_runner()")
def test_tool_runner_executions_record_failures_and_are_not_doubled(capture_dir, spans, sim):
    """A @beta_tool that raises is recorded failed (the runner reports the error to the model);
    one that is also an @evalshift_sdk.tool is recorded once."""

    @anthropic.beta_tool
    def lookup_order(order_id: str) -> str:
        """Look an order up by id."""
        raise LookupError(f"no order {order_id}")

    @anthropic.beta_tool
    @evalshift_sdk.tool
    def notify_security_team(summary: str) -> str:
        """Escalate a security-sensitive ticket."""
        return "notified"

    client = _client(sim)
    with evalshift_sdk.turn(prompt_id="runner"):
        runner = client.beta.messages.tool_runner(
            model=MODEL, max_tokens=128, messages=[{"role": "user", "content": "where is order A1?"}],
            tools=[lookup_order, notify_security_team], thread=False,
        )
        for _ in runner:
            pass
    executed = {s["attrs"]["gen_ai.tool.name"]: s for s in spans("execute_tool")}
    assert sorted(executed) == ["lookup_order", "notify_security_team"]
    assert len(spans("execute_tool")) == 2
    assert executed["lookup_order"]["attrs"]["evalshift.tool.failed"] is True
    assert executed["lookup_order"]["attrs"]["error.type"] == "LookupError"


@pytest.mark.skipif("tool_runner" not in Messages.__dict__, reason="this anthropic has no tool_runner()")
@pytest.mark.parametrize("aio", [False, True], ids=["sync", "async"])
def test_tool_runner_outside_a_turn_is_one_turn(capture_dir, spans, sim, aio):
    """Without turn(), the runner's rounds and executions form one implicit turn (as
    google-genai's automatic function calling does), not one turn per round."""
    if aio:

        @anthropic.beta_async_tool
        async def lookup_order(order_id: str) -> str:
            """Look an order up by id."""
            return "shipped"

        @anthropic.beta_async_tool
        async def notify_security_team(summary: str) -> str:
            """Escalate a security-sensitive ticket."""
            return "notified"

        async def main() -> Any:
            runner = _client(sim, aio=True).beta.messages.tool_runner(
                model=MODEL, max_tokens=128, messages=[{"role": "user", "content": "where is order A1?"}],
                tools=[lookup_order, notify_security_team])
            return await runner.until_done()

        final = asyncio.run(main())
    else:
        runner = _client(sim).beta.messages.tool_runner(
            model=MODEL, max_tokens=128, messages=[{"role": "user", "content": "where is order A1?"}],
            tools=_runner_tools())
        final = runner.until_done()
    assert final.content[0].text == "Done."
    assert evalshift_sdk.current_turn() is None  # nothing of the implicit turn is left behind
    found = spans()
    [turn] = [s for s in found if s["attrs"]["gen_ai.operation.name"] == "invoke_agent"]
    assert turn["attrs"]["evalshift.implicit_turn"] is True
    assert sorted(s["attrs"]["gen_ai.operation.name"] for s in found) == [
        "chat", "chat", "execute_tool", "execute_tool", "invoke_agent"]
    assert {s["traceId"] for s in found} == {turn["traceId"]}
    assert all(s.get("parentSpanId") == turn["spanId"] for s in found if s is not turn)
    assert all(s["attrs"].get("gen_ai.tool.call.id") for s in found if s["attrs"]["gen_ai.operation.name"] == "execute_tool")


@pytest.mark.skipif("tool_runner" not in Messages.__dict__, reason="this anthropic has no tool_runner()")
def test_a_tool_runner_closed_early_ends_its_implicit_turn(capture_dir, spans, sim):
    runner = _client(sim).beta.messages.tool_runner(
        model=MODEL, max_tokens=128, messages=[{"role": "user", "content": "where is order A1?"}],
        tools=_runner_tools())
    next(iter(runner))
    runner.close()
    assert evalshift_sdk.current_turn() is None
    assert [s["attrs"]["gen_ai.operation.name"] for s in spans("invoke_agent")] == ["invoke_agent"]


def test_credentials_and_ids_never_reach_generation_config():
    """Beta-only arguments that name who pays or carry tokens are not generation settings."""
    config = generation_config_of({
        "model": MODEL, "max_tokens": 5, "temperature": 0.0, "betas": BETAS,
        "fallback_credit_token": "tok-SECRET", "billing_policy": {"type": "x"}, "workspace_id": "ws_1",
        "user_profile_id": "up_1", "thread": {"id": "t"},
        "mcp_servers": [{"type": "url", "url": "https://mcp.example", "name": "m", "authorization_token": "SECRET"}],
    })
    assert config == {"max_tokens": 5, "temperature": 0.0}


def test_uninstrument_restores_the_beta_originals(tmp_path, sim):
    names = [n for n in ("create", "parse", "stream") if n in Messages.__dict__]
    owners = [(o, n) for o in (Messages, AsyncMessages) for n in names]
    before = [o.__dict__[n] for o, n in owners]
    evalshift_sdk.init(tmp_path, enabled=True)
    try:
        assert all(o.__dict__[n] is not b for (o, n), b in zip(owners, before))
        _client(sim).beta.messages.create(**_ask())
    finally:
        evalshift_sdk.shutdown()
    assert [o.__dict__[n] for o, n in owners] == before
    _client(sim).beta.messages.create(**_ask())  # after shutdown: nothing more recorded
    assert len(read_spans(tmp_path)) == 1
