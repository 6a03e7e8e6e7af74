"""Validity and speed of the analysis layer: A/A false-fail rate, power against a 10-point drop.

Prints both rates (500 seeded suites of 200 examples each), the power under weaker and no
example-level correlation for comparison, and the cost of ``analyze`` against its baselines
measured in the same run: parsing the same rows from ``scores.jsonl`` lines, and orjson parsing
the files of a 100k-example run made from the demo's (``tests/core/_replicated_run.py``).
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "core" / "analysis"))  # _validity: the simulation the tests share
sys.path.insert(0, str(REPO / "tests" / "core"))  # _replicated_run: a run of any size from the demo's

from _validity import (  # noqa: E402
    failing_verdicts,
    simulate_argument_scores,
    simulate_tool_selection,
)

from evalshift_core.analysis import analyze  # noqa: E402
from evalshift_core.evaluators import ScoreRecord  # noqa: E402

SUITES, EXAMPLES = 500, 200
CONFORMANCE = ("tool_selection", "routing", "conformance")


def main() -> None:
    rng = np.random.default_rng(20261130)
    t0 = time.perf_counter()
    aa = failing_verdicts({
        CONFORMANCE: simulate_tool_selection(n_suites=SUITES, n_examples=EXAMPLES, rng=rng),
        ("tool_arguments", "args", None): simulate_argument_scores(n_suites=SUITES, n_examples=EXAMPLES, rng=rng),
    })
    print(f"A/A false-fail rate: {aa.failing_rate:.1%} of {SUITES} suites (bound 5%)  [{time.perf_counter() - t0:.1f} s]")
    for concentration, note in ((0.5, "A/A churn 9%"), (1.0, "A/A churn 13%, the test's model"),
                                (2.0, "A/A churn 17%"), (5.0, "A/A churn 20%"), (1e6, "independent outcomes")):
        rng = np.random.default_rng(20261201)
        src, tgt = simulate_tool_selection(n_suites=SUITES, n_examples=EXAMPLES, drop=0.10,
                                           concentration=concentration, rng=rng)
        t0 = time.perf_counter()
        power = failing_verdicts({CONFORMANCE: (src, tgt)})
        print(f"10-point drop caught: {power.failing_rate:.1%} (concentration {concentration:g}, {note})"
              f"  [{time.perf_counter() - t0:.1f} s]")

    speed_on_simulated_rows()
    speed_on_a_100k_run()


def _best_cpu_time(fn: Callable[[], object], repeat: int = 3) -> float:
    """The least CPU time of ``repeat`` calls: the figure least moved by whatever else the machine runs."""
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def speed_on_simulated_rows() -> None:
    """analyze over a 10,000-example suite with three comparisons vs parsing its rows: CPU time,
    best of three."""
    rng = np.random.default_rng(1)
    n = 10_000
    src, tgt = simulate_tool_selection(n_suites=1, n_examples=n, drop=0.02, rng=rng)
    asrc, atgt = simulate_argument_scores(n_suites=1, n_examples=n, rng=rng)
    rows = []
    for i in range(n):
        rows.append({"example_id": f"ex{i}", "evaluator": "tool_selection", "name": "routing", "side": "conformance",
                     "source_score": src[0, i], "target_score": tgt[0, i], "skipped": False, "labels": [],
                     "metadata": {"mode": "expected", "expected": ["a"], "source": ["a"], "target": ["a"]}})
        rows.append({**rows[-1], "side": "divergence", "metadata": {"mode": "set", "source": ["a"], "target": ["a"]}})
        rows.append({"example_id": f"ex{i}", "evaluator": "tool_arguments", "name": "args", "side": None,
                     "source_score": asrc[0, i], "target_score": atgt[0, i], "skipped": False, "labels": [],
                     "metadata": {"fields": []}})
    lines = [json.dumps(r) for r in rows]
    records = [ScoreRecord.model_validate_json(line) for line in lines]
    baseline = _best_cpu_time(lambda: [ScoreRecord.model_validate_json(line) for line in lines])
    took = _best_cpu_time(lambda: analyze(records))
    print(f"analyze, {len(records)} rows: {took * 1000:.0f} ms CPU; parsing them from JSON lines: "
          f"{baseline * 1000:.0f} ms; ratio {took / baseline:.2f}x")


def speed_on_a_100k_run() -> None:
    """analyze on the scores of a 100k-example run made from the demo's (about 31k regressions)
    vs orjson parsing that run's files (examples.jsonl, raw.jsonl): CPU time, best of three."""
    import orjson
    from _replicated_run import replicate_run

    from evalshift_core.analysis._tool_use import tool_use
    from evalshift_core.evaluators import evaluate_run
    from evalshift_core.store._runs import load_run

    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        run_dir = base / "runs" / replicate_run(base, 100_000, seed=1)
        _, examples, calls = load_run(base, run_dir.name)
        scores = evaluate_run(examples, calls, base=base, progress=False)
        counts = tool_use(examples, calls).as_dict()
        files = [(run_dir / name).read_bytes() for name in ("examples.jsonl", "raw.jsonl")]

    def parse() -> None:
        for data in files:
            for line in data.splitlines():
                orjson.loads(line)

    baseline = _best_cpu_time(parse)
    took = _best_cpu_time(lambda: analyze(scores, examples=examples, tool_use=counts))
    print(f"analyze, 100k-example run ({len(scores)} rows): {took:.2f} s CPU; orjson parsing the run's files: "
          f"{baseline:.2f} s; ratio {took / baseline:.2f}x")


if __name__ == "__main__":
    main()
