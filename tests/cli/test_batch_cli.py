"""`evalshift run --batch` as a user runs it: killed after submission, `--status`, then `--resume`.

The simulator counts the batches created: a resumed run polls the ones it finds in the run folder
and submits none again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from cli_support import EXE

from evalshift_core.simulator import Simulator, load_scripts

SCRIPTS = {
    "base": [{"when": {"user_matches": "refund"},
              "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}]}},
             {"when": {}, "reply": {"text": "ok"}}],
    "gemini-cand": [{"when": {}, "reply": {"text": "sure"}}],
}
TOOLS = [{"name": "lookup_order", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]
CONFIG = """\
providers:
  openai: {{base_url: "{sim}/v1", api_key: sk-sim}}
  gemini: {{base_url: "{sim}", api_key: sk-sim}}
replay:
  batch_poll_s: 0.05
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("EVALSHIFT_", "OPENAI_", "ANTHROPIC_", "GOOGLE_"))}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([EXE, *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=180)


def test_a_batch_run_killed_after_submission_resumes_without_submitting_again(tmp_path):
    (tmp_path / "suite.jsonl").write_text("".join(
        json.dumps({"id": f"t{i}", "inputs": {"input": f"please refund order {i}"}, "tools": TOOLS}) + "\n"
        for i in range(6)))
    state = tmp_path / ".evalshift" / "runs" / "r1" / "batches.json"
    with Simulator(load_scripts(SCRIPTS), batch_delay_s=3600) as sim:
        (tmp_path / "evalshift.yaml").write_text(CONFIG.format(sim=sim.base_url))
        child = subprocess.Popen([EXE, "run", "--suite", "suite.jsonl", "--from", "openai:base", "--to",
                                  "gemini:gemini-cand", "--batch", "--run-id", "r1"],
                                 cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and child.poll() is None:
            if state.exists() and len(json.loads(state.read_text())["batches"]) == 2 and sum(sim.batch.polls.values()):
                break
            time.sleep(0.02)
        assert child.poll() is None, child.stderr.read().decode() if child.stderr else ""
        # while it waits, a second replay of the run is refused: it would write every row twice
        twice = _cli("run", "--resume", "r1", cwd=tmp_path)
        assert twice.returncode == 1 and "run r1 is being replayed by another process" in twice.stderr
        assert sim.batches_created == 2
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        assert sim.batches_created == 2
        manifest = json.loads((tmp_path / ".evalshift" / "runs" / "r1" / "run.json").read_text())
        assert manifest["status"] == "running" and [b["status"] for b in manifest["batches"]] == [
            "in_progress", "JOB_STATE_RUNNING"]

        status = _cli("run", "--status", "r1", "--json", cwd=tmp_path)
        assert status.returncode == 0, status.stderr
        info = json.loads(status.stdout)
        assert (info["status"], info["replay"], info["rows"], info["planned_rows"]) == ("running", "batch", 0, 12)
        assert [(b["model"], b["status"], b["requests"]) for b in info["batches"]] == [
            ("openai:base", "in_progress", 6), ("gemini:gemini-cand", "JOB_STATE_RUNNING", 6)]
        text = _cli("run", "--status", "r1", cwd=tmp_path).stdout.splitlines()
        assert text[0] == "run r1: running (batch replay), 0 of 12 rows written"
        assert text[1].split()[:4] == ["openai:base", manifest["batches"][0]["id"], "in_progress", "0/6"]

        sim.batch.delay_s = 0  # the provider finishes while nobody is watching
        resumed = _cli("run", "--resume", "r1", cwd=tmp_path)
        assert resumed.returncode == 0, resumed.stderr
    assert sim.batches_created == 2, "the resumed run polled its batches and submitted none"
    assert "replayed 6 examples through batch APIs (2 batches) (0 failed calls" in resumed.stdout
    rows = [json.loads(line) for line in (tmp_path / ".evalshift" / "runs" / "r1" / "raw.jsonl").read_text().splitlines()]
    assert sorted((r["example_id"], r["role"]) for r in rows) == sorted(
        (f"t{i}", role) for i in range(6) for role in ("source", "target"))
    assert all(not r.get("error") for r in rows)
    manifest = json.loads((tmp_path / ".evalshift" / "runs" / "r1" / "run.json").read_text())
    assert manifest["status"] == "complete" and len(manifest["resumed"]) == 1
    assert [(b["status"], b["requests"], b["succeeded"]) for b in manifest["batches"]] == [
        ("completed", 6, 6), ("JOB_STATE_SUCCEEDED", 6, 6)]
    done = json.loads(_cli("run", "--status", "r1", "--json", cwd=tmp_path).stdout)
    assert (done["status"], done["rows"]) == ("complete", 12)


def test_resume_and_status_name_a_missing_run_in_one_line(cli):
    for args in (("run", "--status", "nope"), ("run", "--resume", "nope", "--from", "openai:a", "--to", "openai:b")):
        out = cli(*args)
        assert out.returncode == 1 and out.stderr.startswith("error: no run 'nope' under "), out.stderr
        assert "Traceback" not in out.stderr
