"""Benchmark: `evalshift evaluate RUN` and `evalshift report RUN` end to end on a 100k-example run,
against orjson merely parsing that run's examples.jsonl and raw.jsonl, in the same sitting.

The run is the demo's, replicated (tests/core/_replicated_run.py: each example drawn at random,
seeded, with its own id and cluster; written.json notes its files as a finished replay does).
Each command runs as its own process, as a user runs it: wall time from start to exit, and the
peak RSS of the largest process (os.wait4; the forked half of a parallel evaluate counts on its
own, the pages it shares with its parent not added twice). The parse baseline is timed with the
cyclic garbage collector off (the parse alone; with it on, its passes over the growing lists
cost ~3x more) and is printed both ways. `--examples N` changes the size, `--rounds K` the
repeats (medians, the lines interleaved).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "core"))

from _replicated_run import replicate_run  # noqa: E402

SERIAL = "import evalshift_core._parallel as e; e.PARALLEL_MIN_EXAMPLES = 10**12; "


PARSE = """
import gc, sys, time, orjson
if sys.argv[2] == "off":
    gc.disable()
start = time.perf_counter()
rows = []
for name in ("examples.jsonl", "raw.jsonl"):
    with open(sys.argv[1] + "/" + name, "rb") as fh:
        rows.append([orjson.loads(line) for line in fh])
print(time.perf_counter() - start)
"""


def parse(run_dir: Path, *, collect: bool) -> float:
    """Seconds orjson takes to parse both files line by line into lists (in a process of its own,
    so this one stays small: a child started from a large process inherits its peak RSS)."""
    out = subprocess.run([sys.executable, "-c", PARSE, str(run_dir), "on" if collect else "off"],
                         capture_output=True, text=True, check=True)
    return float(out.stdout)


def command(args: list[str], *, prelude: str = "") -> tuple[float, float]:
    """(wall seconds, peak RSS MiB) of one `evalshift` command in its own process."""
    code = f"{prelude}from evalshift_core.cli import main; main()"
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    took = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in (0, 2):  # 2: the verdict is FAIL, as the demo's is
        raise SystemExit(f"{args} exited {proc.returncode}")
    return took, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        run_id = replicate_run(base, opts.examples, seed=1)
        run_dir = base / "runs" / run_id
        size = sum((run_dir / n).stat().st_size for n in ("examples.jsonl", "raw.jsonl")) / 2**20
        print(f"{opts.examples:,} examples, {2 * opts.examples:,} Call rows ({size:.0f} MiB), "
              f"{os.cpu_count()} cores, {opts.rounds} rounds (medians)")
        evaluate = ["evaluate", run_id, "--base", str(base)]
        runs: dict[str, list[tuple[float, float]]] = {}
        for _ in range(opts.rounds):  # interleaved, so a noisy neighbour hits every line alike
            runs.setdefault("parse", []).append((parse(run_dir, collect=False), 0.0))
            runs.setdefault("parse, gc on", []).append((parse(run_dir, collect=True), 0.0))
            runs.setdefault("evaluate", []).append(command(evaluate))
            runs.setdefault("evaluate, one process", []).append(command(evaluate, prelude=SERIAL))
            runs.setdefault("report", []).append(command(["report", run_id, "--base", str(base)]))
        med = {k: (statistics.median(t for t, _ in v), max(m for _, m in v)) for k, v in runs.items()}
        baseline = med["parse"][0]
        for name, (took, rss) in med.items():
            memory = f"   peak RSS {rss:,.0f} MiB" if rss else ""
            print(f"{name:24} {took:7.2f} s   {took / baseline:5.2f}x the parse{memory}")
        one, two = med["evaluate, one process"][0], med["evaluate"][0]
        print(f"two processes against one: {one / two:.2f}x faster")


if __name__ == "__main__":
    main()
