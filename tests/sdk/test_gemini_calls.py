"""Every google-genai call shape, through the real client, against recorded responses.

No ``from __future__ import annotations``: older google-genai releases cannot read string
annotations when they declare a Python function for automatic function calling.
"""

import asyncio
import json

from google.genai import types
from sdk_support import CassetteServer, Interaction, genai_client

import evalshift_sdk

SYSTEM = "You are a helpful assistant that can answer questions and help with tasks. Use the available tools when appropriate."
WEATHER = types.Tool(
    function_declarations=[
        types.FunctionDeclaration(
            name="get_weather",
            description="Get current weather information for a given location",
            parameters=types.Schema(type="OBJECT", properties={"location": types.Schema(type="STRING")}),
        )
    ]
)


def test_parallel_function_calls_and_generation_config(capture_dir, spans, replay):
    """Gemini tool_config.function_calling_config -> tool_choice; system -> system_instructions."""
    server = replay("gemini/generate_content_parallel_function_calls.yaml")
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=[WEATHER],
        temperature=0.1,
        max_output_tokens=200,
        tool_config=types.ToolConfig(function_calling_config=types.FunctionCallingConfig(mode="ANY")),
    )
    client = genai_client(server)
    response = client.models.generate_content(
        model="gemini-2.0-flash", contents="What is the weather like in Boston & new Delhi?", config=config
    )
    [chat] = spans("chat")
    a = chat["attrs"]
    host = [(c.name, c.args) for c in response.function_calls]
    assert [(c["tool_name"], c["arguments"]) for c in a["evalshift.requested_tool_calls"]] == host
    assert [h[1]["location"] for h in host] == ["Boston", "New Delhi"]
    g = a["evalshift.generation_config"]
    assert g["tool_choice"] == {"mode": "ANY"}
    assert g["temperature"] == 0.1 and g["max_output_tokens"] == 200
    assert a["gen_ai.system_instructions"] == [{"type": "text", "content": SYSTEM}]
    assert a["gen_ai.input.messages"] == [
        {"role": "user", "parts": [{"type": "text", "content": "What is the weather like in Boston & new Delhi?"}]}
    ]
    assert a["evalshift.toolset_ref"].startswith("sha256:")
    assert a["gen_ai.response.finish_reasons"] == ["STOP"]


def test_function_response_round_trip_gzip(capture_dir, spans, replay):
    """Gemini functionCall/functionResponse parts -> tool_call / tool_call_response parts."""
    server = replay("gemini/generate_content_function_call_roundtrip_gzip.yaml")
    client = genai_client(server)
    question = types.Content(role="user", parts=[types.Part(text="What is the weather like in Boston?")])
    with evalshift_sdk.turn(prompt_id="gemini-rt"):
        first = client.models.generate_content(model="gemini-2.0-flash-001", contents=[question])
        call = first.function_calls[0]
        second = client.models.generate_content(
            model="gemini-2.0-flash-001",
            contents=[
                question,
                first.candidates[0].content,
                types.Content(role="user", parts=[types.Part.from_function_response(name=call.name, response={"result": "rainy"})]),
            ],
        )
    a, b = spans("chat")
    assert a["attrs"]["evalshift.requested_tool_calls"] == [
        {"call_id": None, "tool_name": "get_current_weather", "arguments": {"location": "Boston, MA"}}
    ]
    history = b["attrs"]["gen_ai.input.messages"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool"]
    assert history[2]["parts"][0]["response"] == {"result": "rainy"}
    assert b["attrs"]["evalshift.output_text"] == second.text


def test_automatic_function_calling_records_each_round_in_one_turn(capture_dir, spans, replay):
    """AFC: each internal round is its own model call, in the same turn, and the tool ran."""
    server = replay("gemini/generate_content_function_call_roundtrip_afc.yaml")

    @evalshift_sdk.tool
    def get_weather(location: str) -> dict:
        """This function will be automatically executed by Google GenAI.
        It must return a JSON-serializable value."""
        return {"location": location, "temperature": 65, "unit": "fahrenheit", "condition": "foggy", "humidity": "85%"}

    client = genai_client(server)  # held: a dropped genai Client closes its HTTP client
    response = client.models.generate_content(
        model="gemini-2.0-flash",
        contents="What's the weather like in San Francisco?",
        config=types.GenerateContentConfig(system_instruction=SYSTEM, tools=[get_weather]),
    )
    everything = spans()
    chats = [s for s in everything if s["attrs"].get("gen_ai.operation.name") == "chat"]
    tools = [s for s in everything if s["attrs"].get("gen_ai.operation.name") == "execute_tool"]
    assert len(chats) == 2 and len(tools) == 1
    assert len({s["traceId"] for s in everything}) == 1  # one turn, even without turn()
    assert chats[0]["attrs"]["evalshift.requested_tool_calls"][0]["arguments"] == {"location": "San Francisco"}
    assert chats[1]["attrs"]["evalshift.output_text"] == response.text
    assert chats[0]["attrs"]["evalshift.toolset_ref"] == chats[1]["attrs"]["evalshift.toolset_ref"]
    assert tools[0]["attrs"]["gen_ai.tool.name"] == "get_weather"
    assert [m["role"] for m in chats[1]["attrs"]["gen_ai.input.messages"]] == ["user", "assistant", "tool"]


def test_safety_block_is_a_refusal(capture_dir, spans, replay):
    """Gemini safety blocks (finishReason SAFETY) -> evalshift.refusal."""
    server = replay("gemini/generate_content_safety_block_parsed_body.yaml")
    client = genai_client(server)
    response = client.models.generate_content(model="gemini-1.5-flash", contents="Tell me a joke")
    [chat] = spans("chat")
    assert response.candidates[0].finish_reason == types.FinishReason.SAFETY
    assert chat["attrs"]["evalshift.refusal"] == "response blocked: SAFETY"


def test_stream_with_calls_in_separate_chunks(capture_dir, spans, replay):
    server = replay("gemini/stream_generate_content_thinking_parallel_function_calls.yaml")
    client = genai_client(server)
    chunks = list(client.models.generate_content_stream(model="gemini-3.5-flash", contents="weather?"))
    assert len(chunks) == 3
    [chat] = spans("chat")
    calls = chat["attrs"]["evalshift.requested_tool_calls"]
    host = [(p.function_call.id, p.function_call.name) for c in chunks for p in c.candidates[0].content.parts if p.function_call]
    assert [(c["call_id"], c["tool_name"]) for c in calls] == host
    assert chat["attrs"]["evalshift.streamed"] is True


def test_aio_generate_content_and_stream(capture_dir, spans, replay):
    server = replay(
        "gemini/generate_content_function_call.yaml", "gemini/stream_generate_content_parallel_function_calls.yaml"
    )
    client = genai_client(server)

    async def main():
        with evalshift_sdk.turn(prompt_id="aio"):
            one = await client.aio.models.generate_content(model="gemini-2.0-flash", contents="weather?")
            stream = await client.aio.models.generate_content_stream(model="gemini-2.0-flash", contents="weather?")
            chunks = [c async for c in stream]
        return one, chunks

    one, chunks = asyncio.run(main())
    a, b = spans("chat")
    assert a["attrs"]["evalshift.requested_tool_calls"][0]["tool_name"] == one.function_calls[0].name
    assert len(b["attrs"]["evalshift.requested_tool_calls"]) == 2 == len(chunks[0].function_calls)
    assert a["traceId"] == b["traceId"]


def _as_sse(server) -> list:
    """The AFC recording's two JSON answers served as streamGenerateContent SSE events."""
    out = []
    for i in server.interactions:
        body = json.dumps(json.loads(i.body)).encode()
        out.append(Interaction("POST", i.path.replace(":generateContent", ":streamGenerateContent?alt=sse"), None, 200,
                               [("Content-Type", "text/event-stream")], b"data: " + body + b"\r\n\r\n"))
    return out


def test_streamed_automatic_function_calling_rounds_share_one_turn(capture_dir, spans, replay):
    recorded = replay("gemini/generate_content_function_call_roundtrip_afc.yaml")

    ran = []

    @evalshift_sdk.tool
    def get_weather(location: str) -> dict:
        """Weather for a place."""
        ran.append(location)
        return {"location": location, "temperature": 65, "unit": "fahrenheit", "condition": "foggy", "humidity": "85%"}

    with CassetteServer(_as_sse(recorded)) as server:
        client = genai_client(server)
        chunks = list(client.models.generate_content_stream(
            model="gemini-2.0-flash", contents="What's the weather like in San Francisco?",
            config=types.GenerateContentConfig(tools=[get_weather]),
        ))
    everything = spans()
    chats = [s for s in everything if s["attrs"].get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 2
    assert len({s["traceId"] for s in everything}) == 1
    root = next(s for s in everything if s["attrs"].get("gen_ai.operation.name") == "invoke_agent")
    assert root["attrs"]["evalshift.implicit_turn"] is True and root["status"]["code"] != 2
    assert chats[1]["attrs"]["evalshift.output_text"] == "".join(c.text or "" for c in chunks)
    executed = [s for s in everything if s["attrs"].get("gen_ai.operation.name") == "execute_tool"]
    # every execution the SDK made is recorded (google-genai 1.0 runs the function twice here)
    assert [s["attrs"]["gen_ai.tool.call.arguments"]["location"] for s in executed] == ran
    assert ran and set(ran) == {"San Francisco"}


def test_prompt_block_is_a_refusal(capture_dir, spans):
    """Gemini promptFeedback.blockReason (no candidates at all) -> evalshift.refusal."""
    body = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 7}, "modelVersion": "gemini-2.0-flash"}
    interaction = Interaction("POST", "/v1beta/models/gemini-2.0-flash:generateContent", None, 200,
                              [("Content-Type", "application/json")], json.dumps(body).encode())
    with CassetteServer([interaction]) as server:
        client = genai_client(server)
        response = client.models.generate_content(model="gemini-2.0-flash", contents="something blocked")
    [chat] = spans("chat")
    assert response.prompt_feedback.block_reason == types.BlockedReason.SAFETY
    assert chat["attrs"]["evalshift.refusal"] == "prompt blocked: SAFETY"
    assert chat["attrs"]["gen_ai.usage.input_tokens"] == 7


def test_aio_automatic_function_calling_rounds_in_one_turn(capture_dir, spans, replay):
    server = replay("gemini/generate_content_function_call_roundtrip_afc.yaml")

    @evalshift_sdk.tool  # a plain function: google-genai 1.0 refuses coroutines for AFC
    def get_weather(location: str) -> dict:
        """Weather for a place."""
        return {"location": location, "temperature": 65}

    client = genai_client(server)
    response = asyncio.run(client.aio.models.generate_content(
        model="gemini-2.0-flash", contents="What's the weather like in San Francisco?",
        config=types.GenerateContentConfig(tools=[get_weather]),
    ))
    everything = spans()
    chats = [s for s in everything if s["attrs"].get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 2 and len({s["traceId"] for s in everything}) == 1
    assert chats[1]["attrs"]["evalshift.output_text"] == response.text
