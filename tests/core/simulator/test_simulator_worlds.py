"""The noisy support world and the demo's noisy models, driven by an agent loop on the openai SDK."""

from __future__ import annotations

import importlib.util
import json
import re
from collections import Counter
from typing import Any

import openai
import pytest

from evalshift_core.cli._demo import DEMO_NOISE, DEMO_SCRIPTS, find_example_agent
from evalshift_core.simulator import Simulator, load_scripts
from evalshift_core.simulator._worlds import (
    FREE_TEXT_FIELDS,
    KIND_SHARES,
    READ_ONLY_TOOLS,
    SUPPORT_SCRIPTS,
    SUPPORT_TOOLS,
    tickets,
    tool_result,
)

Round = list[tuple[str, Any]]
TOOLS = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                           "parameters": t["input_schema"]}} for t in SUPPORT_TOOLS]


def run_agent(client: openai.OpenAI, model: str, ticket: str, tools: list[dict[str, Any]] = TOOLS,
              max_rounds: int = 8) -> tuple[list[Round], str | None]:
    """The tool rounds the model asked for (arguments as sent) and its final answer (None: unfinished)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": ticket}]
    rounds: list[Round] = []
    for _ in range(max_rounds):
        message = client.chat.completions.create(model=model, messages=messages, tools=tools).choices[0].message
        if not message.tool_calls:
            return rounds, message.content
        rounds.append([(c.function.name, json.loads(c.function.arguments)) for c in message.tool_calls])
        messages.append(message.model_dump(exclude_none=True))
        for c in message.tool_calls:
            result = tool_result(c.function.name, json.loads(c.function.arguments))
            messages.append({"role": "tool", "tool_call_id": c.id, "content": json.dumps(result)})
    return rounds, None


def names(rounds: list[Round]) -> list[str]:
    return [n for r in rounds for n, _ in r]


@pytest.fixture(scope="module")
def world():
    with Simulator(load_scripts(SUPPORT_SCRIPTS)) as sim:
        yield sim, openai.OpenAI(base_url=sim.openai_base_url, api_key="k", max_retries=0)


def test_tickets_come_in_the_stated_shares_and_are_reproducible():
    batch = tickets(200, seed=3)
    assert Counter(t.kind for t in batch) == {k: round(share * 200) for k, share in KIND_SHARES.items()}
    assert batch == tickets(200, seed=3) and batch != tickets(200, seed=4)
    assert len({t.text for t in batch}) > 150


SCRIPTED = {
    "refund": ["think", "lookup_order", "get_customer", "confirm_with_user", "issue_refund"],
    "status": ["lookup_order"],
    "security": ["get_customer", "search_kb", "notify_security_team"],
    "deletion": ["think", "get_customer", "confirm_with_user", "delete_record"],
    "policy": ["search_kb"],
}


def test_every_ticket_is_answered_along_its_kinds_script_whatever_the_noise(world):
    sim, client = world
    for ticket in tickets(60, seed=1):
        rounds, answer = run_agent(client, "support-baseline", ticket.text)
        assert answer, (ticket, rounds)
        # without re-checks and skipped think steps, each ticket makes its kind's calls
        called = [n for n in names(rounds) if n != "think"]
        scripted = [n for n in SCRIPTED[ticket.kind] if n != "think"]
        assert sorted(set(called)) == sorted(scripted), (ticket, rounds)
        assert Counter(n for n in called if n not in READ_ONLY_TOOLS) == Counter(
            n for n in scripted if n not in READ_ONLY_TOOLS)
        for dangerous in ("issue_refund", "delete_record"):
            if dangerous in called:
                assert called.index("confirm_with_user") < called.index(dangerous)


def test_the_candidate_skips_the_escalation_for_customer_ids_ending_in_0_to_4(world):
    sim, client = world
    security = [t for t in tickets(100, seed=2) if t.kind == "security"]
    skipped = {t.text for t in security if re.search(r"C-\d{3}[0-4]\b", t.text)}
    assert 0 < len(skipped) < len(security)
    for ticket in security:
        rounds, answer = run_agent(client, "support-candidate", ticket.text)
        assert answer and ("notify_security_team" not in names(rounds)) is (ticket.text in skipped)


def _differences(first: tuple[list[Round], Any], second: tuple[list[Round], Any]) -> set[str]:
    """What differs between two runs of one ticket, in the issue's words."""
    out = set()
    a, b = first[0], second[0]
    if Counter(n for n in names(a) if n in READ_ONLY_TOOLS) != Counter(n for n in names(b) if n in READ_ONLY_TOOLS):
        out.add("lookups")
    for ra, rb in zip(a, b):
        if [n for n, _ in ra] != [n for n, _ in rb] and sorted(n for n, _ in ra) == sorted(n for n, _ in rb):
            out.add("order")
    args_a = {n: v for r in a for n, v in r}
    args_b = {n: v for r in b for n, v in r}
    for tool in args_a.keys() & args_b.keys():
        for field, value in args_a[tool].items():
            other = args_b[tool].get(field)
            if field in FREE_TEXT_FIELDS and value != other:
                out.add("free text")
            if isinstance(value, (int, float, str)) and isinstance(other, (int, float, str)) and \
                    type(value) is not type(other):
                out.add("number formatting")
    return out


def test_two_runs_of_one_model_differ_as_real_agents_do(world):
    sim, client = world
    batch = tickets(60, seed=5)
    runs = [[run_agent(client, "support-baseline", t.text) for t in batch] for _ in range(2)]
    seen = Counter(d for first, second in zip(*runs) for d in _differences(first, second))
    assert set(seen) == {"lookups", "order", "free text", "number formatting"}, seen
    assert sum(first == second for first, second in zip(*runs)) < len(batch) / 4


def test_the_demo_models_vary_between_replays_and_keep_their_behaviour():
    spec = importlib.util.spec_from_file_location("support_agent", find_example_agent())
    agent = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(agent)
    TICKETS, DEMO_TOOLS = agent.TICKETS, agent.TOOLS  # noqa: N806 - the example's names
    with Simulator(load_scripts(DEMO_SCRIPTS, noise=DEMO_NOISE)) as sim:
        client = openai.OpenAI(base_url=sim.openai_base_url, api_key="k", max_retries=0)
        for model in ("sim-baseline", "sim-candidate"):
            first = [run_agent(client, model, t, DEMO_TOOLS) for t, _ in TICKETS]
            second = [run_agent(client, model, t, DEMO_TOOLS) for t, _ in TICKETS]
            assert first != second and all(answer for _, answer in first + second)
            security = [names(r) for (t, tags), (r, _) in zip(TICKETS * 2, first + second) if "security" in tags]
            notifies = [n == ["notify_security_team"] for n in security]
            assert all(notifies) if model == "sim-baseline" else not any(notifies)
