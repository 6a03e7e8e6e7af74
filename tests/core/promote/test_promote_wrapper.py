"""Seed 001 Troubleshooting, "expected_tools arguments use keys absent from the tool schema", on
real captures: the application executes its tools through a wrapper taking one ``payload`` dict.

Executed calls are ground truth only when the model's requested calls were not recorded: here,
here, an SDK capture whose chat spans lost their response attributes, with and without the
SDK's own recorded toolset sidecar.
"""

from __future__ import annotations

import json
from pathlib import Path

from _capture_agent import REFUND_TICKET, capture_turns, default_tools, simulator

import evalshift_sdk
from evalshift_core import load_suite
from evalshift_core.promote._sync import sync

ABSENT = "expected_tools arguments use keys absent from the tool schema"


def _wrapped_tools() -> dict:
    tools = default_tools()

    @evalshift_sdk.tool(name="issue_refund")
    def refund_via_gateway(payload: dict) -> dict:
        return {"success": True, "refund_id": "rf_" + payload["order_id"].lower()}

    # The agent calls the wrapper with the model's arguments packed into one payload dict.
    tools["issue_refund"] = lambda **arguments: refund_via_gateway(payload=arguments)
    return tools


def _strip_requested(directory: Path) -> None:
    """Drop the response attributes from every chat span, as if they had not been recorded."""
    for path in directory.glob("*.jsonl"):
        lines = []
        for line in path.read_text().splitlines():
            request = json.loads(line)
            for rs in request["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    for span in ss["spans"]:
                        span["attributes"] = [kv for kv in span["attributes"]
                                              if kv["key"] != "evalshift.requested_tool_calls"]
            lines.append(json.dumps(request))
        path.write_text("\n".join(lines) + "\n")


def test_wrapper_parameters_unwrapped_against_the_recorded_sidecar(tmp_path):
    with simulator() as sim:
        capture_turns(tmp_path / "captures", sim, [("sim-baseline", REFUND_TICKET)], tools=_wrapped_tools())
    _strip_requested(tmp_path / "captures")
    result = sync(tmp_path / "captures", base=tmp_path / "base", suite_name="s")
    (ex,) = load_suite(result.suites["s"])
    assert ex.promotion_source == "executed"
    assert [[c.tool_name for c in r] for r in ex.expected_tool_rounds] == [["lookup_order"], ["issue_refund"], []]
    assert ex.expected_tool_rounds[1][0].arguments == {"order_id": "A1001", "amount_usd": 49.99}
    (warning,) = [w for w in result.warnings if ABSENT in w]
    assert "(issue_refund: payload); unwrapped 'payload'" in warning and ex.id in warning


def test_wrapper_parameters_left_untouched_when_no_sidecar_resolves(tmp_path):
    """"with no resolvable sidecar the recording is left untouched.\""""
    with simulator() as sim:
        capture_turns(tmp_path / "captures", sim, [("sim-baseline", REFUND_TICKET)], tools=_wrapped_tools())
    _strip_requested(tmp_path / "captures")
    for sidecar in (tmp_path / "captures" / "toolsets").glob("*.json"):
        sidecar.unlink()
    result = sync(tmp_path / "captures", base=tmp_path / "base", suite_name="s")
    (ex,) = load_suite(result.suites["s"])
    assert ex.promotion_source == "executed"
    assert ex.expected_tool_rounds[1][0].arguments == {"payload": {"order_id": "A1001", "amount_usd": 49.99}}
    assert not [w for w in result.warnings if ABSENT in w]
    assert any("has no sidecar" in w and ex.id in w for w in result.warnings)
