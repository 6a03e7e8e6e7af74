"""`compare --batch` against online replay, end to end through the CLI and the official SDKs.

Suites are recorded from the support world's baseline (no noise: deterministic scripts), single-shot
and teacher-forced; the candidate never escalates a security ticket. The target sits behind each provider's batch API in turn; the verdict and every
score must be the same as online replay's, byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalshift_core import save_suite
from evalshift_core.cli._main import main
from evalshift_core.simulator import Simulator, load_scripts
from evalshift_core.simulator._recorder import record_example
from evalshift_core.simulator._worlds import (
    SECURITY,
    SUPPORT_SCRIPTS,
    SUPPORT_TOOLS,
    tickets,
    tool_result,
)

# The candidate answers every security ticket with advice and never escalates: a clear regression.
SCRIPTS = {
    "support-baseline": SUPPORT_SCRIPTS["support-baseline"]["rules"],
    "support-candidate": [{"when": {"user_matches": SECURITY}, "reply": {"text": "Please reset your password."}},
                          *SUPPORT_SCRIPTS["support-baseline"]["rules"]],
}

CONFIG = """\
evaluators:
  tool_selection:
    - name: routing
      conformance: expected
      divergence: set
  tool_arguments:
    - name: args
providers:
  openai: {{base_url: "{sim}/v1", api_key: sk-sim}}
  anthropic: {{base_url: "{sim}", api_key: sk-sim}}
  gemini: {{base_url: "{sim}", api_key: sk-sim}}
replay:
  batch_poll_s: 0.05
{extra}"""


@pytest.fixture(scope="module")
def sim():
    with Simulator(load_scripts(SCRIPTS), batch_delay_s=0.1) as s:
        yield s


def _suite(sim: Simulator, base: Path, rounds: str) -> None:
    examples = [record_example(sim, "support-baseline", t.text, example_id=f"t{i:03d}", tools=SUPPORT_TOOLS,
                               run_tool=tool_result, tags=[t.kind], rounds=rounds)  # type: ignore[arg-type]
                for i, t in enumerate(tickets(40, seed=7))]
    save_suite(base / "suites" / "support.jsonl", examples)


def _compare(tmp: Path, base: Path, target: str, sim: Simulator, capsys, *args: str, extra: str = "") -> dict:
    config = tmp / f"evalshift-{base.name}.yaml"
    config.write_text(CONFIG.format(sim=sim.base_url, extra=extra))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["compare", "--suite-name", "support", "--from", "openai:support-baseline", "--to", target,
              "--base", str(base), "--config", str(config), "--json", *args])
    out, err = capsys.readouterr()
    assert exited.value.code == 0, err
    return json.loads(out) | {"stderr": err}


@pytest.mark.parametrize("rounds", ["first", "all"])
@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_batch_replay_gives_the_online_verdict_and_scores(tmp_path, sim, capsys, provider, rounds):
    target = f"{provider}:support-candidate"
    online_base, batch_base = tmp_path / "online", tmp_path / "batch"
    _suite(sim, online_base, rounds)
    _suite(sim, batch_base, rounds)
    created, served = sim.batches_created, len(sim.requests)

    online = _compare(tmp_path, online_base, target, sim, capsys)
    online_requests = len(sim.requests) - served
    assert sim.batches_created == created  # online replay never touches a batch API
    # the flag for anthropic, the config's replay.batch for the others: both paths
    flag = ("--batch",) if provider == "anthropic" else ()
    batched = _compare(tmp_path, batch_base, target, sim, capsys, *flag,
                       extra="" if flag else "  batch: true\n")

    assert sim.batches_created == created + 2  # one batch per model
    new = sim.requests[served + online_requests:]
    # every request went through a batch; a request asked twice (two identical tickets) went once,
    # its copy answered as the response cache answers it online
    assert all("batch" in r for r in new) and 0 < len(new) <= online_requests
    assert online["verdict"] == "fail"  # a real verdict to agree on
    assert batched["verdict"] == online["verdict"]
    assert batched["headline"] == online["headline"]
    scores = [Path(p["run_dir"], "scores.jsonl").read_bytes() for p in (online, batched)]
    assert scores[0] == scores[1] and scores[0].count(b"\n") >= 80
    assert ([c["p_value"] for c in batched["comparisons"]] == [c["p_value"] for c in online["comparisons"]])

    manifest = json.loads(Path(batched["run_dir"], "run.json").read_text())
    assert manifest["replay"] == "batch"
    ended = {"openai": "completed", "anthropic": "ended", "gemini": "JOB_STATE_SUCCEEDED"}[provider]
    assert [(b["model"], b["status"], b["failed"]) for b in manifest["batches"]] == [
        ("openai:support-baseline", "completed", 0), (target, ended, 0)]
    assert sum(b["requests"] for b in manifest["batches"]) == len(new)
    assert manifest["estimated_batch_cost_usd"] <= manifest["estimated_online_cost_usd"]
    assert "replayed through batch APIs" in Path(batched["report_path"]).read_text()
    assert "replayed through batch APIs" not in Path(online["report_path"]).read_text()
    assert "through batch APIs" in batched["stderr"] and "pre-flight:" in online["stderr"]


def test_a_multi_round_suite_puts_every_round_in_the_one_batch(tmp_path, sim, capsys):
    """Teacher-forced rounds are independent: a 3-round example's rounds ride in the same batch."""
    base = tmp_path / "b"
    _suite(sim, base, "all")
    examples = [json.loads(line) for line in (base / "suites" / "support.jsonl").read_text().splitlines()]
    rounds = sum(len(e.get("tool_result_fixtures") or []) + 1 for e in examples)
    assert rounds > len(examples)
    created = sim.batches_created
    # --no-cache: every request is a fresh sample, even two identical tickets' (no copies)
    payload = _compare(tmp_path, base, "openai:support-candidate", sim, capsys, "--batch", "--no-cache")
    assert sim.batches_created == created + 2
    state = json.loads(Path(payload["run_dir"], "batches.json").read_text())
    assert [b["requests"] for b in state["batches"]] == [rounds, rounds]
    # the mapping names every (example, role, round) once; the ids are indices only
    assert len(state["requests"]) == 2 * rounds
    assert {(v["role"], v["round"]) for v in state["requests"].values()} >= {("source", 1), ("target", 3)}
    assert all(not cid.startswith("t0") and len(cid) <= 64 for cid in state["requests"])
