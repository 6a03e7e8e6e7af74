"""The walking skeleton end to end on the simulator: capture, sync, compare, report."""

from __future__ import annotations

import json
import subprocess
import sys

from evalshift_core import Config, compare, load_suite, sync
from evalshift_core._compare import evaluate_saved_run
from evalshift_core.cli._demo import DEMO_CONFIG, find_example_agent
from evalshift_core.store._rows import written_intact


def _capture_agent(sim, capture_dir):
    env = {
        "PATH": "/usr/bin:/bin",
        "EVALSHIFT_CAPTURE": "1",
        "EVALSHIFT_CAPTURE_DIR": str(capture_dir),
        "OPENAI_BASE_URL": sim.openai_base_url,
        "OPENAI_API_KEY": "sk-test",
    }
    subprocess.run([sys.executable, str(find_example_agent()), "--quiet"], env=env, check=True)


def test_capture_sync_compare_reports_the_security_regression(demo_simulator, tmp_path):
    captures = tmp_path / "captures"
    base = tmp_path / ".evalshift"
    _capture_agent(demo_simulator, captures)
    result = sync(captures, base=base, suite_name="support")
    examples = load_suite(result.suites["support"])
    assert len(examples) >= 30
    security = [e for e in examples if "security" in e.tags]
    assert security and all([c.tool_name for c in e.expected_tools] == ["notify_security_team"] for e in security)
    assert all(e.promotion_source == "requested" for e in examples)
    assert any(e.expected_no_tools for e in examples)

    cmp = compare("support", source="openai:sim-baseline", target="openai:sim-candidate", config=DEMO_CONFIG,
                  out_dir=base, providers={"openai": {"base_url": demo_simulator.openai_base_url, "api_key": "k"}})
    assert cmp.verdict == "fail"
    analysis = json.loads((cmp.run_dir / "analysis.json").read_text())
    assert analysis["verdict"] == "fail"
    assert analysis["labels"]["TOOL_SELECTION_DRIFT"]["by_tool"]["notify_security_team"] >= len(security)
    assert cmp.report_path.exists() and "notify_security_team" in cmp.report_path.read_text()

    # the replay vouched for its rows, so evaluating the saved run reads them as written, to the byte
    assert written_intact(cmp.run_dir)
    written = {name: (cmp.run_dir / name).read_bytes() for name in ("scores.jsonl", "analysis.json", "report.json")}
    again = evaluate_saved_run(cmp.run_id, config=Config.model_validate(DEMO_CONFIG), base=base)
    assert {name: (again.run_dir / name).read_bytes() for name in written} == written


def test_second_sync_is_a_no_op(demo_simulator, tmp_path):
    captures = tmp_path / "captures"
    base = tmp_path / ".evalshift"
    _capture_agent(demo_simulator, captures)
    first = sync(captures, base=base, suite_name="s")
    before = first.suites["s"].read_bytes()
    second = sync(captures, base=base, suite_name="s")
    assert second.added == 0 and second.unchanged == first.added
    assert second.suites["s"].read_bytes() == before


def test_same_model_on_both_sides_passes(demo_simulator, tmp_path):
    captures = tmp_path / "captures"
    base = tmp_path / ".evalshift"
    _capture_agent(demo_simulator, captures)
    sync(captures, base=base, suite_name="s")
    cmp = compare("s", source="openai:sim-baseline", target="openai:sim-baseline", config=DEMO_CONFIG, out_dir=base,
                  providers={"openai": {"base_url": demo_simulator.openai_base_url, "api_key": "k"}})
    assert cmp.verdict == "pass"
    assert cmp.regressions == []
