"""A small agent for the capture tests: the real openai client on the simulator, captured by the SDK.

Scripted models cover what the seed's rules need: the refund loop (lookup_order -> issue_refund ->
answer), a no-tool answer, parallel calls, a failing tool, a retry after a failure.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import openai

import evalshift_sdk
from evalshift_core.cli._demo import DEMO_SCRIPTS
from evalshift_core.simulator import Simulator, load_scripts

SYSTEM = "You are a support agent. Look an order up before refunding it."

TOOLS = [
    {"type": "function", "function": {
        "name": "lookup_order", "description": "Look up an order by id.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}}},
    {"type": "function", "function": {
        "name": "issue_refund", "description": "Issue a refund on an existing order.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}, "amount_usd": {"type": "number"}},
                       "required": ["order_id", "amount_usd"]}}},
    {"type": "function", "function": {
        "name": "notify_security_team", "description": "Escalate a suspected account compromise.",
        "parameters": {"type": "object", "properties": {"signal": {"type": "string"}, "severity": {"type": "string"}},
                       "required": ["signal", "severity"]}}},
]

_LOOKUP = {"name": "lookup_order", "arguments": {"order_id": "{order_id}"}}
_ORDER = r"(?=.*\b(?P<order_id>[A-Z]\d{4})\b)"

SCRIPTS: dict[str, list[dict[str, Any]]] = {
    **DEMO_SCRIPTS,
    # Two calls in one response: parallel.
    "sim-parallel": [
        {"when": {"after": []}, "reply": {"tool_calls": [
            {"name": "lookup_order", "arguments": {"order_id": "A1001"}},
            {"name": "notify_security_team", "arguments": {"signal": "hacked", "severity": "high"}}]}},
        {"when": {}, "reply": {"text": "Looked it up and escalated."}},
    ],
    # Calls lookup_order again after its result failed: a retry loop.
    "sim-retry": [
        {"when": {"user_matches": _ORDER, "after": []}, "reply": {"tool_calls": [_LOOKUP]}},
        {"when": {"user_matches": _ORDER, "after": ["lookup_order"]}, "reply": {"tool_calls": [_LOOKUP]}},
        {"when": {}, "reply": {"text": "Your order {order_id} has shipped."}},
    ],
}

REFUND_TICKET = "Order A1001 arrived broken. Please refund the $49.99 I paid."
POLICY_TICKET = "What is your refund policy?"


def default_tools() -> dict[str, Callable[..., Any]]:
    @evalshift_sdk.tool
    def lookup_order(order_id: str) -> dict:
        return {"order_id": order_id, "status": "shipped", "amount_usd": 49.99}

    @evalshift_sdk.tool
    def issue_refund(order_id: str, amount_usd: float) -> dict:
        return {"success": True, "refund_id": f"rf_{order_id.lower()}"}

    @evalshift_sdk.tool
    def notify_security_team(signal: str, severity: str) -> dict:
        return {"success": True, "case": "sec-0001"}

    return {"lookup_order": lookup_order, "issue_refund": issue_refund, "notify_security_team": notify_security_team}


def handle(client: openai.OpenAI, model: str, ticket: str, tools: dict[str, Callable[..., Any]],
           max_rounds: int = 5) -> str:
    """The agent loop: a tool that raises is reported back to the model as {"error": ...}."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ticket}]
    for _ in range(max_rounds):
        r = client.chat.completions.create(model=model, messages=messages, tools=TOOLS,
                                           tool_choice="auto", parallel_tool_calls=True)
        msg = r.choices[0].message
        if not msg.tool_calls:
            return msg.content or ""
        messages.append(msg.model_dump(exclude_none=True))
        for call in msg.tool_calls:
            try:
                result: Any = tools[call.function.name](**json.loads(call.function.arguments or "{}"))
            except Exception as exc:  # noqa: BLE001 - the agent tells the model its tool failed
                result = {"error": str(exc)}
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    return ""


@contextmanager
def simulator() -> Iterator[Simulator]:
    with Simulator(load_scripts(SCRIPTS)) as sim:
        yield sim


def capture_turns(
    capture_dir: Path,
    sim: Simulator,
    turns: list[tuple[str, str]],
    *,
    tools: dict[str, Callable[..., Any]] | None = None,
    prompt_id: str = "support",
) -> None:
    """Run ``(model, ticket)`` turns with capture on into ``capture_dir``; flushed on return."""
    evalshift_sdk.init(capture_dir, enabled=True, providers=["openai"])
    try:
        client = openai.OpenAI(base_url=sim.openai_base_url, api_key="sk-test")
        impl = tools or default_tools()
        for model, ticket in turns:
            with evalshift_sdk.turn(prompt_id=prompt_id, inputs={"ticket": ticket}, tags=[model]):
                handle(client, model, ticket, impl)
    finally:
        evalshift_sdk.shutdown()


def span_lines(capture_dir: Path) -> list[bytes]:
    return [line for f in sorted(capture_dir.glob("*.jsonl")) for line in f.read_bytes().splitlines() if line]


def flat_spans(capture_dir: Path) -> list[dict[str, Any]]:
    """Every span of the capture dir, in file order."""
    out = []
    for line in span_lines(capture_dir):
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                out.extend(ss["spans"])
    return out


def write_spans(path: Path, spans: list[dict[str, Any]], *, per_line: int = 1, scope: str = "evalshift_sdk") -> None:
    """Write spans as OTLP/JSON lines, ``per_line`` spans per ExportTraceServiceRequest."""
    lines = []
    for i in range(0, len(spans), per_line):
        lines.append(json.dumps({"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [
            {"scope": {"name": scope}, "spans": spans[i:i + per_line]}]}]}))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))
