"""The simulator speaks each provider's wire format well enough for its official SDK, JSON and SSE."""

from __future__ import annotations

import time

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from evalshift_core.simulator import Simulator, load_scripts

CALLS = [{"name": "get_weather", "arguments": {"location": "Paris"}},
         {"name": "get_time", "arguments": {"timezone": "Europe/Paris"}}]
SCRIPTS = {
    "m": [
        {"when": {"user_matches": "refuse"}, "reply": {"refusal": "I can't help with that."}},
        {"when": {"after": []}, "reply": {"text": "Checking both.", "tool_calls": CALLS}},
        {"when": {"after": ["get_weather", "get_time"]}, "reply": {"text": "Sunny, 14:00."}},
    ],
}
SCRIPTS["gemini-3-m"] = SCRIPTS["m"]
USER = "Weather and time in Paris?"


@pytest.fixture
def sim():
    with Simulator(load_scripts(SCRIPTS)) as s:
        yield s


def test_openai_chat_stream_reassembles_parallel_calls(sim):
    client = openai.OpenAI(base_url=sim.openai_base_url, api_key="k", max_retries=0)
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": USER}], stream=True,
                                            stream_options={"include_usage": True})
    calls: dict[int, dict] = {}
    usage = None
    for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                entry = calls.setdefault(tc.index, {"name": "", "arguments": ""})
                entry["name"] += tc.function.name or ""
                entry["arguments"] += tc.function.arguments or ""
    assert [c["name"] for c in calls.values()] == ["get_weather", "get_time"]
    assert calls[0]["arguments"] == '{"location":"Paris"}'
    assert usage is not None and usage.prompt_tokens > 0


@pytest.mark.parametrize("stream", [False, True])
def test_openai_responses_function_calls_and_round_trip(sim, stream):
    client = openai.OpenAI(base_url=sim.openai_base_url, api_key="k", max_retries=0)
    tools = [{"type": "function", "name": c["name"], "parameters": {"type": "object"}, "strict": False} for c in CALLS]
    if stream:
        with client.responses.stream(model="m", input=USER, tools=tools) as events:
            kinds = [e.type for e in events]
            response = events.get_final_response()
        assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
        assert "response.function_call_arguments.delta" in kinds
    else:
        response = client.responses.create(model="m", input=USER, tools=tools)
    calls = [o for o in response.output if o.type == "function_call"]
    assert [c.name for c in calls] == ["get_weather", "get_time"]
    assert response.output_text == "Checking both."
    follow = client.responses.create(model="m", tools=tools, input=[
        {"role": "user", "content": USER},
        *[{"type": "function_call", "call_id": c.call_id, "name": c.name, "arguments": c.arguments} for c in calls],
        *[{"type": "function_call_output", "call_id": c.call_id, "output": "ok"} for c in calls],
    ])
    assert follow.output_text == "Sunny, 14:00."


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_messages_tool_use_and_round_trip(sim, stream):
    client = anthropic.Anthropic(base_url=sim.anthropic_base_url, api_key="k", max_retries=0)
    tools = [{"name": c["name"], "input_schema": {"type": "object"}} for c in CALLS]
    messages = [{"role": "user", "content": USER}]
    if stream:
        with client.messages.stream(model="m", max_tokens=100, messages=messages, tools=tools) as events:
            message = events.get_final_message()
    else:
        message = client.messages.create(model="m", max_tokens=100, messages=messages, tools=tools)
    uses = [b for b in message.content if b.type == "tool_use"]
    assert [(u.name, u.input) for u in uses] == [(c["name"], c["arguments"]) for c in CALLS]
    assert message.stop_reason == "tool_use" and message.content[0].text == "Checking both."
    follow = client.messages.create(model="m", max_tokens=100, tools=tools, messages=[
        *messages, {"role": "assistant", "content": message.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": u.id, "content": "ok"} for u in uses]},
    ])
    assert follow.content[0].text == "Sunny, 14:00." and follow.stop_reason == "end_turn"


def test_anthropic_refusal_is_a_refusal_stop_reason(sim):
    client = anthropic.Anthropic(base_url=sim.anthropic_base_url, api_key="k", max_retries=0)
    message = client.messages.create(model="m", max_tokens=10, messages=[{"role": "user", "content": "refuse"}])
    assert message.stop_reason == "refusal"


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_generate_content_function_calls_and_round_trip(sim, stream):
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=sim.gemini_base_url))
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[
        types.FunctionDeclaration(name=c["name"], parameters_json_schema={"type": "object"}) for c in CALLS])])
    if stream:
        chunks = list(client.models.generate_content_stream(model="gemini-3-m", contents=USER, config=config))
        calls = [fc for ch in chunks for fc in (ch.function_calls or [])]
        assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP
        assert sim.requests[-1]["path"].endswith(":streamGenerateContent?alt=sse")
    else:
        response = client.models.generate_content(model="gemini-3-m", contents=USER, config=config)
        calls = response.function_calls
        assert response.text == "Checking both." or response.candidates[0].content.parts[0].text == "Checking both."
    assert [(c.name, c.args) for c in calls] == [(c["name"], c["arguments"]) for c in CALLS]
    assert all(c.id for c in calls), "Gemini 3 returns call ids"
    follow = client.models.generate_content(model="gemini-3-m", config=config, contents=[
        types.Content(role="user", parts=[types.Part(text=USER)]),
        types.Content(role="model", parts=[types.Part(function_call=c) for c in calls]),
        types.Content(role="user", parts=[types.Part(function_response=types.FunctionResponse(
            name=c.name, id=c.id, response={"result": "ok"})) for c in calls]),
    ])
    assert follow.text == "Sunny, 14:00."


def test_gemini_refusal_is_a_safety_finish(sim):
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=sim.gemini_base_url))
    response = client.models.generate_content(model="gemini-3-m", contents="refuse")
    assert response.candidates[0].finish_reason == types.FinishReason.SAFETY


def test_rate_limit_injection_uses_each_providers_error_shape():
    with Simulator(load_scripts(SCRIPTS), rate_limit_every=1, retry_after=1.5) as sim:
        with pytest.raises(openai.RateLimitError) as oa:
            openai.OpenAI(base_url=sim.openai_base_url, api_key="k", max_retries=0).chat.completions.create(
                model="m", messages=[{"role": "user", "content": USER}])
        assert oa.value.response.headers["retry-after"] == "1.5"
        with pytest.raises(anthropic.RateLimitError):
            anthropic.Anthropic(base_url=sim.anthropic_base_url, api_key="k", max_retries=0).messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": USER}])
        gemini = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=sim.gemini_base_url))
        with pytest.raises(genai.errors.ClientError) as ge:
            gemini.models.generate_content(model="gemini-3-m", contents=USER)
        assert ge.value.code == 429 and ge.value.status == "RESOURCE_EXHAUSTED"
        assert [r["status"] for r in sim.requests] == [429, 429, 429]
        assert [r["provider"] for r in sim.requests] == ["openai", "anthropic", "gemini"]


def test_rate_limit_first_n_then_serves():
    with Simulator(load_scripts(SCRIPTS), rate_limit_first=2) as sim:
        client = openai.OpenAI(base_url=sim.openai_base_url, api_key="k", max_retries=0)
        for _ in range(2):
            with pytest.raises(openai.RateLimitError):
                client.chat.completions.create(model="m", messages=[{"role": "user", "content": USER}])
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": USER}])
        assert [r["status"] for r in sim.requests] == [429, 429, 200]


def test_latency_is_injected_per_request():
    with Simulator(load_scripts(SCRIPTS), latency_s=0.15) as sim:
        client = openai.OpenAI(base_url=sim.openai_base_url, api_key="k", max_retries=0)
        t0 = time.perf_counter()
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": USER}])
        assert time.perf_counter() - t0 >= 0.15


def test_scripted_error_reply():
    scripts = load_scripts({"m": [{"when": {}, "reply": {"error": {"status": 400, "message": "too long"}}}]})
    with Simulator(scripts) as s, pytest.raises(anthropic.BadRequestError, match="too long"):
        anthropic.Anthropic(base_url=s.anthropic_base_url, api_key="k", max_retries=0).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": USER}])


def test_unknown_model_is_a_404(sim):
    with pytest.raises(openai.NotFoundError):
        openai.OpenAI(base_url=sim.openai_base_url, api_key="k", max_retries=0).chat.completions.create(
            model="nope", messages=[{"role": "user", "content": USER}])
    assert sim.requests[-1]["status"] == 404
