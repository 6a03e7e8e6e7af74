"""Seeded noise on scripted models, seen through the official SDKs on every wire format."""

from __future__ import annotations

import functools
import json
import re
import urllib.request
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types
from hypothesis import given
from hypothesis import strategies as st

from evalshift_core import InputError
from evalshift_core.simulator import NoiseProfile, SimRequest, Simulator, load_scripts
from evalshift_core.simulator._noise import (
    KINDS,
    PRESETS,
    _canonical,
    _spellings,
    after_matches,
    reword,
)

SIGNAL, AMOUNT, TEXT = "hacked", 12, "Done, the order is on its way."
READ_ONLY, OPTIONAL = ["lookup_order"], ["think"]
RULES = [
    {"when": {"user_matches": "^skip", "after": []}, "reply": {"tool_calls": [
        {"name": "think", "arguments": {"thought": "check first"}},
        {"name": "lookup_order", "arguments": {"order_id": "A1"}}]}},
    {"when": {"user_matches": "^swap", "after": []}, "reply": {"tool_calls": [
        {"name": "get_weather", "arguments": {"location": "Paris"}},
        {"name": "get_time", "arguments": {"timezone": "Europe/Paris"}}]}},
    {"when": {"user_matches": "^reword", "after": []}, "reply": {"tool_calls": [
        {"name": "notify_security_team", "arguments": {"signal": SIGNAL, "severity": "high"}}]}},
    {"when": {"user_matches": "^number", "after": []}, "reply": {"tool_calls": [
        {"name": "issue_refund", "arguments": {"order_id": "A1", "amount_usd": AMOUNT}}]}},
    {"when": {"user_matches": "^text"}, "reply": {"text": TEXT}},
    {"when": {"user_matches": "^refund", "after": []}, "reply": {"tool_calls": [
        {"name": "lookup_order", "arguments": {"order_id": "A1"}}]}},
    {"when": {"user_matches": "^refund", "after": ["lookup_order"]}, "reply": {"tool_calls": [
        {"name": "issue_refund", "arguments": {"order_id": "A1", "amount_usd": AMOUNT}}]}},
    {"when": {"user_matches": "^refund", "after": ["lookup_order", "issue_refund"]}, "reply": {"text": TEXT}},
]
LOOKED_UP = [[("lookup_order", {"order_id": "A1"})]]


def profile(**rates: float) -> dict[str, Any]:
    return {"read_only_tools": READ_ONLY, "optional_tools": OPTIONAL, **rates}


def sim_with(**rates: float) -> Simulator:
    return Simulator(load_scripts({"m": {"rules": RULES, "noise": profile(**rates)}}))


# -- one conversation on each wire format: (text, [(name, arguments)]) ---------------------------

WIRES = [("chat", False), ("chat", True), ("responses", False), ("responses", True),
         ("anthropic", False), ("anthropic", True), ("gemini", False), ("gemini", True)]
TOOL_NAMES = ["think", "lookup_order", "get_weather", "get_time", "notify_security_team", "issue_refund"]


@functools.cache
def _client(wire: str, base_url: str) -> Any:
    """One SDK client per wire and server: building a client costs more than a loopback request."""
    if wire in ("chat", "responses"):
        return openai.OpenAI(base_url=base_url + "/v1", api_key="k", max_retries=0)
    if wire == "anthropic":
        return anthropic.Anthropic(base_url=base_url, api_key="k", max_retries=0)
    return genai.Client(api_key="k", http_options=types.HttpOptions(base_url=base_url))


def ask(sim: Simulator, wire: str, stream: bool, user: str, history: list[list[tuple[str, Any]]] = ()
        ) -> tuple[str, list[tuple[str, Any]]]:
    """Ask model ``m`` with the official SDK of ``wire``; history rounds' results are all "ok"."""
    client = _client(wire, sim.base_url)
    if wire == "chat":
        messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
        for k, calls in enumerate(history):
            ids = [f"h{k}_{i}" for i in range(len(calls))]
            messages.append({"role": "assistant", "tool_calls": [
                {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for i, (n, a) in zip(ids, calls)]})
            messages += [{"role": "tool", "tool_call_id": i, "content": "ok"} for i in ids]
        tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in TOOL_NAMES]
        if not stream:
            message = client.chat.completions.create(model="m", messages=messages, tools=tools).choices[0].message
            return message.content or "", [(c.function.name, json.loads(c.function.arguments))
                                           for c in message.tool_calls or []]
        text, calls = "", {}
        for chunk in client.chat.completions.create(model="m", messages=messages, tools=tools, stream=True):
            delta = chunk.choices[0].delta
            text += delta.content or ""
            for tc in delta.tool_calls or []:
                entry = calls.setdefault(tc.index, ["", ""])
                entry[0] += tc.function.name or ""
                entry[1] += tc.function.arguments or ""
        return text, [(n, json.loads(a)) for n, a in calls.values()]
    if wire == "responses":
        items: list[dict[str, Any]] = [{"role": "user", "content": user}]
        for k, calls in enumerate(history):
            ids = [f"h{k}_{i}" for i in range(len(calls))]
            items += [{"type": "function_call", "call_id": i, "name": n, "arguments": json.dumps(a)}
                      for i, (n, a) in zip(ids, calls)]
            items += [{"type": "function_call_output", "call_id": i, "output": "ok"} for i in ids]
        tools = [{"type": "function", "name": n, "parameters": {"type": "object"}, "strict": False} for n in TOOL_NAMES]
        if stream:
            with client.responses.stream(model="m", input=items, tools=tools) as events:
                response = events.get_final_response()
        else:
            response = client.responses.create(model="m", input=items, tools=tools)
        return response.output_text, [(o.name, json.loads(o.arguments)) for o in response.output
                                      if o.type == "function_call"]
    if wire == "anthropic":
        messages = [{"role": "user", "content": user}]
        for k, calls in enumerate(history):
            ids = [f"h{k}_{i}" for i in range(len(calls))]
            messages.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": i, "name": n, "input": a} for i, (n, a) in zip(ids, calls)]})
            messages.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": i, "content": "ok"} for i in ids]})
        tools = [{"name": n, "input_schema": {"type": "object"}} for n in TOOL_NAMES]
        if stream:
            with client.messages.stream(model="m", max_tokens=100, messages=messages, tools=tools) as events:
                message = events.get_final_message()
        else:
            message = client.messages.create(model="m", max_tokens=100, messages=messages, tools=tools)
        return ("".join(b.text for b in message.content if b.type == "text"),
                [(b.name, b.input) for b in message.content if b.type == "tool_use"])
    contents = [types.Content(role="user", parts=[types.Part(text=user)])]
    for calls in history:
        contents.append(types.Content(role="model", parts=[
            types.Part(function_call=types.FunctionCall(name=n, args=a)) for n, a in calls]))
        contents.append(types.Content(role="user", parts=[
            types.Part(function_response=types.FunctionResponse(name=n, response={"result": "ok"})) for n, _ in calls]))
    config = types.GenerateContentConfig(tools=[types.Tool(function_declarations=[
        types.FunctionDeclaration(name=n, parameters_json_schema={"type": "object"}) for n in TOOL_NAMES])])
    if stream:
        chunks = list(client.models.generate_content_stream(model="m", contents=contents, config=config))
    else:
        chunks = [client.models.generate_content(model="m", contents=contents, config=config)]
    parts = [p for ch in chunks for p in (ch.candidates[0].content.parts or [])]
    return ("".join(p.text or "" for p in parts),
            [(p.function_call.name, p.function_call.args) for p in parts if p.function_call])


def spelled(value: Any) -> tuple[type, Any]:
    return type(value), value


# The visible effect of each kind at rate 1, and the request that shows it.
EFFECTS = {
    "extra_lookup": ("refund", LOOKED_UP, lambda text, calls: calls == [("lookup_order", {"order_id": "A1"})]),
    "skip_optional": ("skip", [], lambda text, calls: [n for n, _ in calls] == ["lookup_order"]),
    "swap_calls": ("swap", [], lambda text, calls: [n for n, _ in calls] == ["get_time", "get_weather"]),
    "reword_arguments": ("reword", [], lambda text, calls: isinstance(calls[0][1]["signal"], str)
                         and calls[0][1]["signal"] not in ("", SIGNAL) and calls[0][1]["severity"] == "high"),
    "number_format": ("number", [], lambda text, calls: spelled(calls[0][1]["amount_usd"]) in
                      [(float, 12.0), (str, "12")]),
    "reword_text": ("text", [], lambda text, calls: text not in ("", TEXT)),
}
SCRIPTED = {
    "extra_lookup": lambda text, calls: [n for n, _ in calls] == ["issue_refund"],
    "skip_optional": lambda text, calls: [n for n, _ in calls] == ["think", "lookup_order"],
    "swap_calls": lambda text, calls: [n for n, _ in calls] == ["get_weather", "get_time"],
    "reword_arguments": lambda text, calls: calls[0][1]["signal"] == SIGNAL,
    "number_format": lambda text, calls: spelled(calls[0][1]["amount_usd"]) == (int, AMOUNT),
    "reword_text": lambda text, calls: text == TEXT,
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("wire", "stream"), WIRES)
def test_each_kind_of_noise_reaches_the_sdk_on_every_wire_format(kind, wire, stream):
    user, history, noisy = EFFECTS[kind]
    with sim_with(**{kind: 1.0}) as sim:
        text, calls = ask(sim, wire, stream, user, history)
        assert noisy(text, calls), (text, calls)
        assert sim.served()[-1]["noise"] == [kind]
    with sim_with() as quiet:  # the same request without noise gets the scripted reply
        assert SCRIPTED[kind](*ask(quiet, wire, stream, user, history))


@pytest.mark.parametrize(("kind", "rate"), [("extra_lookup", 0.15), ("skip_optional", 0.25), ("swap_calls", 0.5),
                                            ("reword_arguments", 0.3), ("number_format", 0.1), ("reword_text", 0.8)])
def test_each_kind_occurs_at_about_its_rate(kind, rate):
    user, history, noisy = EFFECTS[kind]
    n = 300
    with sim_with(**{kind: rate}) as sim:
        # distinct requests (a ticket number the rules ignore), each answered once
        hits = sum(noisy(*ask(sim, "chat", False, f"{user} #{i}", history)) for i in range(n))
        logged = sum(r["noise"] == [kind] for r in sim.served())
    assert hits == logged
    # binomial sd is at most 0.029 at n=300: a 0.1 band is over 3 sd wide
    assert abs(hits / n - rate) < 0.1, (kind, hits / n, rate)


def _replies(sim: Simulator, users: list[str]) -> list[tuple[str, list[tuple[str, Any]]]]:
    return [ask(sim, "chat", False, u, LOOKED_UP if u.startswith("refund") else []) for u in users]


REQUESTS = ["skip", "swap", "reword", "number", "text", "refund"] * 4


def test_the_same_seed_answers_the_same_requests_the_same_way():
    noise = {"preset": "realistic", "extra_lookup": 0.3, "seed": 11}
    scripts = {"m": {"rules": RULES, "noise": profile(**noise)}}
    with Simulator(load_scripts(scripts)) as first, Simulator(load_scripts(scripts)) as second:
        assert _replies(first, REQUESTS) == _replies(second, REQUESTS)
    with Simulator(load_scripts(scripts), noise_seed=12) as other, Simulator(load_scripts(scripts)) as again:
        assert _replies(other, REQUESTS) != _replies(again, REQUESTS)


def test_repeats_of_one_request_are_fresh_samples():
    """Two replays of one model (or one model on both sides) draw different samples."""
    scripts = {"m": {"rules": RULES, "noise": profile(preset="realistic")}}
    with Simulator(load_scripts(scripts)) as sim:
        first, second = _replies(sim, REQUESTS[:6]), _replies(sim, REQUESTS[:6])
    assert first != second
    with Simulator(load_scripts(scripts)) as fresh:
        assert _replies(fresh, REQUESTS[:6]) == first and _replies(fresh, REQUESTS[:6]) == second
    # twenty replays of one request: the realistic preset rewords most of them, not always the same way
    with Simulator(load_scripts(scripts)) as sim:
        texts = [ask(sim, "chat", False, "text")[0] for _ in range(20)]
    assert len(set(texts)) >= 5


def test_call_ids_and_tool_results_do_not_reshuffle_the_noise():
    scripts = load_scripts({"m": {"rules": RULES, "noise": profile(preset="realistic")}})
    history = [{"role": "user", "parts": [{"type": "text", "content": "refund"}]}]

    def request(call_id: str, result: str) -> SimRequest:
        return SimRequest(model="m", messages=[*history, {"role": "assistant", "parts": [
            {"type": "tool_call", "id": call_id, "name": "lookup_order", "arguments": {"order_id": "A1"}}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": call_id, "response": result}]}])

    for repeat in range(10):
        assert scripts["m"].answer(request("a", "ok"), repeat=repeat) == \
            scripts["m"].answer(request("call_9x0", '{"at": "12:00"}'), repeat=repeat)


# -- zero noise is today's simulator, byte for byte ---------------------------------------------

_CALLS = [{"name": "get_weather", "arguments": {"location": "Paris", "reason": "asked", "days": 3}},
          {"name": "get_time", "arguments": {"timezone": "Europe/Paris"}}]
PLAIN = [{"when": {"after": []}, "reply": {"text": "Checking both.", "tool_calls": _CALLS}},
         {"when": {"after": ["get_weather", "get_time"]}, "reply": {"text": "Sunny, 14:00."}}]
_HISTORY_CHAT = [{"role": "assistant", "tool_calls": [
    {"id": f"c{i}", "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
    for i, c in enumerate(_CALLS)]}, *[{"role": "tool", "tool_call_id": f"c{i}", "content": "ok"} for i in range(2)]]
BODIES = [
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/chat/completions", {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}, *_HISTORY_CHAT]}),
    ("/v1/responses", {"model": "m", "input": "hi"}),
    ("/v1/responses", {"model": "m", "input": "hi", "stream": True}),
    ("/v1/messages", {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "hi"}]}),
    ("/v1/messages", {"model": "m", "max_tokens": 9, "stream": True, "messages": [{"role": "user", "content": "hi"}]}),
    ("/v1beta/models/m:generateContent", {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
    ("/v1beta/models/m:streamGenerateContent?alt=sse", {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}),
]


def _post(url: str, body: dict[str, Any]) -> bytes:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read()


def _raw_answers(scripts: dict[str, Any]) -> list[bytes]:
    with Simulator(load_scripts(scripts)) as sim:
        # the wall-clock timestamps are the only bytes that may differ between two servers
        return [re.sub(rb'"created(_at)?":\d+', b'"created":0', _post(sim.base_url + path, body))
                for _ in range(2) for path, body in BODIES]


@pytest.mark.parametrize("zero", ["none", {}, {"preset": "mild", **dict.fromkeys(KINDS, 0)}, NoiseProfile(seed=3)])
def test_a_zero_noise_profile_answers_byte_for_byte_like_a_plain_script(zero):
    assert _raw_answers({"m": {"rules": PLAIN, "noise": zero}}) == _raw_answers({"m": PLAIN})


# -- reading a history the noise produced --------------------------------------------------------

RO = NoiseProfile(read_only_tools=("lookup_order", "get_customer"), optional_tools=("think",))


def _rounds(*names: str) -> list[list[tuple[str, Any]]]:
    return [[(n, {"id": "A1"}) for n in group.split("+")] for group in names]


@pytest.mark.parametrize(("after", "history", "matches"), [
    (["lookup_order", "issue_refund"], _rounds("lookup_order", "lookup_order", "issue_refund"), True),
    (["lookup_order", "get_customer"], _rounds("get_customer+lookup_order"), True),
    (["think", "lookup_order"], _rounds("lookup_order"), True),
    (["lookup_order", "think"], _rounds("lookup_order"), True),
    ([], _rounds("think"), False),  # an extra optional call is not noise: no loop back to round 1
    ([], [], True),
    (["think"], [], False),
    (["lookup_order", "issue_refund", "lookup_order"], _rounds("lookup_order", "issue_refund", "lookup_order"), True),
    (["lookup_order", "issue_refund"], _rounds("lookup_order", "issue_refund", "lookup_order"), False),
    (["issue_refund"], _rounds("issue_refund+issue_refund"), False),
    (["lookup_order", "issue_refund"], _rounds("issue_refund", "lookup_order"), False),  # order across rounds holds
])
def test_after_matches_the_history_a_noisy_model_makes(after, history, matches):
    assert after_matches(after, history, RO) is matches


def test_a_re_check_with_respelled_numbers_is_still_a_re_check():
    history = [[("lookup_order", {"id": 12})], [("lookup_order", {"id": "12"})], [("issue_refund", {})]]
    assert after_matches(["lookup_order", "issue_refund"], history, RO)


def _script_request(*rounds: list[str]) -> SimRequest:
    messages: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": "go"}]}]
    for names in rounds:
        messages.append({"role": "assistant", "parts": [
            {"type": "tool_call", "name": n, "arguments": {}} for n in names]})
    return SimRequest(model="m", messages=messages)


def test_a_literal_match_wins_over_a_noisy_reading_of_an_earlier_rule():
    rules = [{"when": {"after": ["lookup_order"]}, "reply": {"text": "tolerant"}},
             {"when": {"after": ["lookup_order", "lookup_order"]}, "reply": {"text": "literal"}},
             {"when": {}, "reply": {"text": "catch-all"}}]
    noisy = load_scripts({"m": {"rules": rules, "noise": {"read_only_tools": ["lookup_order"]}}})["m"]
    assert noisy.respond(_script_request(["lookup_order"], ["lookup_order"])).text == "literal"
    rules.pop(1)
    noisy = load_scripts({"m": {"rules": rules, "noise": {"read_only_tools": ["lookup_order"]}}})["m"]
    assert noisy.respond(_script_request(["lookup_order"], ["lookup_order"])).text == "tolerant"
    plain = load_scripts({"m": rules})["m"]  # without a profile the history is read literally
    assert plain.respond(_script_request(["lookup_order"], ["lookup_order"])).text == "catch-all"


# -- the script format ---------------------------------------------------------------------------


def test_a_preset_sets_rates_and_keeps_the_models_lists_and_seed():
    scripts = load_scripts({"a": {"rules": RULES, "noise": {"seed": 4, "read_only_tools": ["x"], "swap_calls": 1}},
                            "b": RULES, "c": {"rules": RULES, "noise": "mild"}}, noise="realistic")
    assert scripts["a"].noise == NoiseProfile(seed=4, read_only_tools=("x",), **PRESETS["realistic"])
    assert scripts["b"].noise == NoiseProfile(**PRESETS["realistic"])
    assert load_scripts({"c": {"rules": RULES, "noise": "mild"}})["c"].noise == NoiseProfile(**PRESETS["mild"])
    assert load_scripts({"b": RULES})["b"].noise is None
    assert {s.noise.seed for s in load_scripts({"a": RULES, "b": {"rules": RULES, "noise": "mild"}},
                                               noise="none", noise_seed=9).values()} == {9}


@pytest.mark.parametrize(("spec", "field", "message"), [
    ({"m": {"rules": RULES, "noise": {"swap_call": 0.5}}}, "m.noise.swap_call", "did you mean 'swap_calls'"),
    ({"m": {"rules": RULES, "noise": {"reword_text": 1.5}}}, "m.noise.reword_text", "from 0 to 1"),
    ({"m": {"rules": RULES, "noise": {"seed": "7"}}}, "m.noise.seed", "integer"),
    ({"m": {"rules": RULES, "noise": "loud"}}, "m.noise", "unknown noise preset 'loud'"),
    ({"m": {"rules": RULES, "noise": {"read_only_tools": "lookup_order"}}}, "m.noise.read_only_tools", "list"),
    ({"m": {"rules": RULES, "noise": 3}}, "m.noise", "a preset name"),
    ({"m": {"rule": RULES}}, "m", "unknown key 'rule'"),
    ({"m": [{"when": {}}]}, "m[0]", "needs a reply"),
    ({"m": {"rules": [{"reply": {"text": "x"}, "when": []}]}}, "m.rules[0].when", "mapping"),
])
def test_bad_scripts_name_the_field(spec, field, message):
    with pytest.raises(InputError, match=re.escape(message)) as err:
        load_scripts(spec)
    assert err.value.field == field


_RATES = st.fixed_dictionaries({}, optional={k: st.floats(0, 1) for k in KINDS})


@given(_RATES, st.integers(-(2**63), 2**63))
def test_any_valid_profile_mapping_parses_to_exactly_its_settings(rates, seed):
    parsed = load_scripts({"m": {"rules": [], "noise": {**rates, "seed": seed}}})["m"].noise
    assert parsed is not None and parsed.seed == seed
    assert {k: parsed.rate(k) for k in KINDS} == {k: rates.get(k, 0.0) for k in KINDS}


@given(st.text(min_size=1), st.integers(0, 2**32))
def test_a_reworded_text_is_never_the_text(text, seed):
    import random

    from evalshift_core.simulator._noise import _ARGUMENT_FRAMES, _TEXT_FRAMES

    for frames in (_ARGUMENT_FRAMES, _TEXT_FRAMES):
        assert reword(text, random.Random(seed), frames) != text


@given(st.one_of(st.integers(-(10**12), 10**12), st.floats(allow_nan=False, allow_infinity=False)))
def test_every_other_spelling_of_a_number_is_the_same_number(value):
    spellings = _spellings(value)
    assert spellings and all(spelled(s) != spelled(value) for s in spellings)
    assert all(_canonical(s) == _canonical(value) for s in spellings)
