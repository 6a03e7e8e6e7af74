"""Every anthropic Messages call shape, through the real client, against recorded responses."""

from __future__ import annotations

import asyncio
import json

from sdk_support import CassetteServer, Interaction, anthropic_client, omit_of, request_kwargs

import evalshift_sdk


def test_text_and_parallel_tool_use_in_one_span(capture_dir, spans, replay):
    server = replay("anthropic/messages_parallel_tool_use_sonnet46.yaml")
    message = anthropic_client(server).messages.create(**request_kwargs(server.interactions[0]))
    [chat] = spans("chat")
    a = chat["attrs"]
    host = [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"]
    assert [(c["call_id"], c["tool_name"], c["arguments"]) for c in a["evalshift.requested_tool_calls"]] == host
    assert [h[1] for h in host] == ["get_weather", "get_time"]
    assert a["evalshift.output_text"] == message.content[0].text
    assert a["gen_ai.response.finish_reasons"] == ["tool_use"]
    assert a["gen_ai.provider.name"] == "anthropic"
    assert a["gen_ai.usage.output_tokens"] == message.usage.output_tokens


def test_tool_use_and_tool_result_blocks_in_semconv_shape(capture_dir, spans, replay):
    """Anthropic tool_use/tool_result blocks -> tool_call / tool_call_response parts."""
    server = replay("anthropic/messages_tool_result_then_tool_use.yaml")
    anthropic_client(server).messages.create(**request_kwargs(server.interactions[0]))
    [chat] = spans("chat")
    history = chat["attrs"]["gen_ai.input.messages"]
    assert history[1] == {
        "role": "assistant",
        "parts": [
            {"type": "text", "content": "I'll help you get the weather and current time in San Francisco."},
            {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"location": "San Francisco, CA"}},
        ],
    }
    assert history[2] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_1", "response": "Sunny and 65 degrees Fahrenheit"}],
    }
    assert chat["attrs"]["evalshift.requested_tool_calls"][0]["tool_name"] == "get_time"


def test_tool_result_final_answer(capture_dir, spans, replay):
    server = replay("anthropic/messages_tool_result_final_answer.yaml")
    message = anthropic_client(server).messages.create(**request_kwargs(server.interactions[0]))
    [chat] = spans("chat")
    assert chat["attrs"]["evalshift.requested_tool_calls"] == []
    assert chat["attrs"]["evalshift.output_text"] == message.content[0].text
    result = chat["attrs"]["gen_ai.input.messages"][-1]["parts"][0]
    assert result["response"] == {"weather": "sunny", "temperature": "75"}


def test_system_and_tool_choice_parallel_opt_out(capture_dir, spans, replay):
    """tool_choice.disable_parallel_tool_use -> parallel_tool_calls false; system -> system_instructions."""
    server = replay("anthropic/messages_parallel_tool_use_sonnet46.yaml")
    kwargs = request_kwargs(server.interactions[0])
    anthropic_client(server).messages.create(
        **kwargs, system="You are terse.", tool_choice={"type": "auto", "disable_parallel_tool_use": True}, stop_sequences=["END"]
    )
    [chat] = spans("chat")
    config = chat["attrs"]["evalshift.generation_config"]
    assert config["parallel_tool_calls"] is False
    assert config["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert config["max_tokens"] == 1024 and config["stop_sequences"] == ["END"]
    assert chat["attrs"]["gen_ai.system_instructions"] == [{"type": "text", "content": "You are terse."}]


def test_refusal_stop_reason():
    """Anthropic stop_reason "refusal" -> evalshift.refusal."""
    body = {
        "id": "msg_refusal", "type": "message", "role": "assistant", "model": "claude-sonnet-4-6",
        "content": [], "stop_reason": "refusal", "stop_sequence": None,
        "usage": {"input_tokens": 12, "output_tokens": 0},
    }
    interaction = Interaction("POST", "/v1/messages", None, 200, [("Content-Type", "application/json")], json.dumps(body).encode())
    import tempfile
    from pathlib import Path

    from sdk_support import read_spans

    directory = Path(tempfile.mkdtemp())
    evalshift_sdk.init(directory, enabled=True)
    try:
        with CassetteServer([interaction]) as server:
            message = anthropic_client(server).messages.create(
                model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": "x"}]
            )
    finally:
        evalshift_sdk.shutdown()
    [chat] = read_spans(directory)
    assert message.stop_reason == "refusal"
    assert chat["attrs"]["evalshift.refusal"] == "refusal"


def test_stream_true_with_context_manager_and_fragments(capture_dir, spans, replay):
    """``with client.messages.create(stream=True) as s:`` must not escape the proxy."""
    server = replay("anthropic/messages_parallel_tool_use_streaming.yaml")
    with anthropic_client(server).messages.create(**request_kwargs(server.interactions[0])) as stream:
        assert type(stream).__name__ == "SyncStreamProxy"
        events = list(stream)
    partial = [e for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta"]
    assert len(partial) > 2
    [chat] = spans("chat")
    calls = chat["attrs"]["evalshift.requested_tool_calls"]
    assert [c["tool_name"] for c in calls] == ["get_weather", "get_time"]
    assert calls[0]["arguments"] == {"location": "San Francisco, CA", "unit": "celsius"}
    assert chat["attrs"]["gen_ai.response.finish_reasons"] == ["tool_use"]


def test_messages_stream_helper_one_span_and_final_message(capture_dir, spans, replay):
    server = replay("anthropic/messages_parallel_tool_use_streaming_sonnet46.yaml")
    kwargs = request_kwargs(server.interactions[0])
    kwargs.pop("stream", None)
    with anthropic_client(server).messages.stream(**kwargs) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    [chat] = spans("chat")
    host = [(b.id, b.input) for b in final.content if b.type == "tool_use"]
    assert [(c["call_id"], c["arguments"]) for c in chat["attrs"]["evalshift.requested_tool_calls"]] == host
    assert chat["attrs"].get("evalshift.output_text") == (text or None)


def test_async_create_stream_and_stream_helper(capture_dir, spans, replay):
    server = replay(
        "anthropic/messages_parallel_tool_use.yaml",
        "anthropic/messages_parallel_tool_use_streaming.yaml",
        "anthropic/messages_parallel_tool_use_streaming_sonnet46.yaml",
    )
    client = anthropic_client(server, aio=True)
    plain, streamed, helper = (request_kwargs(i) for i in server.interactions)
    helper.pop("stream", None)

    async def main():
        with evalshift_sdk.turn(prompt_id="aio"):
            await client.messages.create(**plain)
            async with await client.messages.create(**streamed) as s:
                assert type(s).__name__ == "AsyncStreamProxy"
                async for _ in s:
                    pass
            async with client.messages.stream(**helper) as s:
                return await s.get_final_message()

    final = asyncio.run(main())
    chats = spans("chat")
    assert len(chats) == 3
    assert len({c["traceId"] for c in chats}) == 1
    assert all(len(c["attrs"]["evalshift.requested_tool_calls"]) == 2 for c in chats)
    assert chats[2]["attrs"]["evalshift.requested_tool_calls"][1]["call_id"] == final.content[-1].id


def test_with_raw_response_keeps_working(capture_dir, spans, replay):
    server = replay("anthropic/messages_parallel_tool_use.yaml")
    raw = anthropic_client(server).messages.with_raw_response.create(**request_kwargs(server.interactions[0]))
    message = raw.parse()
    assert raw.http_response.status_code == 200
    [chat] = spans("chat")
    assert len(chat["attrs"]["evalshift.requested_tool_calls"]) == len([b for b in message.content if b.type == "tool_use"])


def test_omit_sentinels_are_not_recorded(capture_dir, spans, replay):
    import anthropic

    server = replay("anthropic/messages_parallel_tool_use.yaml")
    kwargs = request_kwargs(server.interactions[0])
    anthropic_client(server).messages.create(**kwargs, stop_sequences=omit_of(anthropic), tool_choice=anthropic.NOT_GIVEN)
    [chat] = spans("chat")
    config = chat["attrs"]["evalshift.generation_config"]
    assert "stop_sequences" not in config and "tool_choice" not in config
