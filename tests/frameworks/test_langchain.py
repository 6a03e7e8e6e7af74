"""LangChain over ``langchain-openai`` (and LangGraph's prebuilt ReAct agent): the real framework
on the simulator, captured by the SDK underneath it, synced into a suite and replayed.

ChatOpenAI calls the official ``openai`` client's Chat Completions, which the SDK patches, so the
model's requested calls are captured with no framework hook; the executions are captured by
``@evalshift_sdk.tool`` under LangChain's own ``@tool``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from _capture_agent import simulator
from framework_support import (
    REFUND_TICKET,
    SYSTEM,
    assert_refund_loop,
    captured,
    replay_on,
    support_tools,
    synced,
)

import evalshift_sdk

langchain_openai = pytest.importorskip("langchain_openai")
from langchain_core.messages import HumanMessage, SystemMessage  # noqa: E402
from langchain_core.tools import tool as langchain_tool  # noqa: E402


@pytest.fixture(autouse=True)
def _no_langsmith(monkeypatch):
    """LangSmith tracing is off unless the environment turns it on: make sure it does not here."""
    for name in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        monkeypatch.delenv(name, raising=False)


def _chat_model(sim: Any) -> Any:
    return langchain_openai.ChatOpenAI(model="sim-baseline", base_url=sim.openai_base_url, api_key="sk-test",
                                       max_retries=0)


def _tool_loop(sim: Any, ticket: str) -> str:
    """The manual agent loop: bind_tools, invoke, run each requested tool, feed its message back."""
    tools = {name: langchain_tool(fn) for name, fn in support_tools().items()}
    model = _chat_model(sim).bind_tools(list(tools.values()))
    messages: list[Any] = [SystemMessage(SYSTEM), HumanMessage(ticket)]
    for _ in range(5):
        reply = model.invoke(messages)
        messages.append(reply)
        if not reply.tool_calls:
            return str(reply.content)
        messages.extend(tools[call["name"]].invoke(call) for call in reply.tool_calls)
    raise AssertionError("the agent did not finish in 5 rounds")


def test_bind_tools_loop_is_captured_synced_and_replayed(tmp_path):
    with simulator() as sim:
        with captured(tmp_path / "captures"), evalshift_sdk.turn(prompt_id="support", inputs={"ticket": REFUND_TICKET}):
            answer = _tool_loop(sim, REFUND_TICKET)
        assert "refunded $49.99 on order A1001" in answer
        assert len(sim.served("openai")) == 3  # three rounds went through the official client

        example = synced(tmp_path / "captures", tmp_path / "base")
        assert_refund_loop(example, tmp_path / "base")
        assert example.inputs["ticket"] == REFUND_TICKET
        replay_on(sim, tmp_path / "base")


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("how", ["invoke", "ainvoke", "streaming"])
def test_langgraph_react_agent_is_captured_synced_and_replayed(tmp_path, how):
    """LangGraph's prebuilt ReAct agent: sync, async (AsyncOpenAI underneath, tools on the graph's
    executor threads) and a streaming chat model (Chat Completions chunks) all capture alike."""
    prebuilt = pytest.importorskip("langgraph.prebuilt")
    with simulator() as sim:
        model = langchain_openai.ChatOpenAI(model="sim-baseline", base_url=sim.openai_base_url, api_key="sk-test",
                                            max_retries=0, streaming=how == "streaming")
        agent = prebuilt.create_react_agent(model, [langchain_tool(f) for f in support_tools().values()],
                                            prompt=SYSTEM)
        request = {"messages": [HumanMessage(REFUND_TICKET)]}
        with captured(tmp_path / "captures"), evalshift_sdk.turn(prompt_id="support", inputs={"ticket": REFUND_TICKET}):
            state = asyncio.run(agent.ainvoke(request)) if how == "ainvoke" else agent.invoke(request)
        assert "refunded $49.99 on order A1001" in state["messages"][-1].content
        served = sim.served("openai")
        assert [bool(s["body"].get("stream")) for s in served] == [how == "streaming"] * 3

        example = synced(tmp_path / "captures", tmp_path / "base")
        assert_refund_loop(example, tmp_path / "base")
        replay_on(sim, tmp_path / "base")
