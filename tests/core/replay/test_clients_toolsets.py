"""Toolsets and tool-use constraints re-serialised per provider, checked on the wire.

seed 001: 'strict ... is replayed as function.strict to OpenAI targets and top-level strict to
Anthropic targets; both serialisers emit it only when set ... a Gemini arm records it under
dropped_params as tools.strict'.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalshift_core import Example, run
from evalshift_core._models import Tool
from evalshift_core.replay._routing import route
from evalshift_core.replay.clients import make_client
from evalshift_core.replay.clients._base import classify_error, neutral_config
from evalshift_core.simulator import Simulator, load_scripts

STRICT_TOOLS = [
    {"name": "issue_refund", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}},
                                              "required": ["order_id"], "additionalProperties": False},
     "strict": True},
    {"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object"}}},
]
SCRIPT = [{"when": {}, "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}]}}]


@pytest.fixture
def sim():
    with Simulator(load_scripts({"m": SCRIPT, "gemini-m": SCRIPT})) as s:
        yield s


def _providers(sim: Simulator) -> dict:
    return {"openai": {"base_url": sim.openai_base_url, "api_key": "k"},
            "anthropic": {"base_url": sim.anthropic_base_url, "api_key": "k"},
            "gemini": {"base_url": sim.gemini_base_url, "api_key": "k"}}


def _replay(sim, tmp_path, model: str, generation_config: dict | None = None, tools=STRICT_TOOLS, providers=None):
    example = Example(id="e", inputs={"input": "refund A1"}, tools=tools, generation_config=generation_config or {})
    result = run([example], source=model, target=model, base=tmp_path, providers=providers or _providers(sim),
                 progress=False, use_cache=False)
    return sim.requests[-1]["body"], result.calls[0]


def test_openai_gets_function_strict_only_where_set(sim, tmp_path):
    body, call = _replay(sim, tmp_path, "openai:m")
    fns = [t["function"] for t in body["tools"]]
    assert fns[0]["strict"] is True and "strict" not in fns[1]
    assert call.dropped_params == []


def test_openai_responses_api_says_strict_false_for_non_strict_tools(sim, tmp_path):
    """The Responses API treats an absent strict as true; a non-strict tool must say false."""
    providers = _providers(sim) | {"openai": {"base_url": sim.openai_base_url, "api_key": "k", "api": "responses"}}
    body, call = _replay(sim, tmp_path, "openai:m", providers=providers)
    assert [(t["name"], t["strict"]) for t in body["tools"]] == [("issue_refund", True), ("lookup_order", False)]
    assert call.trace.names() == ["lookup_order"]


def test_anthropic_gets_top_level_strict_only_where_set(sim, tmp_path):
    body, call = _replay(sim, tmp_path, "anthropic:m")
    assert body["tools"][0]["strict"] is True and "strict" not in body["tools"][1]
    assert body["tools"][1]["input_schema"] == {"type": "object"}
    assert call.dropped_params == []


def test_gemini_records_tools_strict_as_dropped(sim, tmp_path):
    body, call = _replay(sim, tmp_path, "gemini:gemini-m")
    decls = body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in decls] == ["issue_refund", "lookup_order"]
    assert all("strict" not in d for d in decls)
    schema = decls[0].get("parametersJsonSchema") or decls[0]["parameters_json_schema"]
    assert schema["additionalProperties"] is False
    assert call.dropped_params == ["tools.strict"]
    assert call.trace.names() == ["lookup_order"]


def test_gemini_non_strict_toolset_drops_nothing(sim, tmp_path):
    _, call = _replay(sim, tmp_path, "gemini:gemini-m", tools=STRICT_TOOLS[1:])
    assert call.dropped_params == []


@pytest.mark.parametrize(
    ("model", "config", "expected"),
    [
        ("openai:m", {"tool_choice": "required", "parallel_tool_calls": False},
         {"tool_choice": "required", "parallel_tool_calls": False}),
        ("anthropic:m", {"tool_choice": "required", "parallel_tool_calls": False},
         {"tool_choice": {"type": "any", "disable_parallel_tool_use": True}}),
        ("anthropic:m", {"tool_choice": {"type": "function", "function": {"name": "lookup_order"}}},
         {"tool_choice": {"type": "tool", "name": "lookup_order"}}),
        ("anthropic:m", {"parallel_tool_calls": True}, {"tool_choice": {"type": "auto", "disable_parallel_tool_use": False}}),
        ("anthropic:m", {"tool_choice": "none"}, {"tool_choice": {"type": "none"}}),
        ("gemini:gemini-m", {"tool_choice": {"type": "tool", "name": "lookup_order"}},
         {"toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup_order"]}}}),
        ("gemini:gemini-m", {"tool_choice": "auto"}, {"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}}),
        ("gemini:gemini-m", {"tool_choice": "none"}, {"toolConfig": {"functionCallingConfig": {"mode": "NONE"}}}),
        ("openai:m", {"tool_config": {"function_calling_config": {"mode": "ANY"}}}, {"tool_choice": "required"}),
        ("openai:m", {"tool_choice": {"type": "any", "disable_parallel_tool_use": True}},
         {"tool_choice": "required", "parallel_tool_calls": False}),
    ],
)
def test_tool_choice_and_parallel_reach_each_provider_in_its_own_form(sim, tmp_path, model, config, expected):
    body, _ = _replay(sim, tmp_path, model, config)
    assert {k: body[k] for k in expected} == expected


def test_gemini_cannot_honour_parallel_tool_calls(sim, tmp_path):
    """Gemini has no parallel switch: the setting goes to dropped_params."""
    body, call = _replay(sim, tmp_path, "gemini:gemini-m", {"parallel_tool_calls": False, "temperature": 0.2})
    assert call.dropped_params == ["parallel_tool_calls", "tools.strict"]
    assert body["generationConfig"]["temperature"] == 0.2


def test_settings_move_to_each_providers_names(sim, tmp_path):
    from evalshift_core.replay.clients._anthropic import sdk_accepts

    config = {"max_tokens": 50, "stop": "END", "temperature": 0, "seed": 7}
    body, call = _replay(sim, tmp_path, "anthropic:m", config)
    assert (body["max_tokens"], body["stop_sequences"]) == (50, ["END"])
    # anthropic 2.x's messages.create no longer takes temperature: then it cannot be honoured
    if "temperature" in sdk_accepts():
        assert body["temperature"] == 0 and call.dropped_params == ["seed"]
    else:
        assert "temperature" not in body and call.dropped_params == ["seed", "temperature"]
    body, call = _replay(sim, tmp_path, "gemini:gemini-m", config)
    assert body["generationConfig"] == {"maxOutputTokens": 50, "stopSequences": ["END"], "seed": 7, "temperature": 0}
    assert call.dropped_params == ["tools.strict"]
    body, call = _replay(sim, tmp_path, "openai:m", {"max_output_tokens": 50, "top_k": 3})
    # an OpenAI-compatible server (here the simulator) gets the long-standing max_tokens
    assert body["max_tokens"] == 50 and call.dropped_params == ["top_k"]


def test_openai_proper_always_gets_max_completion_tokens():
    """o-series models reject max_tokens; api.openai.com gets max_completion_tokens whatever was recorded."""
    tools = [Tool.model_validate(t) for t in STRICT_TOOLS]
    official = make_client("openai", {"api_key": "k", "base_url": "https://api.openai.com/v1"})
    compatible = make_client("openai", {"api_key": "k", "base_url": "http://localhost:8000/v1"})
    for recorded in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        body = official.prepare(route("openai:o3"), [], tools, {recorded: 10}).body
        assert body.get("max_completion_tokens") == 10 and "max_tokens" not in body
    assert compatible.prepare(route("openai:llama"), [], tools, {"max_completion_tokens": 10}).body[
        "max_completion_tokens"] == 10


def test_text_path_sends_no_tool_settings(sim, tmp_path):
    body, _ = _replay(sim, tmp_path, "openai:m", {"tool_choice": "required", "parallel_tool_calls": True}, tools=[])
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(body)


_CHOICES = st.sampled_from(["auto", "required", "none"]) | st.sampled_from(["lookup_order", "issue_refund"]).map(
    lambda n: ("tool", n))


@given(choice=_CHOICES, parallel=st.none() | st.booleans())
def test_every_providers_tool_choice_reads_back_the_same(choice, parallel):
    """Emit a neutral tool_choice in each provider's form, read it back: nothing changes meaning
    (Gemini aside for parallel, which it cannot carry)."""
    tools = [Tool.model_validate(t) for t in STRICT_TOOLS]
    kind, names = (choice, []) if isinstance(choice, str) else ("tool", [choice[1]])
    config: dict = {"tool_choice": kind if kind != "tool" else {"type": "tool", "name": names[0]}}
    if parallel is not None:
        config["parallel_tool_calls"] = parallel
    for provider, name in (("openai", "m"), ("anthropic", "m"), ("gemini", "gemini-m")):
        request = make_client(provider).prepare(route(f"{provider}:{name}"), [], tools, config)
        body = request.body["config"] if provider == "gemini" else request.body
        recorded = {k: v for k, v in body.items() if k in ("tool_choice", "tool_config", "parallel_tool_calls")}
        back = neutral_config(recorded)
        if kind == "none" and provider == "anthropic":
            assert back.tool_choice == "none"
            continue
        assert (back.tool_choice, back.tool_names) == (kind, names)
        if provider != "gemini":
            assert back.parallel_tool_calls == parallel
        else:
            assert ("parallel_tool_calls" in request.dropped_params) == (parallel is not None)


class _Headers(dict):
    pass


class _Resp:
    def __init__(self, headers):
        self.headers = _Headers(headers)


class _StatusError(Exception):
    def __init__(self, status, headers=None, details=None):
        super().__init__(f"status {status}")
        self.status_code = status
        self.response = _Resp(headers or {})
        if details is not None:
            self.details = details


@pytest.mark.parametrize(
    ("exc", "retryable", "retry_after"),
    [
        (_StatusError(429, {"retry-after": "2"}), True, 2.0),
        (_StatusError(429, {"retry-after-ms": "250"}), True, 0.25),
        (_StatusError(503), True, None),
        (_StatusError(529), True, None),
        (_StatusError(400), False, None),
        (_StatusError(404), False, None),
        (_StatusError(429, details={"error": {"details": [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13s"}]}}), True, 13.0),
        (TimeoutError("read timed out"), True, None),
    ],
)
def test_errors_are_triaged_into_retryable_with_retry_after(exc, retryable, retry_after):
    err = classify_error(exc)
    assert (err.retryable, err.retry_after) == (retryable, retry_after)


def test_retry_after_http_date_is_read_as_seconds_from_now():
    import email.utils
    import time

    date = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 28 <= classify_error(_StatusError(429, {"retry-after": date})).retry_after <= 31


def test_blocking_complete_works_from_threads_and_retries_a_429():
    """The llm_judge calls complete() from worker threads; each call stands alone."""
    from concurrent.futures import ThreadPoolExecutor

    messages = [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    with Simulator(load_scripts({"m": [{"when": {}, "reply": {"text": "fine"}}]}), rate_limit_first=1,
                   retry_after=0.01) as sim:
        client = make_client("anthropic", {"base_url": sim.anthropic_base_url, "api_key": "k"})
        with ThreadPoolExecutor(4) as pool:
            texts = list(pool.map(lambda _: client.complete(route("anthropic:m"), messages, [], {}).text, range(6)))
        assert texts == ["fine"] * 6
        assert [r["status"] for r in sim.requests].count(429) == 1
