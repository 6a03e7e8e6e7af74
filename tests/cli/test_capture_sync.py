"""`evalshift capture sync` on the example agent's captures, through the installed entry point:
a sync with new options re-promotes into its own suite, idempotently."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_support import REPO, run_cli

from evalshift_core.cli._demo import DEMO_SCRIPTS
from evalshift_core.simulator import Simulator, load_scripts


@pytest.fixture(scope="module")
def captures(tmp_path_factory) -> Path:
    """examples/support_agent.py captured on the demo's baseline model (32 turns, 10 multi-round)."""
    root = tmp_path_factory.mktemp("agent")
    with Simulator(load_scripts(DEMO_SCRIPTS)) as sim:
        env = {k: v for k, v in os.environ.items() if not k.startswith("EVALSHIFT_")}
        env.update(OPENAI_BASE_URL=sim.openai_base_url, OPENAI_API_KEY="sk-sim", EVALSHIFT_CAPTURE="1",
                   EVALSHIFT_CAPTURE_DIR=str(root / "captures"))
        agent = subprocess.run(
            [sys.executable, str(REPO / "examples" / "support_agent.py"), "--model", "sim-baseline", "--quiet"],
            cwd=root, env=env, capture_output=True, text=True, timeout=120,
        )
        assert agent.returncode == 0, agent.stderr
    return root / "captures"


@pytest.fixture
def project(captures, tmp_path) -> Path:
    shutil.copytree(captures, tmp_path / ".evalshift" / "captures")
    return tmp_path


def _sync(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    out = run_cli("capture", "sync", *args, cwd=project)
    assert out.returncode == 0, out.stderr
    return out


def test_sync_rounds_all_into_a_new_suite_after_a_default_sync(project):
    suites = project / ".evalshift" / "suites"
    first = _sync(project)
    assert "32 examples added, 0 unchanged" in first.stdout
    support = (suites / "support.jsonl").read_bytes()

    multi = _sync(project, "--rounds", "all", "--suite-name", "support-all")
    assert "32 examples added, 0 unchanged" in multi.stdout
    assert "suite support-all:" in multi.stdout
    rows = [json.loads(line) for line in (suites / "support-all.jsonl").read_text().splitlines()]
    assert len(rows) == 32
    assert sum(bool(r.get("tool_result_fixtures")) for r in rows) == 23  # every turn that called a tool
    written = (suites / "support-all.jsonl").read_bytes()

    again = _sync(project, "--rounds", "all", "--suite-name", "support-all", "--json")
    payload = json.loads(again.stdout)
    assert (payload["added"], payload["unchanged"]) == (0, 32)
    assert (suites / "support-all.jsonl").read_bytes() == written
    assert (suites / "support.jsonl").read_bytes() == support
    assert sorted(p.name for p in suites.iterdir()) == ["support-all.jsonl", "support.jsonl"]


def test_default_sync_says_once_how_many_examples_have_later_rounds_and_the_fix(project):
    out = _sync(project)
    warnings = [line for line in out.stderr.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        "warning: 10 examples have later rounds that --rounds first does not replay (issue_refund): "
        "run `evalshift capture sync --rounds all --suite-name NAME` to include them"]
    assert "replays round 1 only" not in out.stderr


def test_verbose_and_json_keep_the_per_example_lines(project):
    verbose = _sync(project, "--verbose", "--base", "v")
    details = [line.strip() for line in verbose.stderr.splitlines() if "replays round 1 only" in line]
    assert len(details) == 10 and all(d.endswith("later calls not replayed: round 2: issue_refund") for d in details)
    payload = json.loads(_sync(project, "--json", "--base", "j").stdout)
    assert sorted(payload["details"]) == sorted(details)
    assert len(payload["warnings"]) == 1 and payload["warnings"][0].startswith("10 examples have later rounds")
