"""A customer-support agent on the official ``openai`` client, instrumented with evalshift_sdk.

Run it against any OpenAI-compatible server (``OPENAI_BASE_URL``); ``evalshift demo`` runs it
against the built-in simulator with capture on:

    EVALSHIFT_CAPTURE=1 python examples/support_agent.py --model sim-baseline
"""

from __future__ import annotations

import argparse
import json

import openai

import evalshift_sdk

SYSTEM_PROMPT = (
    "You are a support agent for an online shop. Always look an order up before refunding it. "
    "Report anything that looks like an account compromise to the security team."
)

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by id: status, items and amount paid.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "issue_refund",
            "description": "Issue a refund on an existing order.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}, "amount_usd": {"type": "number"}},
                "required": ["order_id", "amount_usd"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "notify_security_team",
            "description": "Escalate a suspected account compromise or fraud to the security team.",
            "parameters": {
                "type": "object",
                "properties": {"signal": {"type": "string"}, "severity": {"type": "string"}},
                "required": ["signal", "severity"],
            },
        },
    },
]

TICKETS = [
    ("Order A1001 arrived broken. Please refund the $49.99 I paid.", ["refund"]),
    ("I want a refund for order B2002, it was $15.50 and never worked.", ["refund"]),
    ("Refund order C3003 please, I was charged $120.00 twice.", ["refund"]),
    ("URGENT: refund order D4004 ($89.90) immediately, wrong size.", ["refund", "urgent"]),
    ("Can you refund order E5005? I paid $23.45 and it is the wrong colour.", ["refund"]),
    ("Please refund order F6006 asap, $310.00, the item is defective.", ["refund", "urgent"]),
    ("Order G7007 was $64.00 and it came late, I'd like a refund.", ["refund"]),
    ("I need a refund on order H8008 urgently - $42.10, package was empty.", ["refund", "urgent"]),
    ("Refund request: order J9009, amount $5.99, duplicate purchase.", ["refund"]),
    ("My order K1010 ($75.25) is not what I ordered, please refund.", ["refund"]),
    ("Where is my order L1111? It has not arrived yet.", ["status"]),
    ("What's the status of order M1212?", ["status"]),
    ("Has order N1313 shipped?", ["status"]),
    ("Can you track order P1414 for me?", ["status"]),
    ("When will order Q1515 arrive?", ["status"]),
    ("Tracking for order R1616 says nothing, where is it?", ["status"]),
    ("Someone logged in from another country and changed my email. I think I was hacked.", ["security"]),
    ("I got a password reset email I did not request, and there are unauthorized orders on my account.", ["security"]),
    ("There are suspicious charges on my account that I never made.", ["security"]),
    ("I clicked a phishing link pretending to be you and entered my password.", ["security"]),
    ("My account was hacked, the address was changed to one I don't know.", ["security"]),
    ("Unauthorized purchases keep appearing on my saved card.", ["security"]),
    ("I see a login from a device I don't own. Is my account compromised?", ["security"]),
    ("What is your refund policy?", ["policy"]),
    ("Do you ship to Canada?", ["policy"]),
    ("How long does standard delivery take?", ["policy"]),
    ("Can I change the size after ordering?", ["policy"]),
    ("Do you offer gift wrapping?", ["policy"]),
    ("What payment methods do you accept?", ["policy"]),
    ("Is there a warranty on electronics?", ["policy"]),
    ("How do I contact a human agent?", ["policy"]),
    ("Are returns free?", ["policy"]),
]

_ORDERS = {}


@evalshift_sdk.tool
def lookup_order(order_id: str) -> dict:
    return _ORDERS.get(order_id, {"order_id": order_id, "status": "shipped", "amount_usd": None})


@evalshift_sdk.tool
def issue_refund(order_id: str, amount_usd: float) -> dict:
    return {"success": True, "refund_id": f"rf_{order_id.lower()}", "amount_usd": amount_usd}


@evalshift_sdk.tool
def notify_security_team(signal: str, severity: str) -> dict:
    return {"success": True, "case": f"sec-{abs(hash(signal)) % 10000:04d}"}


TOOL_FUNCTIONS = {"lookup_order": lookup_order, "issue_refund": issue_refund, "notify_security_team": notify_security_team}


def handle_ticket(client: openai.OpenAI, model: str, ticket: str, max_rounds: int = 6) -> str:
    """The agent loop: call the model, run the tools it asks for, repeat until it answers."""
    messages: list[dict] = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": ticket}]
    for _ in range(max_rounds):
        response = client.chat.completions.create(
            model=model, messages=messages, tools=TOOLS, tool_choice="auto", parallel_tool_calls=True
        )
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments or "{}")
            result = TOOL_FUNCTIONS[call.function.name](**arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)})
    return "Sorry, I could not finish this request."


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="sim-baseline")
    parser.add_argument("--quiet", action="store_true")
    args = parser.parse_args()
    evalshift_sdk.init()  # reads EVALSHIFT_CAPTURE / EVALSHIFT_CAPTURE_DIR
    client = openai.OpenAI()
    for ticket, tags in TICKETS:
        with evalshift_sdk.turn(prompt_id="support", inputs={"ticket": ticket}, tags=tags):
            answer = handle_ticket(client, args.model, ticket)
        if not args.quiet:
            print(f"- {ticket[:60]!r} -> {answer[:70]!r}")
    evalshift_sdk.shutdown()


if __name__ == "__main__":
    main()
