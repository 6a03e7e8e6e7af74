"""google-genai automatic function calling: the plain Python functions the SDK runs are recorded
(the executed side), through the real client against the simulator's Gemini wire format.

No ``from __future__ import annotations``: older google-genai releases cannot read string
annotations when they declare a Python function for automatic function calling.
"""

import asyncio
import functools
from collections.abc import Iterator
from typing import Any, Optional

import pytest
from google import genai
from google.genai import types
from sdk_support import API_KEY, read_spans

import evalshift_sdk
from evalshift_core.simulator import Simulator, load_scripts
from evalshift_sdk.instrumentation import google_genai

# Gemini 3 models return call ids (the simulator follows suit), so an execution can be checked
# against the exact call it answers; Gemini 2 models return none.
MODEL = "gemini-3-flash"
MODEL_NO_IDS = "gemini-2.0-flash"
_RULES = [
    {"when": {"user_matches": "weather in (?P<city>\\w+)", "after": []},
     "reply": {"tool_calls": [{"name": "get_weather", "arguments": {"location": "{city}"}}]}},
    {"when": {"user_matches": "orders? (?P<a>[A-Z]\\d+) and (?P<b>[A-Z]\\d+)", "after": []},
     "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "{a}"}},
                              {"name": "lookup_order", "arguments": {"order_id": "{b}"}}]}},
    {"when": {"user_matches": "status of (?P<a>[A-Z]\\d+)", "after": []},
     "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "{a}", "fields": ["status"]}}]}},
    {"when": {"after": ["get_weather"]}, "reply": {"text": "It is foggy."}},
    {"when": {"after": ["lookup_order"]}, "reply": {"text": "Shipped."}},
    {"when": {"after": ["lookup_order", "lookup_order"]}, "reply": {"text": "Both shipped."}},
]
SCRIPT = {MODEL: _RULES, MODEL_NO_IDS: _RULES}


@pytest.fixture
def sim() -> Iterator[Simulator]:
    with Simulator(load_scripts(SCRIPT)) as server:
        yield server


def _client(sim: Simulator) -> Any:
    # held by the caller for the whole call: a dropped genai Client closes its HTTP client
    return genai.Client(api_key=API_KEY, http_options={"base_url": sim.gemini_base_url, "api_version": "v1beta"})


def _by_operation(found: list[dict[str, Any]], operation: str) -> list[dict[str, Any]]:
    return [s for s in found if s["attrs"].get("gen_ai.operation.name") == operation]


def _sent_function_response(sim: Simulator, round_index: int) -> dict[str, Any]:
    """The functionResponse the SDK sent back to the model in round ``round_index``."""
    last = sim.requests[round_index]["body"]["contents"][-1]
    part = last["parts"][0]
    return part.get("functionResponse", part.get("function_response"))


def test_plain_function_execution_is_recorded_and_linked(capture_dir, spans, sim):
    """A function passed as a tool without ``@tool``: its execution is the executed side."""
    ran = []

    def get_weather(location: str) -> dict:
        """Current weather for a city."""
        ran.append(location)
        return {"location": location, "condition": "foggy"}

    config = types.GenerateContentConfig(tools=[get_weather])
    client = _client(sim)
    response = client.models.generate_content(model=MODEL, contents="What is the weather in Paris?", config=config)
    assert response.text == "It is foggy." and ran == ["Paris"]
    everything = spans()
    chats, tools = _by_operation(everything, "chat"), _by_operation(everything, "execute_tool")
    assert len(chats) == 2 and len(tools) == 1
    assert len({s["traceId"] for s in everything}) == 1
    [requested] = chats[0]["attrs"]["evalshift.requested_tool_calls"]
    a = tools[0]["attrs"]
    assert tools[0]["name"] == "execute_tool get_weather"
    assert a["gen_ai.tool.name"] == "get_weather"
    assert a["gen_ai.tool.call.id"] == requested["call_id"] is not None
    assert a["gen_ai.tool.call.arguments"] == {"location": "Paris"} == requested["arguments"]
    assert a["gen_ai.tool.call.result"] == {"location": "Paris", "condition": "foggy"}
    assert "evalshift.tool.failed" not in a
    # the host's config still offers its own function, not our wrapper
    assert config.tools == [get_weather]


def test_declaration_and_requests_are_what_they_are_without_capture(tmp_path, sim):
    """The wrapper keeps the signature, annotations, docstring and name the SDK declares from."""

    # (google-genai 1.0 declares no parameter with a default value, so none has one here)
    def lookup_order(order_id: str, fields: Optional[list[str]]) -> dict:  # noqa: UP045 - 1.0 cannot read X | None
        """Look an order up by id.

        Args:
            order_id: The order's id, like A1.
            fields: Which fields to return.
        """
        return {"order_id": order_id, "status": "shipped"}

    config = {"tools": [lookup_order]}
    client = _client(sim)
    plain = client.models.generate_content(model=MODEL_NO_IDS, contents="status of A1?", config=config)
    evalshift_sdk.init(tmp_path, enabled=True)
    try:
        captured = client.models.generate_content(model=MODEL_NO_IDS, contents="status of A1?", config=config)
    finally:
        evalshift_sdk.shutdown()
    bodies = [r["body"] for r in sim.requests]
    assert len(bodies) == 4
    assert bodies[2] == bodies[0] and bodies[3] == bodies[1]  # the same requests, declaration included
    [declaration] = bodies[0]["tools"][0]["functionDeclarations"]
    assert declaration["name"] == "lookup_order" and declaration["description"].startswith("Look an order up")
    # recent releases send a JSON schema (``parametersJsonSchema``), 1.0 an OpenAPI one
    schema = next(v for k, v in declaration.items() if k.startswith("parameters"))
    assert set(schema["properties"]) == {"order_id", "fields"}
    assert captured.text == plain.text == "Shipped."
    assert config == {"tools": [lookup_order]}  # a dict config is copied, never changed
    [tool] = _by_operation(read_spans(tmp_path), "execute_tool")
    assert tool["attrs"]["gen_ai.tool.call.arguments"] == {"order_id": "A1", "fields": ["status"]}
    assert tool["attrs"]["gen_ai.tool.call.result"] == {"order_id": "A1", "status": "shipped"}


def test_tool_exception_becomes_the_sdks_error_response_and_a_failed_execution(capture_dir, spans, sim):
    """google-genai answers the model with ``{"error": str(exc)}``; the execution is recorded failed."""

    def get_weather(location: str) -> dict:
        """Current weather for a city."""
        raise LookupError(f"no station in {location}")

    client = _client(sim)
    response = client.models.generate_content(
        model=MODEL, contents="What is the weather in Atlantis?", config=types.GenerateContentConfig(tools=[get_weather])
    )
    assert response.text == "It is foggy."  # the host never sees the exception
    assert "no station in Atlantis" in _sent_function_response(sim, 1)["response"]["error"]
    [tool] = spans("execute_tool")
    a = tool["attrs"]
    assert a["evalshift.tool.failed"] is True and a["error.type"] == "LookupError"
    assert a["evalshift.tool.error"] == "no station in Atlantis"
    assert tool["status"]["code"] == 2
    assert "gen_ai.tool.call.result" not in a


def test_a_function_already_decorated_with_tool_is_recorded_once(capture_dir, spans, sim):
    def logged(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            return fn(*args, **kwargs)

        return inner

    @evalshift_sdk.tool
    def get_weather(location: str) -> dict:
        """Current weather for a city."""
        return {"condition": "foggy"}

    @logged
    @evalshift_sdk.tool
    def lookup_order(order_id: str) -> dict:
        """Look an order up by id."""
        return {"status": "shipped"}

    client = _client(sim)
    config = types.GenerateContentConfig(tools=[get_weather, lookup_order])
    client.models.generate_content(model=MODEL, contents="What is the weather in Oslo?", config=config)
    client.models.generate_content(model=MODEL, contents="orders A1 and B2?", config=config)
    names = [t["attrs"]["gen_ai.tool.name"] for t in spans("execute_tool")]
    assert names == ["get_weather", "lookup_order", "lookup_order"]


def test_bound_method_is_recorded_without_self(capture_dir, spans, sim):
    class Orders:
        def lookup_order(self, order_id: str) -> dict:
            """Look an order up by id."""
            return {"order_id": order_id}

    client = _client(sim)
    client.models.generate_content(
        model=MODEL, contents="orders A1 and B2?", config=types.GenerateContentConfig(tools=[Orders().lookup_order])
    )
    tools = spans("execute_tool")
    assert [t["attrs"]["gen_ai.tool.call.arguments"] for t in tools] == [{"order_id": "A1"}, {"order_id": "B2"}]
    assert [t["attrs"]["gen_ai.tool.call.result"] for t in tools] == [{"order_id": "A1"}, {"order_id": "B2"}]


def test_parallel_calls_of_one_function_each_link_to_their_own_request(capture_dir, spans, sim):
    def lookup_order(order_id: str) -> dict:
        """Look an order up by id."""
        return {"status": "shipped"}

    client = _client(sim)
    with evalshift_sdk.turn(prompt_id="orders"):
        client.models.generate_content(
            model=MODEL, contents="orders A1 and B2?", config=types.GenerateContentConfig(tools=[lookup_order])
        )
    first = spans("chat")[0]["attrs"]["evalshift.requested_tool_calls"]
    tools = spans("execute_tool")
    assert [t["attrs"]["gen_ai.tool.call.id"] for t in tools] == [c["call_id"] for c in first]
    assert len({c["call_id"] for c in first}) == 2


def test_aio_generate_content_records_the_executions(capture_dir, spans, sim):
    """The SDK runs a sync function on a worker thread in recent releases: it stays in the turn."""

    def get_weather(location: str) -> dict:
        """Current weather for a city."""
        return {"condition": "foggy"}

    client = _client(sim)
    response = asyncio.run(client.aio.models.generate_content(
        model=MODEL, contents="What is the weather in Lima?", config=types.GenerateContentConfig(tools=[get_weather])
    ))
    assert response.text == "It is foggy."
    everything = spans()
    [tool] = _by_operation(everything, "execute_tool")
    [requested] = _by_operation(everything, "chat")[0]["attrs"]["evalshift.requested_tool_calls"]
    assert tool["attrs"]["gen_ai.tool.call.id"] == requested["call_id"]
    assert len({s["traceId"] for s in everything}) == 1


def _run_async_tool(client: Any) -> Any:
    async def get_weather(location: str) -> dict:
        """Current weather for a city."""
        await asyncio.sleep(0)
        return {"condition": "foggy"}

    try:
        return asyncio.run(client.aio.models.generate_content(
            model=MODEL, contents="What is the weather in Quito?", config=types.GenerateContentConfig(tools=[get_weather])
        )).text
    except Exception as exc:  # noqa: BLE001 - an old release refuses coroutine functions
        return repr(exc)


def test_async_function_gets_the_sdks_own_treatment(tmp_path, sim):
    """A coroutine function stays one for the SDK: recent releases await it (and it is
    recorded), google-genai 1.0 refuses it with the same error as without capture."""
    client = _client(sim)
    without = _run_async_tool(client)
    evalshift_sdk.init(tmp_path, enabled=True)
    try:
        with_capture = _run_async_tool(client)
    finally:
        evalshift_sdk.shutdown()
    assert with_capture == without
    tools = _by_operation(read_spans(tmp_path), "execute_tool")
    if without == "It is foggy.":
        assert [t["attrs"]["gen_ai.tool.call.result"] for t in tools] == [{"condition": "foggy"}]
    else:
        assert "coroutine" in without and tools == []


def test_streamed_automatic_function_calling_records_every_execution(tmp_path, sim):
    """Every execution the SDK makes while the host reads the stream is recorded, and the host
    reads what it would without capture (google-genai 1.0 looks for the call in the last chunk
    only, so against this stream it runs the function once and sends no second round)."""
    ran: list = []

    def get_weather(location: str) -> dict:
        """Current weather for a city."""
        ran.append(location)
        return {"condition": "foggy"}

    def read(client: Any) -> list:
        stream = client.models.generate_content_stream(
            model=MODEL, contents="What is the weather in Rome?", config=types.GenerateContentConfig(tools=[get_weather])
        )
        return [c.text for c in stream]

    client = _client(sim)
    without = read(client)
    ran.clear()
    evalshift_sdk.init(tmp_path, enabled=True)
    try:
        with_capture = read(client)
    finally:
        evalshift_sdk.shutdown()
    assert with_capture == without and ran == ["Rome"]
    everything = read_spans(tmp_path)
    tools = _by_operation(everything, "execute_tool")
    assert [t["attrs"]["gen_ai.tool.call.arguments"] for t in tools] == [{"location": "Rome"}]
    assert len({s["traceId"] for s in everything}) == 1


def test_aio_streamed_automatic_function_calling_records_every_execution(capture_dir, spans, sim):
    ran: list = []

    def get_weather(location: str) -> dict:
        """Current weather for a city."""
        ran.append(location)
        return {"condition": "foggy"}

    client = _client(sim)

    async def main() -> list:
        stream = await client.aio.models.generate_content_stream(
            model=MODEL, contents="What is the weather in Oslo?", config=types.GenerateContentConfig(tools=[get_weather])
        )
        return [c async for c in stream]

    asyncio.run(main())
    everything = spans()
    tools = _by_operation(everything, "execute_tool")
    assert ran == ["Oslo"]
    assert [t["attrs"]["gen_ai.tool.call.arguments"] for t in tools] == [{"location": "Oslo"}]
    assert len({s["traceId"] for s in everything}) == 1


def test_disabled_automatic_function_calling_leaves_the_config_alone(capture_dir, spans, sim):
    def get_weather(location: str) -> dict:
        """Current weather for a city."""
        raise AssertionError("the SDK must not run it")

    config = types.GenerateContentConfig(
        tools=[get_weather], automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True)
    )
    kwargs = {"model": MODEL, "contents": "What is the weather in Bern?", "config": config}
    assert google_genai._with_recording_tools(kwargs) is kwargs
    client = _client(sim)
    response = client.models.generate_content(**kwargs)
    assert response.function_calls[0].name == "get_weather"
    assert spans("execute_tool") == [] and len(spans("chat")) == 1


def test_a_fault_while_wrapping_falls_back_to_the_hosts_functions(capture_dir, spans, sim, monkeypatch):
    """Our bookkeeping failing never changes what the host gets: the SDK runs its own function."""
    monkeypatch.setenv("EVALSHIFT_RAISE_INTERNAL", "0")

    def broken(fn: Any) -> Any:
        raise RuntimeError("evalshift bug")

    monkeypatch.setattr(google_genai, "_recording", broken)
    ran = []

    def get_weather(location: str) -> dict:
        """Current weather for a city."""
        ran.append(location)
        return {"condition": "foggy"}

    client = _client(sim)
    response = client.models.generate_content(
        model=MODEL, contents="What is the weather in Kyiv?", config=types.GenerateContentConfig(tools=[get_weather])
    )
    assert response.text == "It is foggy." and ran == ["Kyiv"]
    assert spans("execute_tool") == [] and len(spans("chat")) == 2


def test_without_capture_the_sdk_gets_the_hosts_functions(sim):
    def get_weather(location: str) -> dict:
        """Current weather for a city."""
        return {"condition": "foggy"}

    kwargs = {"model": MODEL, "contents": "x", "config": types.GenerateContentConfig(tools=[get_weather])}
    assert not evalshift_sdk.is_enabled()
    assert google_genai._afc_kwargs(kwargs) is kwargs
