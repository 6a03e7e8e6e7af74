"""What the framework tests share: the support agent's tools as plain functions, and the
capture -> sync -> replay checks every framework must pass."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _capture_agent import REFUND_TICKET, SYSTEM

import evalshift_sdk
from evalshift_core import compare, load_suite, sync
from evalshift_core.cli._demo import DEMO_CONFIG
from evalshift_core.store._suites import resolve_tools

__all__ = ["REFUND_TICKET", "SYSTEM", "assert_refund_loop", "captured", "replay_on", "support_tools", "synced"]


def support_tools() -> dict[str, Callable[..., Any]]:
    """The support agent's tools, each recorded by ``@evalshift_sdk.tool``; the framework wraps
    them (its own decorator reads the signature and docstring through ``functools.wraps``)."""

    @evalshift_sdk.tool
    def lookup_order(order_id: str) -> dict:
        """Look up an order by id."""
        return {"order_id": order_id, "status": "shipped", "amount_usd": 49.99}

    @evalshift_sdk.tool
    def issue_refund(order_id: str, amount_usd: float) -> dict:
        """Issue a refund on an existing order."""
        return {"success": True, "refund_id": f"rf_{order_id.lower()}"}

    return {"lookup_order": lookup_order, "issue_refund": issue_refund}


@contextmanager
def captured(directory: Path) -> Iterator[Path]:
    """``with captured(dir):`` capture on (openai only) for the block; flushed and unpatched after."""
    evalshift_sdk.init(directory, enabled=True, providers=["openai"])
    try:
        yield directory
    finally:
        evalshift_sdk.shutdown()


def synced(captures: Path, base: Path) -> Any:
    """``capture sync --rounds all`` into suite ``fw``: the one example it promoted."""
    result = sync(captures, base=base, suite_name="fw", rounds="all")
    assert result.added == 1, result
    (example,) = load_suite(result.suites["fw"])
    return example


def assert_refund_loop(example: Any, base: Path) -> None:
    """The refund turn's three rounds: lookup_order, then issue_refund, then the answer; both
    executions' results as fixtures, every call requested by the model (not inferred), and the
    tools the framework offered (names and argument types from the functions' signatures)."""
    assert example.promotion_source == "requested"
    assert [c.tool_name for c in example.expected_tools] == ["lookup_order"]
    assert example.expected_tools[0].arguments == {"order_id": "A1001"}
    rounds = [[(c.tool_name, c.arguments) for c in r] for r in example.expected_tool_rounds]
    assert rounds == [[("lookup_order", {"order_id": "A1001"})],
                      [("issue_refund", {"order_id": "A1001", "amount_usd": 49.99})], []]
    fixtures = [[(f.tool_name, f.result) for f in r] for r in example.tool_result_fixtures]
    assert fixtures == [[("lookup_order", {"order_id": "A1001", "status": "shipped", "amount_usd": 49.99})],
                        [("issue_refund", {"success": True, "refund_id": "rf_a1001"})]]
    assert example.replay_rounds == 3
    offered = {t.name: t.input_schema for t in resolve_tools(example, base)}
    assert sorted(offered) == ["issue_refund", "lookup_order"]
    refund = offered["issue_refund"]
    assert {k: v.get("type") for k, v in refund["properties"].items()} == {"order_id": "string", "amount_usd": "number"}
    assert sorted(refund["required"]) == ["amount_usd", "order_id"]


def replay_on(sim: Any, base: Path) -> Any:
    """Replay the synced suite with the baseline model on both sides: each side replays all three
    rounds (teacher-forced with the recorded fixtures) and makes the recorded calls again."""
    before = len(sim.served("openai"))
    cmp = compare("fw", source="openai:sim-baseline", target="openai:sim-baseline", config=DEMO_CONFIG,
                  out_dir=base, providers={"openai": {"base_url": sim.openai_base_url, "api_key": "k"}})
    assert sorted(c.role for c in cmp.calls) == ["source", "target"]
    for call in cmp.calls:
        assert call.error is None and call.rounds == 3, call
        replayed = [[(c.tool_name, c.arguments) for c in call.trace.round(k)] for k in (1, 2, 3)]
        assert replayed == [[("lookup_order", {"order_id": "A1001"})],
                            [("issue_refund", {"order_id": "A1001", "amount_usd": 49.99})], []]
    assert len(sim.served("openai")) - before == 6
    # one example is too few for a verdict either way; nothing regressed
    assert cmp.verdict == "inconclusive" and cmp.regressions == []
    return cmp
