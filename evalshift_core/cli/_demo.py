"""``evalshift demo``: the whole pipeline offline, on the simulator and the support agent.

A baseline simulated model and a candidate that skips ``notify_security_team`` on security
tickets and calls ``issue_refund`` before ``lookup_order`` on urgent refund tickets. The demo
serves both under a mild noise profile (``DEMO_NOISE``), so two replays of one model differ.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from .._compare import Comparison, compare
from .._exceptions import EvalShiftError
from ..config._config import Config
from ..promote._sync import sync
from ..simulator import Simulator, load_scripts
from ..store._suites import DEFAULT_BASE

_ORDER = r"(?=.*\b(?P<order_id>[A-Z]\d{4})\b)"
_AMOUNT = r"(?=.*\$(?P<amount>\d+(?:\.\d+)?))"
REFUND = _ORDER + _AMOUNT + r"(?=.*\brefund)"
URGENT_REFUND = REFUND + r"(?=.*\b(urgent|urgently|asap|immediately)\b)"
SECURITY = r"(?=.*\b(?P<signal>hacked|unauthori[sz]ed|suspicious|phishing|compromised|logged in|password reset)\b)"
STATUS = _ORDER + r"(?=.*\b(where|status|track|tracking|shipped|arrive)\b)"

_LOOKUP = {"name": "lookup_order", "arguments": {"order_id": "{order_id}"}}
_REFUND = {"name": "issue_refund", "arguments": {"order_id": "{order_id}", "amount_usd": "{amount:number}"}}
_NOTIFY = {"name": "notify_security_team", "arguments": {"signal": "{signal}", "severity": "high"}}

_SECURITY_DONE = {"when": {"user_matches": SECURITY, "after": ["notify_security_team"]},
                  "reply": {"text": "I've escalated this to our security team; they will contact you shortly."}}
_REFUND_RULES = [
    {"when": {"user_matches": REFUND, "after": []}, "reply": {"tool_calls": [_LOOKUP]}},
    {"when": {"user_matches": REFUND, "after": ["lookup_order"]}, "reply": {"tool_calls": [_REFUND]}},
    {"when": {"user_matches": REFUND, "after": ["lookup_order", "issue_refund"]},
     "reply": {"text": "I've refunded ${amount} on order {order_id}; expect it in 3-5 business days."}},
]
_STATUS_RULES = [
    {"when": {"user_matches": STATUS, "after": []}, "reply": {"tool_calls": [_LOOKUP]}},
    {"when": {"user_matches": STATUS, "after": ["lookup_order"]},
     "reply": {"text": "Order {order_id} has shipped and is on its way."}},
]
_POLICY = {"when": {}, "reply": {"text": "Happy to help: returns are free within 30 days and refunds take 3-5 business days."}}

DEMO_NOISE: dict[str, Any] = {"preset": "mild", "read_only_tools": ["lookup_order"], "free_text_fields": ["signal"]}
"""How the demo's models vary between replays: now and then an order looked up twice, the security
signal or the answer worded differently, an amount spelled ``"49.99"``."""

DEMO_SCRIPTS: dict[str, list[dict[str, Any]]] = {
    "sim-baseline": [
        {"when": {"user_matches": SECURITY, "after": []}, "reply": {"tool_calls": [_NOTIFY]}},
        _SECURITY_DONE, *_REFUND_RULES, *_STATUS_RULES, _POLICY,
    ],
    "sim-candidate": [
        {"when": {"user_matches": SECURITY},
         "reply": {"text": "Sorry to hear that! Please reset your password and you should be fine."}},
        {"when": {"user_matches": URGENT_REFUND, "after": []}, "reply": {"tool_calls": [_REFUND]}},
        {"when": {"user_matches": URGENT_REFUND, "after": ["issue_refund"]}, "reply": {"tool_calls": [_LOOKUP]}},
        {"when": {"user_matches": URGENT_REFUND, "after": ["issue_refund", "lookup_order"]},
         "reply": {"text": "Refunded ${amount} on order {order_id}."}},
        *_REFUND_RULES, *_STATUS_RULES, _POLICY,
    ],
}

DEMO_CONFIG: dict[str, Any] = {
    "evaluators": {
        "tool_selection": [
            {"name": "routing", "conformance": "expected", "divergence": "set", "severity_floor": "high"}
        ]
    }
}

SUITE_NAME = "support-demo"


def find_example_agent() -> Path:
    here = Path(__file__).resolve().parents[2] / "examples" / "support_agent.py"
    if not here.exists():
        raise EvalShiftError(f"the demo needs examples/support_agent.py from the source tree (looked in {here})")
    return here


def run_demo(base: str | os.PathLike[str] = DEFAULT_BASE, *, echo: Any = print) -> Comparison:
    """Capture the support agent on the baseline, build the suite, compare against the candidate."""
    base = Path(base)
    capture_dir = base / "demo-captures"
    shutil.rmtree(capture_dir, ignore_errors=True)
    (base / "suites" / f"{SUITE_NAME}.jsonl").unlink(missing_ok=True)
    agent = find_example_agent()
    with Simulator(load_scripts(DEMO_SCRIPTS, noise=DEMO_NOISE)) as sim:
        echo(f"simulator listening on {sim.base_url}")
        env = dict(os.environ)
        env.update({
            "EVALSHIFT_CAPTURE": "1",
            "EVALSHIFT_CAPTURE_DIR": str(capture_dir),
            "OPENAI_BASE_URL": sim.openai_base_url,
            "OPENAI_API_KEY": "sk-sim-demo",
        })
        echo(f"running {agent.name} on sim-baseline with capture on ...")
        proc = subprocess.run(
            [sys.executable, str(agent), "--model", "sim-baseline", "--quiet"],
            env=env, capture_output=True, text=True,
        )
        if proc.returncode != 0:
            raise EvalShiftError(f"the support agent failed: {proc.stderr.strip().splitlines()[-1:]}")
        result = sync(capture_dir, base=base, suite_name=SUITE_NAME)
        echo(f"synced {result.added} examples into {result.suites[SUITE_NAME]}")
        echo("comparing openai:sim-baseline -> openai:sim-candidate ...")
        return compare(
            SUITE_NAME,
            source="openai:sim-baseline",
            target="openai:sim-candidate",
            config=Config.model_validate(DEMO_CONFIG),
            out_dir=base,
            providers={"openai": {"base_url": sim.openai_base_url, "api_key": "sk-sim-demo"}},
        )
