"""Validity of the verdict through the whole pipeline: record, replay, evaluate, analyse.

Each seeded suite is recorded from the noisy support world's baseline model (``record_example``:
what ``capture sync`` promotes from a capture), replayed teacher-forced through the official
openai client against the simulator, scored by all four tool evaluators in drift and conformance
modes, and analysed. Two runs of one model differ there as real agents do (lookups, call order,
free-text arguments, number spelling, skipped optional steps, answer wording).

- A/A: the baseline model on both sides. The share of suites with a FAIL verdict is the false-fail
  rate (bound: 5%).
- Power: the candidate that skips ``notify_security_team`` on half the security tickets (10% of
  the examples). The share of suites with a FAIL verdict whose reasons name
  ``notify_security_team`` (bound: 80%).

Each is measured twice: calibrated by the examples' recordings (promoted suites), and by
``source_repeats: 2`` on the same suites with the recordings removed (hand-written ground truth).
The baseline printed beside each figure is the same suites through the analysis as it was before
calibration: drift comparisons pinned at 1.0 and no test of each tool's call rate.

    .venv/bin/python benchmarks/validity.py [--suites 200] [--examples 200] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from evalshift_core import Example, analyze, evaluate_run, run  # noqa: E402
from evalshift_core.analysis._tool_use import tool_use  # noqa: E402
from evalshift_core.evaluators import build_evaluators  # noqa: E402
from evalshift_core.simulator import Simulator, load_scripts  # noqa: E402
from evalshift_core.simulator._recorder import record_example  # noqa: E402
from evalshift_core.simulator._worlds import SUPPORT_SCRIPTS, SUPPORT_TOOLS, tickets, tool_result  # noqa: E402

CONFIG: dict[str, Any] = {
    "tool_selection": [{"name": "routing", "conformance": "expected", "divergence": "set"}],
    "tool_arguments": [{"name": "args"}, {"name": "args_expected", "against": "expected"}],
    "tool_trace_structure": [{"name": "structure"}],
    "agent_trace": [{"name": "safety", "check_missing_verification": True, "verification_tools": ["confirm_with_user"],
                     "dangerous_tools": ["issue_refund", "delete_record"]}],
}
"""All four tool evaluators, in drift (target against source) and conformance (against ground truth) modes."""
SOURCE = "openai:support-baseline"
REGRESSION = "openai:support-candidate"
SKIPPED_TOOL = "notify_security_team"


@dataclass(frozen=True)
class Verdict:
    """One suite's outcome."""

    verdict: str
    names_tool: bool
    """The reasons name the tool the candidate stopped calling."""
    uncalibrated_verdict: str
    """The verdict of the same scores with every drift comparison pinned at 1.0 (before calibration)."""


def record_suite(sim: Simulator, n: int, seed: int) -> list[Example]:
    """``n`` seeded tickets recorded on the baseline model, promoted with every round replayable."""
    return [
        record_example(sim, SOURCE.split(":", 1)[1], t.text, example_id=f"s{seed}-t{i:04d}", tools=SUPPORT_TOOLS,
                       run_tool=tool_result, rounds="all", tags=[t.kind])
        for i, t in enumerate(tickets(n, seed=seed))
    ]


def hand_written(examples: list[Example]) -> list[Example]:
    """The same examples as a hand-written suite: ground truth but no recording to calibrate with."""
    return [e.model_copy(update={"recording": None, "promotion_source": None}) for e in examples]


def pinned(scores: list[Any]) -> list[Any]:
    """Scores as before calibration: a drift record keeps its target-vs-source score, source at 1.0."""
    out = []
    for r in scores:
        baseline = r.metadata.get("baseline")
        if isinstance(baseline, dict) and baseline.get("kind") != "none":
            r = r.model_copy(update={"source_score": 1.0, "metadata": {**r.metadata, "baseline": None}})
        out.append(r)
    return out


def suite_verdict(seed: int, n: int, target: str, baseline: str) -> Verdict:
    """Record a suite, replay it on the source and ``target``, evaluate and analyse it."""
    with Simulator(load_scripts(SUPPORT_SCRIPTS, noise_seed=seed)) as sim, tempfile.TemporaryDirectory() as base:
        examples = record_suite(sim, n, seed)
        repeats = 1
        if baseline == "source_repeats":
            examples, repeats = hand_written(examples), 2
        # One request at a time: the simulator hands out its noise samples in arrival order, so a
        # seeded suite is only reproducible when source and target requests never race.
        result = run(examples, source=SOURCE, target=target, base=base, progress=False, use_cache=False,
                     concurrency=1, source_repeats=repeats,
                     providers={"openai": {"base_url": sim.openai_base_url, "api_key": "sk-sim"}})
    scores = evaluate_run(examples, result.calls, CONFIG, progress=False)
    floors = {(ev.type_name, ev.name): ev.severity_floor for ev in build_evaluators(CONFIG)}
    analysis = analyze(scores, examples=examples, severity_floors=floors, n_resamples=200,
                       tool_use=tool_use(examples, result.calls))
    # before calibration: drift pinned at 1.0, and no test of each tool's call rate
    before = analyze(pinned(scores), examples=examples, severity_floors=floors, n_resamples=200)
    return Verdict(verdict=analysis.verdict, names_tool=any(SKIPPED_TOOL in r for r in analysis.reasons),
                   uncalibrated_verdict=before.verdict)


def _job(args: tuple[int, int, str, str]) -> Verdict:
    return suite_verdict(*args)


def measure(suites: int, n: int, target: str, baseline: str, workers: int, first_seed: int) -> list[Verdict]:
    jobs = [(first_seed + k, n, target, baseline) for k in range(suites)]
    if workers <= 1:
        return [_job(j) for j in jobs]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(_job, jobs, chunksize=4))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", type=int, default=200)
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--workers", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--baseline", choices=["recording", "source_repeats"], action="append",
                        help="Measure only with this A/A baseline (repeatable; default: both).")
    args = parser.parse_args()
    print(f"{args.suites} seeded suites of {args.examples} examples each, every round replayed; "
          f"evaluators: {', '.join(CONFIG)} (drift and conformance)")
    for baseline in args.baseline or ("recording", "source_repeats"):
        for label, target, first_seed in (("A/A false-fail rate", SOURCE, 1_000), ("power", REGRESSION, 2_000)):
            t0 = time.perf_counter()
            verdicts = measure(args.suites, args.examples, target, baseline, args.workers, first_seed)
            took = time.perf_counter() - t0
            failed = sum(v.verdict == "fail" for v in verdicts)
            before = sum(v.uncalibrated_verdict == "fail" for v in verdicts)
            if target == SOURCE:
                figure = f"{failed / len(verdicts):.1%} FAIL (bound <= 5%)"
            else:
                named = sum(v.verdict == "fail" and v.names_tool for v in verdicts)
                figure = f"{named / len(verdicts):.1%} FAIL naming {SKIPPED_TOOL} (bound >= 80%; {failed} FAIL in all)"
            print(f"{label:>20} [{baseline:>14}]: {figure}; pinned at 1.0 (uncalibrated): "
                  f"{before / len(verdicts):.1%} FAIL; ratio {failed / max(before, 1):.2f}  [{took:.0f} s]")


if __name__ == "__main__":
    main()
