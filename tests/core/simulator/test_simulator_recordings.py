"""The simulator's bodies have the shape of real recorded provider responses (tests/fixtures/recorded).

Every key a real response carried in these places, the simulator carries too; SSE streams use the
same event names in the same order and the same framing.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
import yaml

from evalshift_core.simulator import _anthropic, _gemini, _responses
from evalshift_core.simulator._rules import Reply, SimRequest

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "recorded"
REPLY = Reply(text="Let me check.", tool_calls=[{"name": "get_weather", "arguments": {"location": "Paris"}},
                                                 {"name": "get_time", "arguments": {"timezone": "CET"}}])


def _interactions(name: str) -> list[dict]:
    path = FIXTURES / name
    if not path.exists():
        pytest.fail(f"recording {path} is missing")
    return yaml.safe_load(path.read_text())["interactions"]


def _body(interaction: dict) -> str:
    response = interaction["response"]
    if "parsed_body" in response:
        return json.dumps(response["parsed_body"])
    body = response["body"]["string"]
    return gzip.decompress(body).decode() if isinstance(body, bytes) else body


def _events(text: str) -> list[str]:
    return re.findall(r"^event: (\S+)", text, flags=re.M)


def test_anthropic_message_carries_every_recorded_key():
    recorded = json.loads(_body(_interactions("anthropic/messages_parallel_tool_use_sonnet46.yaml")[0]))
    ours = _anthropic.message(SimRequest(model="m", messages=[], raw={"messages": []}), REPLY, 1)
    assert set(recorded) <= set(ours)
    assert [b["type"] for b in ours["content"]] == [b["type"] for b in recorded["content"]]
    for mine, real in zip(ours["content"], recorded["content"]):
        assert set(real) - {"caller", "citations"} <= set(mine)
    assert {"input_tokens", "output_tokens"} <= set(ours["usage"])


def test_anthropic_stream_has_the_recorded_event_sequence():
    recorded = _events(_body(_interactions("anthropic/messages_parallel_tool_use_streaming.yaml")[0]))
    ours = _events(b"".join(_anthropic.message_events(SimRequest(model="m", messages=[], raw={}), REPLY, 1)).decode())

    def shape(events: list[str]) -> list[str]:
        # collapse runs of deltas and drop pings, which vary in number
        out: list[str] = []
        for e in events:
            if e == "ping" or (out and out[-1] == e == "content_block_delta"):
                continue
            out.append(e)
        return out

    assert shape(ours) == shape(recorded)


def test_gemini_response_carries_every_recorded_key():
    recorded = json.loads(_body(_interactions("gemini/generate_content_parallel_function_calls.yaml")[0]))
    ours = _gemini.generate_content(SimRequest(model="gemini-2.0-flash", messages=[], raw={"contents": []}), REPLY, 1)
    assert set(recorded) <= set(ours)
    real_candidate, our_candidate = recorded["candidates"][0], ours["candidates"][0]
    assert {"content", "finishReason"} <= set(real_candidate) and {"content", "finishReason"} <= set(our_candidate)
    real_calls = [p["functionCall"] for p in real_candidate["content"]["parts"] if "functionCall" in p]
    our_calls = [p["functionCall"] for p in our_candidate["content"]["parts"] if "functionCall" in p]
    assert set(real_calls[0]) <= set(our_calls[0]) | {"id"}
    assert {"promptTokenCount", "candidatesTokenCount", "totalTokenCount"} <= set(ours["usageMetadata"])


def test_gemini_stream_uses_crlf_framed_data_events():
    recorded = _body(_interactions("gemini/stream_generate_content_thinking_parallel_function_calls.yaml")[0])
    ours = b"".join(_gemini.generate_content_events(SimRequest(model="gemini-3-m", messages=[], raw={}), REPLY, 1))
    assert recorded.startswith("data: ") and "\r\n\r\n" in recorded
    assert ours.startswith(b"data: ") and ours.count(b"\r\n\r\n") == len(ours.split(b"\r\n\r\n")) - 1
    last = json.loads(ours.rstrip().split(b"\r\n\r\n")[-1][len(b"data: "):])
    assert last["candidates"][0]["finishReason"] == "STOP"


def test_responses_body_carries_every_recorded_key():
    recorded = json.loads(_body(_interactions("openai/responses_function_call_single.yaml")[0]))
    ours = _responses.response(SimRequest(model="m", messages=[], raw={"input": "q"}), REPLY, 1)
    optional = {"background", "billing", "completed_at", "max_tool_calls", "previous_response_id",
                "prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier",
                "store", "top_logprobs", "user", "frequency_penalty", "presence_penalty"}
    assert set(recorded) - optional <= set(ours)
    real_call = recorded["output"][0]
    our_call = next(o for o in ours["output"] if o["type"] == "function_call")
    assert set(real_call) <= set(our_call)
    assert set(recorded["usage"]) <= set(ours["usage"])


def test_responses_stream_uses_the_recorded_event_names():
    interactions = _interactions("openai/responses_function_call_streaming_multiround_agents.yaml")
    recorded = {e for i in interactions if i["request"]["uri"].endswith("/responses") for e in _events(_body(i))}
    ours = _events(b"".join(_responses.response_events(SimRequest(model="m", messages=[], raw={}), REPLY, 1)).decode())
    function_call_events = {e for e in ours if "function_call" in e or e.startswith("response.output_item")}
    assert function_call_events <= recorded
    assert ours[0] == "response.created" and ours[-1] == "response.completed"
