"""A model call's conversions run on the export thread: what that must not change for the host
or for the record (snapshots taken on the caller's thread, one-shot iterators left alone,
faults on the export side contained)."""

from __future__ import annotations

import json
import logging

import pytest
from sdk_support import anthropic_client, in_process_openai, read_spans, request_kwargs

import evalshift_sdk
from evalshift_sdk import _guard
from evalshift_sdk import schema as A
from evalshift_sdk.instrumentation import _genai

TOOLS = [{"type": "function", "function": {"name": "lookup_order", "parameters": {"type": "object", "properties": {}}}}]


def test_messages_given_as_a_one_shot_iterator_still_reach_the_provider(capture_dir, spans):
    """Reading the host's iterator would send the provider an empty conversation; the SDK
    leaves it unread and records the call without its input messages."""
    client = in_process_openai(echo=True)  # the reply's arguments echo the last user message
    messages = iter([{"role": "user", "content": "A42"}])
    with evalshift_sdk.turn(prompt_id="iter"):
        response = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    assert json.loads(response.choices[0].message.tool_calls[0].function.arguments) == {"order_id": "A42"}
    [chat] = spans("chat")
    assert A.INPUT_MESSAGES not in chat["attrs"]
    assert chat["attrs"][A.REQUESTED_TOOL_CALLS][0]["arguments"] == {"order_id": "A42"}


def test_the_host_changing_its_lists_after_the_call_does_not_change_the_record(capture_dir, spans):
    client = in_process_openai()
    messages = [{"role": "user", "content": "where is A1?"}]
    tools = list(TOOLS)
    with evalshift_sdk.turn(prompt_id="agent"):
        response = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        # What agent loops do next, before the span is exported.
        messages.append(response.choices[0].message.model_dump(exclude_none=True))
        messages.append({"role": "tool", "tool_call_id": "call_1", "content": "{}"})
        tools.append({"type": "function", "function": {"name": "added_later", "parameters": {}}})
    [chat] = spans("chat")
    assert chat["attrs"][A.INPUT_MESSAGES] == [
        {"role": "user", "parts": [{"type": "text", "content": "where is A1?"}]}
    ]
    assert chat["attrs"][A.TOOLSET_REF] == _genai.toolset_of(TOOLS)[1]


def test_one_tools_list_changed_between_calls_gets_the_ref_of_what_it_held_each_time(capture_dir, spans):
    """The toolset cache is keyed by the tools' content, never by the list object: an agent
    that edits its one tools list in place (a description reworded, a tool added) between calls
    gets a new ref and sidecar for each version, and equal content in another list shares one."""
    client = in_process_openai()
    tools = [{"type": "function", "function": {"name": "lookup_order", "description": "Look up an order.",
                                               "parameters": {"type": "object", "properties": {}}}}]
    versions = []
    for change in (None, "reword", "add", "copy"):
        if change == "reword":
            tools[0]["function"]["description"] = "Find an order by its id."
        elif change == "add":
            tools.append({"type": "function", "function": {"name": "issue_refund", "parameters": {}}})
        offered = json.loads(json.dumps(tools)) if change == "copy" else tools
        versions.append(json.loads(json.dumps(tools)))
        with evalshift_sdk.turn(prompt_id="agent"):
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "A1?"}],
                                           tools=offered)
        evalshift_sdk.flush()  # exported before the next change, as a live agent's calls usually are
    refs = [chat["attrs"][A.TOOLSET_REF] for chat in spans("chat")]
    assert refs == [A.toolset_ref(A.normalise_toolset(v)) for v in versions]
    assert len(set(refs[:3])) == 3 and refs[3] == refs[2]
    for ref, version in zip(refs, versions):
        sidecar = capture_dir / "toolsets" / A.ref_filename(ref)
        assert json.loads(sidecar.read_text()) == A.normalise_toolset(version)


def test_a_tool_run_before_the_export_links_to_the_call_it_answers(capture_dir, spans):
    client = in_process_openai()

    @evalshift_sdk.tool
    def lookup_order(order_id: str) -> dict:
        return {"order_id": order_id}

    with evalshift_sdk.turn(prompt_id="agent"):
        response = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "A1?"}], tools=TOOLS
        )
        args = json.loads(response.choices[0].message.tool_calls[0].function.arguments)
        lookup_order(**args)  # no call id given: linked by name and arguments
    [executed] = spans("execute_tool")
    assert executed["attrs"][A.TOOL_CALL_ID] == "call_1"


@pytest.mark.parametrize("step", ["_request_attributes", "_response_attributes"])
def test_a_fault_on_the_export_side_still_exports_the_call(step, capture_dir, spans, monkeypatch, caplog):
    """The host is long gone from the call when the exporter resolves it: a bug there costs
    the attributes that step makes, not the span, and never leaks the pending object."""
    monkeypatch.delenv("EVALSHIFT_RAISE_INTERNAL")
    monkeypatch.setattr(_guard, "_seen", set())  # each site logs once per process

    def boom(*args, **kwargs):
        raise RuntimeError("injected")

    monkeypatch.setattr(_genai, step, boom)
    client = in_process_openai()
    with caplog.at_level(logging.WARNING, logger="evalshift_sdk"), evalshift_sdk.turn(prompt_id="x"):
        response = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "A1?"}], tools=TOOLS
        )
    assert response.choices[0].message.tool_calls[0].id == "call_1"
    [chat] = spans("chat")
    assert chat["attrs"][A.REQUEST_MODEL] == "gpt-4o-mini"
    assert A.DEFERRED not in chat["attrs"]
    assert (A.INPUT_MESSAGES in chat["attrs"]) == (step != "_request_attributes")
    assert (A.REQUESTED_TOOL_CALLS in chat["attrs"]) == (step != "_response_attributes")
    assert chat["attrs"][A.LATENCY_MS] > 0
    assert "internal error in export." in caplog.text


def test_no_capture_line_carries_the_pending_object(capture_dir):
    client = in_process_openai()
    with evalshift_sdk.turn(prompt_id="x"):
        for _ in range(3):
            client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])
    evalshift_sdk.flush()
    text = "".join(p.read_text() for p in capture_dir.rglob("*.jsonl"))
    assert "gen_ai.output.messages" in text
    assert "internal" not in text
    assert len([s for s in read_spans(capture_dir) if s["attrs"][A.OPERATION] == "chat"]) == 3


def test_anthropic_messages_given_as_a_one_shot_iterator_still_reach_the_provider(capture_dir, spans, replay):
    server = replay("anthropic/messages_parallel_tool_use.yaml")
    kwargs = request_kwargs(server.interactions[0])
    sent = kwargs["messages"]
    kwargs["messages"] = iter(sent)
    with evalshift_sdk.turn(prompt_id="iter"):
        anthropic_client(server).messages.create(**kwargs)
    assert json.loads(server.received[0].body)["messages"] == sent
    [chat] = spans("chat")
    assert A.INPUT_MESSAGES not in chat["attrs"]
    assert chat["attrs"][A.REQUESTED_TOOL_CALLS]
