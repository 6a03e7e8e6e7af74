"""What ``evalshift evaluate`` writes is pinned byte for byte: the demo's run (under the demo's
evaluators and under the defaults) and a seeded 10k-example run made from it. A speed change
must not move a score, a verdict or a byte of the report; a change meant to alter the outputs
updates these digests in the same commit and says why."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from _replicated_run import copy_demo_run, replicate_run

from evalshift_core._compare import evaluate_saved_run
from evalshift_core.cli._demo import DEMO_CONFIG
from evalshift_core.config._config import Config
from evalshift_core.report._report import render_run_report
from evalshift_core.store._rows import record_written

OUTPUTS = ("scores.jsonl", "analysis.json", "report.json", "report.html")


def _digests(run_dir: Path) -> dict[str, str]:
    return {name: hashlib.sha256((run_dir / name).read_bytes()).hexdigest()[:16] for name in OUTPUTS}


@pytest.mark.parametrize(("config", "expected"), [
    (DEMO_CONFIG, {
        "scores.jsonl": "076319ab4b26fe26",
        "analysis.json": "9cc8f039e197f95e",
        "report.json": "56ee01582d21aedf",
        "report.html": "ce0affa1bc4215cf",
    }),
    ({}, {
        "scores.jsonl": "e754f561505d4a13",
        "analysis.json": "b490fc1353d266df",
        "report.json": "02c6760c2dd4c20d",
        "report.html": "496fd42b884c988d",
    }),
], ids=["demo-evaluators", "default-evaluators"])
@pytest.mark.parametrize("written", [False, True], ids=["validated", "as-written"])
def test_demo_run_outputs_are_pinned(tmp_path: Path, config: dict, expected: dict[str, str], written: bool) -> None:
    """Read row by row through validation (a copied run) or straight from the bytes EvalShift
    wrote (written.json vouches for them), the outputs are the same."""
    run_id = copy_demo_run(tmp_path)
    if written:
        record_written(tmp_path / "runs" / run_id)
    done = evaluate_saved_run(run_id, config=Config.model_validate(config), base=tmp_path)
    assert done.analysis.verdict == "fail"
    assert _digests(done.run_dir) == expected
    _rerendered_report_is_the_same(tmp_path, run_id, done.run_dir)


def _rerendered_report_is_the_same(base: Path, run_id: str, run_dir: Path) -> None:
    """`evalshift report RUN` renders the very bytes evaluate wrote."""
    written = {name: (run_dir / name).read_bytes() for name in ("report.json", "report.html")}
    for name in written:
        (run_dir / name).unlink()
    render_run_report(base, run_id)
    assert {name: (run_dir / name).read_bytes() for name in written} == written


def test_seeded_10k_run_outputs_are_pinned(tmp_path: Path) -> None:
    run_id = replicate_run(tmp_path, 10_000, seed=19)
    done = evaluate_saved_run(run_id, config=Config(), base=tmp_path)
    assert len(done.calls) == 20_000
    assert _digests(done.run_dir) == {
        "scores.jsonl": "605f1ff9b444f255",
        "analysis.json": "c52717307285b775",
        "report.json": "bf1f627222c407bc",
        "report.html": "cde205a59c2d29d0",
    }
    _rerendered_report_is_the_same(tmp_path, run_id, done.run_dir)
