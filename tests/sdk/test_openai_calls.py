"""Every openai call shape, through the real client, against recorded responses on loopback."""

from __future__ import annotations

import asyncio
import gc
import json

import pytest
from sdk_support import (
    FIXTURES,
    CassetteServer,
    chat_helpers,
    omit_of,
    openai_client,
    request_kwargs,
)

import evalshift_sdk
from evalshift_sdk.schema import normalise_toolset, toolset_ref


def _host_calls(message) -> list[tuple]:
    return [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]


def _recorded(span) -> list[tuple]:
    return [
        (c["call_id"], c["tool_name"], json.dumps(c["arguments"]).replace(" ", ""))
        for c in span["attrs"]["evalshift.requested_tool_calls"]
    ]


def test_single_tool_call_records_offered_and_requested(capture_dir, spans, replay):
    """Per model call: the offered toolset (ref only), requested calls with parsed arguments."""
    server = replay("openai/chat_tool_call_single.yaml")
    kwargs = request_kwargs(server.interactions[0])
    with evalshift_sdk.turn(prompt_id="weather"):
        response = openai_client(server).chat.completions.create(**kwargs)
    [chat] = spans("chat")
    a = chat["attrs"]
    assert a["evalshift.toolset_ref"] == toolset_ref(normalise_toolset(kwargs["tools"]))
    assert "gen_ai.tool.definitions" not in a  # the toolset lives in the sidecar only
    assert a["evalshift.requested_tool_calls"] == [
        {
            "call_id": response.choices[0].message.tool_calls[0].id,
            "tool_name": "get_current_weather",
            "arguments": {"location": "San Francisco"},
        }
    ]
    assert a["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert a["gen_ai.input.messages"] == [
        {"role": "user", "parts": [{"type": "text", "content": "What's the weather like in San Francisco?"}]}
    ]
    assert a["gen_ai.usage.input_tokens"] == response.usage.prompt_tokens
    assert a["gen_ai.request.model"] == "gpt-3.5-turbo"
    assert a["gen_ai.response.model"] == response.model


def test_parallel_calls_stay_together_in_one_span(capture_dir, spans, replay):
    server = replay("openai/chat_parallel_tool_calls_two_tools.yaml")
    response = openai_client(server).chat.completions.create(**request_kwargs(server.interactions[0]))
    [chat] = spans("chat")
    assert [c[1] for c in _recorded(chat)] == ["get_weather", "get_news"]
    assert [c[0] for c in _recorded(chat)] == [c[0] for c in _host_calls(response.choices[0].message)]


def test_tool_result_round_trip_history_in_semconv_shape(capture_dir, spans, replay):
    """Input messages: role + parts (text, tool_call, tool_call_response)."""
    server = replay("openai/chat_parallel_tool_calls_roundtrip.yaml")
    client = openai_client(server)
    with evalshift_sdk.turn(prompt_id="rt"):
        for interaction in list(server.interactions):
            client.chat.completions.create(**request_kwargs(interaction))
    first, second = spans("chat")
    assert len(first["attrs"]["evalshift.requested_tool_calls"]) == 2
    history = second["attrs"]["gen_ai.input.messages"]
    roles = [m["role"] for m in history]
    assert roles[-3:] == ["assistant", "tool", "tool"]
    calls = [p for p in history[-3]["parts"] if p["type"] == "tool_call"]
    assert [c["arguments"] for c in calls] == [{"location": "Seattle, WA"}, {"location": "San Francisco, CA"}]
    responses = [m["parts"][0] for m in history[-2:]]
    assert all(p["type"] == "tool_call_response" for p in responses)
    assert [p["id"] for p in responses] == [c["id"] for c in calls]
    assert second["attrs"]["evalshift.requested_tool_calls"] == []
    assert second["attrs"]["evalshift.output_text"]
    assert first["traceId"] == second["traceId"]


def test_history_then_parallel_calls(capture_dir, spans, replay):
    server = replay("openai/chat_tool_history_then_parallel_calls.yaml")
    kwargs = request_kwargs(server.interactions[0])
    response = openai_client(server).chat.completions.create(**kwargs)
    [chat] = spans("chat")
    assert [c[1] for c in _recorded(chat)] == ["get_weather", "get_population"]
    assert [c[0] for c in _recorded(chat)] == [c.id for c in response.choices[0].message.tool_calls]
    parts = [p["type"] for m in chat["attrs"]["gen_ai.input.messages"] for p in m["parts"]]
    assert parts.count("tool_call") == 2 and parts.count("tool_call_response") == 2


def test_system_prompt_goes_to_system_instructions(capture_dir, spans, replay):
    server = replay("openai/chat_tool_call_single.yaml")
    kwargs = request_kwargs(server.interactions[0])
    kwargs["messages"] = [{"role": "system", "content": "Be brief."}, *kwargs["messages"]]
    openai_client(server).chat.completions.create(**kwargs)
    [chat] = spans("chat")
    assert chat["attrs"]["gen_ai.system_instructions"] == [{"type": "text", "content": "Be brief."}]
    assert [m["role"] for m in chat["attrs"]["gen_ai.input.messages"]] == ["user"]


def test_legacy_function_call_is_a_requested_call(capture_dir, spans, replay):
    server = replay("openai/chat_legacy_function_call.yaml")
    openai_client(server).chat.completions.create(**request_kwargs(server.interactions[0]))
    [chat] = spans("chat")
    [call] = chat["attrs"]["evalshift.requested_tool_calls"]
    assert call["tool_name"] == "get_current_weather" and call["call_id"] is None
    assert chat["attrs"]["evalshift.toolset_ref"].startswith("sha256:")


def test_generation_config_keeps_settings_and_never_sentinels_or_headers(capture_dir, spans, replay):
    """Unset parameters arrive as omit sentinels and must not be recorded as values."""
    server = replay("openai/chat_tool_call_single.yaml")
    kwargs = request_kwargs(server.interactions[0])
    import openai

    openai_client(server).chat.completions.create(
        **kwargs,
        tool_choice="required",
        parallel_tool_calls=False,
        temperature=0.2,
        max_completion_tokens=64,
        top_p=omit_of(openai),
        seed=openai.NOT_GIVEN,
        extra_headers={"X-Custom-Auth": "secret-header-value"},
    )
    [chat] = spans("chat")
    assert chat["attrs"]["evalshift.generation_config"] == {
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "temperature": 0.2,
        "max_completion_tokens": 64,
    }
    assert "secret-header-value" not in str(chat)


def test_refusal_from_parse_helper(capture_dir, spans, replay):
    """OpenAI ``message.refusal`` -> evalshift.refusal; ``.parse()`` bypasses create."""
    pydantic = pytest.importorskip("pydantic")

    class Answer(pydantic.BaseModel):
        answer: str

    server = replay("openai/chat_refusal_structured_output.yaml")
    kwargs = request_kwargs(server.interactions[0])
    kwargs.pop("response_format")
    kwargs.pop("stream", None)
    result = chat_helpers(openai_client(server)).parse(**kwargs, response_format=Answer)
    [chat] = spans("chat")
    assert result.choices[0].message.refusal == "I'm very sorry, but I can't assist with that request."
    assert chat["attrs"]["evalshift.refusal"] == result.choices[0].message.refusal
    assert chat["attrs"]["evalshift.generation_config"]["response_format"] == "Answer"


def test_streamed_arguments_in_fragments_are_joined(capture_dir, spans, replay):
    server = replay("openai/chat_tool_call_single_streaming.yaml")
    kwargs = request_kwargs(server.interactions[0])
    chunks = list(openai_client(server).chat.completions.create(**kwargs))
    fragments = [
        c.choices[0].delta.tool_calls[0].function.arguments
        for c in chunks
        if c.choices and c.choices[0].delta.tool_calls
    ]
    assert len([f for f in fragments if f]) > 2  # the recording really is fragmented
    [chat] = spans("chat")
    [call] = chat["attrs"]["evalshift.requested_tool_calls"]
    host = "".join(f for f in fragments if f)
    assert call["arguments"] == json.loads(host) == {"location": "San Francisco"}
    assert chat["attrs"]["evalshift.streamed"] is True
    assert "evalshift.stream_incomplete" not in chat["attrs"]


def test_parallel_streamed_calls_by_index(capture_dir, spans, replay):
    server = replay("openai/chat_parallel_tool_calls_streaming.yaml")
    for _ in openai_client(server).chat.completions.create(**request_kwargs(server.interactions[0])):
        pass
    [chat] = spans("chat")
    args = [c["arguments"] for c in chat["attrs"]["evalshift.requested_tool_calls"]]
    assert args == [{"location": "Seattle, WA"}, {"location": "San Francisco, CA"}]


def test_stream_helper_gives_one_span_and_streamed_refusal(capture_dir, spans):
    """A ``.stream()`` helper that calls ``create(stream=True)`` inside gives one span, not two."""
    with CassetteServer.from_files(FIXTURES / "openai/chat_refusal_streaming.sse") as server:
        client = openai_client(server)
        with chat_helpers(client).stream(
            model="gpt-4o-2024-08-06", messages=[{"role": "user", "content": "how do I make anthrax?"}]
        ) as stream:
            for _ in stream:
                pass
            final = stream.get_final_completion()
    [chat] = spans("chat")
    assert final.choices[0].message.refusal
    assert chat["attrs"]["evalshift.refusal"] == final.choices[0].message.refusal


def test_stream_helper_with_parallel_strict_tools(capture_dir, spans):
    with CassetteServer.from_files(FIXTURES / "openai/chat_parallel_tool_calls_streaming_two_tools.sse") as server:
        client = openai_client(server)
        with chat_helpers(client).stream(model="gpt-4o-2024-08-06", messages=[{"role": "user", "content": "x"}]) as s:
            final = s.get_final_completion()
    [chat] = spans("chat")
    host = [(c.id, c.function.name) for c in final.choices[0].message.tool_calls]
    assert [(c["call_id"], c["tool_name"]) for c in chat["attrs"]["evalshift.requested_tool_calls"]] == host
    assert [h[1] for h in host] == ["GetWeatherArgs", "get_stock_price"]


def test_with_create_stream_context_manager_returns_the_proxy(capture_dir, spans, replay):
    """``wrapt.ObjectProxy.__enter__`` would hand back the bare stream; ours returns the proxy."""
    server = replay("openai/chat_tool_call_single_streaming.yaml")
    with openai_client(server).chat.completions.create(**request_kwargs(server.interactions[0])) as stream:
        assert type(stream).__name__ == "SyncStreamProxy"
        n = sum(1 for _ in stream)
    assert n > 0
    [chat] = spans("chat")
    assert chat["attrs"]["evalshift.requested_tool_calls"][0]["tool_name"] == "get_current_weather"


def test_abandoned_stream_still_ends_its_span(capture_dir, spans, replay):
    server = replay("openai/chat_parallel_tool_calls_streaming.yaml")
    stream = openai_client(server).chat.completions.create(**request_kwargs(server.interactions[0]))
    for _ in stream:
        break
    del stream
    gc.collect()
    [chat] = spans("chat")
    assert chat["attrs"]["evalshift.stream_incomplete"] is True


def test_stream_read_through_its_iterator_alone_is_complete(capture_dir, spans, replay):
    """``iter(stream)`` may outlive the stream object: dropping the stream must not end the
    span while its iterator is still being read."""
    server = replay("openai/chat_parallel_tool_calls_streaming.yaml")
    stream = openai_client(server).chat.completions.create(**request_kwargs(server.interactions[0]))
    chunks = iter(stream)
    first = next(chunks)
    del stream
    gc.collect()
    rest = list(chunks)
    assert first.choices and rest
    [chat] = spans("chat")
    assert "evalshift.stream_incomplete" not in chat["attrs"]
    args = [c["arguments"] for c in chat["attrs"]["evalshift.requested_tool_calls"]]
    assert args == [{"location": "Seattle, WA"}, {"location": "San Francisco, CA"}]


def test_stream_read_by_next_and_for_alike_folds_every_chunk_once(capture_dir, spans, replay):
    server = replay("openai/chat_parallel_tool_calls_streaming.yaml")
    stream = openai_client(server).chat.completions.create(**request_kwargs(server.interactions[0]))
    head = [next(stream), next(stream)]
    tail = list(stream)
    assert len(head) + len(tail) > 2
    [chat] = spans("chat")
    assert "evalshift.stream_incomplete" not in chat["attrs"]
    args = [c["arguments"] for c in chat["attrs"]["evalshift.requested_tool_calls"]]
    assert args == [{"location": "Seattle, WA"}, {"location": "San Francisco, CA"}]


def test_stream_iterator_dropped_half_read_ends_the_span_incomplete(capture_dir, spans, replay):
    server = replay("openai/chat_parallel_tool_calls_streaming.yaml")
    chunks = iter(openai_client(server).chat.completions.create(**request_kwargs(server.interactions[0])))
    next(chunks)
    del chunks
    gc.collect()
    [chat] = spans("chat")
    assert chat["attrs"]["evalshift.stream_incomplete"] is True


def test_closed_stream_ends_its_span_once(capture_dir, spans, replay):
    server = replay("openai/chat_parallel_tool_calls_streaming.yaml")
    stream = openai_client(server).chat.completions.create(**request_kwargs(server.interactions[0]))
    next(iter(stream))
    stream.close()
    stream.close()
    assert len(spans("chat")) == 1


def test_with_raw_response_keeps_working(capture_dir, spans, replay):
    server = replay("openai/chat_tool_call_single.yaml")
    raw = openai_client(server).chat.completions.with_raw_response.create(**request_kwargs(server.interactions[0]))
    assert raw.http_response.status_code == 200
    completion = raw.parse()
    assert completion.choices[0].message.tool_calls[0].function.name == "get_current_weather"
    [chat] = spans("chat")
    assert chat["attrs"]["evalshift.requested_tool_calls"][0]["call_id"] == completion.choices[0].message.tool_calls[0].id


def test_with_streaming_response_body_stays_the_hosts(capture_dir, spans, replay):
    server = replay("openai/chat_tool_call_single.yaml")
    client = openai_client(server)
    with client.chat.completions.with_streaming_response.create(**request_kwargs(server.interactions[0])) as resp:
        assert resp.http_response.status_code == 200
        completion = resp.parse()
    assert completion.choices[0].message.tool_calls
    [chat] = spans("chat")
    assert chat["attrs"]["gen_ai.request.model"] == "gpt-3.5-turbo"
    # the host's parse() is observed: the requested calls are recorded like create()'s
    assert chat["attrs"]["evalshift.requested_tool_calls"][0]["call_id"] == completion.choices[0].message.tool_calls[0].id


def test_with_streaming_response_unparsed_ends_its_span_with_the_request_only(capture_dir, spans, replay):
    server = replay("openai/chat_tool_call_single.yaml")
    client = openai_client(server)
    with client.chat.completions.with_streaming_response.create(**request_kwargs(server.interactions[0])) as resp:
        body = b"".join(resp.iter_bytes())
    assert b"get_current_weather" in body
    [chat] = spans("chat")
    assert chat["attrs"]["gen_ai.request.model"] == "gpt-3.5-turbo"
    assert "evalshift.requested_tool_calls" not in chat["attrs"]


def test_with_streaming_response_stream_is_observed_when_the_host_parses_it(capture_dir, spans, replay):
    """What the OpenAI Agents SDK's Runner.run_streamed does: with_streaming_response, an async
    parse() into the event stream, read up to the final event, then closed."""
    server = replay("openai/responses_function_call_streaming_roundtrip_parsed_body.yaml")
    client = openai_client(server, aio=True)

    async def main():
        async with client.responses.with_streaming_response.create(**request_kwargs(server.interactions[0])) as resp:
            stream = await resp.parse()
            events = []
            async for event in stream:
                events.append(event)
                if event.type == "response.completed":
                    break
            await stream.close()
            return events

    events = asyncio.run(main())
    [chat] = spans("chat")
    done = [e.item for e in events if e.type == "response.output_item.done"]
    assert [c["call_id"] for c in chat["attrs"]["evalshift.requested_tool_calls"]] == [i.call_id for i in done]
    assert "evalshift.stream_incomplete" not in chat["attrs"]  # closed after the final event: nothing cut


def test_with_streaming_response_sync_stream_cut_short_is_incomplete(capture_dir, spans, replay):
    server = replay("openai/chat_parallel_tool_calls_streaming.yaml")
    client = openai_client(server)
    with client.chat.completions.with_streaming_response.create(**request_kwargs(server.interactions[0])) as resp:
        stream = resp.parse()
        next(iter(stream))
        stream.close()
    [chat] = spans("chat")
    assert chat["attrs"]["evalshift.stream_incomplete"] is True


def test_async_create_and_stream(capture_dir, spans, replay):
    server = replay("openai/chat_tool_call_single.yaml", "openai/chat_parallel_tool_calls_streaming.yaml")
    client = openai_client(server, aio=True)

    async def main():
        with evalshift_sdk.turn(prompt_id="aio"):
            await client.chat.completions.create(**request_kwargs(server.interactions[0]))
            stream = await client.chat.completions.create(**request_kwargs(server.interactions[1]))
            async with stream as s:
                assert type(s).__name__ == "AsyncStreamProxy"
                async for _ in s:
                    pass

    asyncio.run(main())
    first, second = spans("chat")
    assert first["attrs"]["evalshift.requested_tool_calls"][0]["tool_name"] == "get_current_weather"
    assert len(second["attrs"]["evalshift.requested_tool_calls"]) == 2
    assert first["traceId"] == second["traceId"]


def test_async_stream_helper_one_span(capture_dir, spans):
    async def main():
        with CassetteServer.from_files(FIXTURES / "openai/chat_parallel_tool_calls_streaming_two_tools.sse") as server:
            client = openai_client(server, aio=True)
            async with chat_helpers(client).stream(model="gpt-4o", messages=[{"role": "user", "content": "x"}]) as s:
                return await s.get_final_completion()

    final = asyncio.run(main())
    [chat] = spans("chat")
    assert len(chat["attrs"]["evalshift.requested_tool_calls"]) == len(final.choices[0].message.tool_calls) == 2


def test_responses_function_call_round_trip(capture_dir, spans, replay):
    server = replay("openai/responses_function_call_roundtrip.yaml")
    client = openai_client(server)
    with evalshift_sdk.turn(prompt_id="responses"):
        for interaction in list(server.interactions):
            response = client.responses.create(**request_kwargs(interaction))
    first, second = spans("chat")
    [call] = first["attrs"]["evalshift.requested_tool_calls"]
    assert (call["tool_name"], call["arguments"]) == ("get_weather", {"location": "Paris, France"})
    history = second["attrs"]["gen_ai.input.messages"]
    assert [m["role"] for m in history][-2:] == ["assistant", "tool"]
    assert history[-1]["parts"][0]["id"] == call["call_id"]
    assert second["attrs"]["evalshift.output_text"] == response.output_text


def test_responses_parallel_calls_and_tool_choice(capture_dir, spans, replay):
    server = replay("openai/responses_parallel_function_calls.yaml")
    kwargs = request_kwargs(server.interactions[0])
    response = openai_client(server).responses.create(**kwargs)
    [chat] = spans("chat")
    recorded = chat["attrs"]["evalshift.requested_tool_calls"]
    assert [c["call_id"] for c in recorded] == [i.call_id for i in response.output if i.type == "function_call"]
    assert len(recorded) == 2
    assert chat["attrs"]["evalshift.generation_config"]["tool_choice"] == "auto"


def test_responses_stream_and_stream_helper(capture_dir, spans, replay):
    server = replay("openai/responses_function_call_streaming_roundtrip_parsed_body.yaml")
    client = openai_client(server)
    first, second = (request_kwargs(i) for i in server.interactions)
    for _ in client.responses.create(**first):
        pass
    second.pop("stream")
    with client.responses.stream(**second) as stream:
        for _ in stream:
            pass
        final = stream.get_final_response()
    a, b = spans("chat")
    assert a["attrs"]["evalshift.requested_tool_calls"][0]["tool_name"] == "get_capital"
    assert b["attrs"]["evalshift.output_text"] == final.output_text
    assert b["attrs"]["evalshift.requested_tool_calls"] == []


def test_responses_async(capture_dir, spans, replay):
    server = replay("openai/responses_function_call_single.yaml")
    client = openai_client(server, aio=True)
    response = asyncio.run(client.responses.create(**request_kwargs(server.interactions[0])))
    [chat] = spans("chat")
    assert chat["attrs"]["evalshift.requested_tool_calls"][0]["call_id"] == response.output[0].call_id
    assert chat["attrs"]["evalshift.generation_config"]["tool_choice"] == {"type": "function", "name": "get_current_weather"}


def test_responses_multiround_agents_recording(capture_dir, spans, replay):
    server = replay("openai/responses_function_call_streaming_multiround_agents.yaml")
    client = openai_client(server)
    with evalshift_sdk.turn(prompt_id="agents"):
        for interaction in [i for i in server.interactions if i.path.endswith("/responses")]:
            for _ in client.responses.create(**request_kwargs(interaction)):
                pass
    names = [[c["tool_name"] for c in s["attrs"]["evalshift.requested_tool_calls"]] for s in spans("chat")]
    assert names == [["transfer_to_symphony_composer"], ["compose_music"], []]


def test_uninstrument_restores_the_originals(tmp_path):
    from openai.resources.chat.completions.completions import Completions
    from openai.resources.responses.responses import Responses

    before = (Completions.__dict__["create"], Responses.__dict__["create"], Completions.__dict__.get("parse"))
    evalshift_sdk.init(tmp_path, enabled=True)
    assert Completions.__dict__["create"] is not before[0]
    evalshift_sdk.shutdown()
    after = (Completions.__dict__["create"], Responses.__dict__["create"], Completions.__dict__.get("parse"))
    assert after == before


def test_responses_async_stream(capture_dir, spans, replay):
    server = replay("openai/responses_function_call_streaming_roundtrip_parsed_body.yaml")
    client = openai_client(server, aio=True)

    async def main():
        stream = await client.responses.create(**request_kwargs(server.interactions[0]))
        async with stream as s:
            return [e async for e in s]

    events = asyncio.run(main())
    [chat] = spans("chat")
    done = [e.item for e in events if e.type == "response.output_item.done"]
    assert [c["call_id"] for c in chat["attrs"]["evalshift.requested_tool_calls"]] == [i.call_id for i in done]


def test_responses_parse_bypasses_create_and_is_captured(capture_dir, spans, replay):
    server = replay("openai/responses_function_call_single.yaml")
    kwargs = request_kwargs(server.interactions[0])
    parsed = openai_client(server).responses.parse(**kwargs)
    [chat] = spans("chat")
    assert chat["attrs"]["evalshift.requested_tool_calls"][0]["call_id"] == parsed.output[0].call_id


def test_unsupported_release_is_skipped_and_named_one_fails(tmp_path, monkeypatch):
    """A provider SDK of an unsupported version is skipped; one the user asked for fails loudly."""
    import openai

    from evalshift_sdk.instrumentation import DidNotEnable
    from evalshift_sdk.instrumentation import openai as instrumentation

    monkeypatch.setattr(openai, "__version__", "1.2.0")
    create = instrumentation._targets()[0][0].__dict__["create"]
    evalshift_sdk.init(tmp_path, enabled=True)
    try:
        assert instrumentation._targets()[0][0].__dict__["create"] is create  # left alone
    finally:
        evalshift_sdk.shutdown()
    with pytest.raises(DidNotEnable, match="older than the oldest supported"):
        evalshift_sdk.init(tmp_path, enabled=True, providers=["openai"])
    evalshift_sdk.shutdown()


def test_responses_async_stream_helper_one_span(capture_dir, spans, replay):
    server = replay("openai/responses_function_call_streaming_roundtrip_parsed_body.yaml")
    client = openai_client(server, aio=True)
    kwargs = request_kwargs(server.interactions[0])
    kwargs.pop("stream")

    async def main():
        async with client.responses.stream(**kwargs) as stream:
            async for _ in stream:
                pass
            return await stream.get_final_response()

    final = asyncio.run(main())
    [chat] = spans("chat")
    assert [c["call_id"] for c in chat["attrs"]["evalshift.requested_tool_calls"]] == [
        i.call_id for i in final.output if i.type == "function_call"
    ]
