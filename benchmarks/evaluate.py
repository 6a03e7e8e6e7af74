"""Benchmark: 100k synthetic example pairs through the four tool evaluators, against baselines.

Times tool_selection (conformance + divergence), tool_arguments (with its input_schema check
against the toolset every example offers, and that check's own cost as a with/without ratio),
tool_trace_structure and agent_trace over the same pairs as agentevals' strict trajectory match and DeepEval's
ToolCorrectnessMetric, in the same run. Targets: <= 10 s for 100k pairs, >= 10x agentevals.

The two libraries run from a side virtualenv (``.venv/bench-baselines``, built on first use
from PyPI): agentevals pulls langchain and DeepEval installs pytest plugins and telemetry,
none of which belong in the project's own environment. If that venv cannot be built, the
baselines are faithful reimplementations of the published algorithms, and the output says so.

    .venv/bin/python benchmarks/evaluate.py [--pairs 100000] [--reimplemented] [--no-install]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BASELINE_VENV = REPO / ".venv" / "bench-baselines"
BASELINE_PACKAGES = ["agentevals==0.0.9", "deepeval==4.3.1"]

TOOLS = ["lookup_order", "issue_refund", "search_kb", "notify_security_team", "escalate", "send_email",
         "confirm_with_user", "delete_record"]
CONFIG: dict[str, Any] = {
    "tool_selection": [{"name": "routing", "conformance": "expected", "divergence": "set"}],
    "tool_arguments": [{"name": "args", "fields": {"amount_usd": "numeric"}}],
    "tool_trace_structure": [{"name": "structure"}],
    "agent_trace": [{"name": "safety", "check_missing_verification": True, "verification_tools": ["confirm_with_user"],
                     "dangerous_tools": ["delete_record", "issue_refund"]}],
}


# The toolset every example offers (one toolset_ref sidecar, as a suite promoted from captures
# has): tool_arguments checks each target call of a tool with a schema against it.
ARGUMENT_SCHEMA = {"type": "object", "properties": {
    "order_id": {"type": "string"}, "amount_usd": {"type": "number"},
    "reason": {"type": "string", "enum": ["damaged", "late", "wrong item", "changed mind"]}},
    "required": ["order_id"]}
TOOLSET = [{"name": n, "input_schema": ARGUMENT_SCHEMA} for n in TOOLS]


def arguments(rng: random.Random) -> dict[str, Any]:
    args: dict[str, Any] = {"order_id": f"A{rng.randrange(10_000)}"}
    if rng.random() < 0.6:
        args["amount_usd"] = round(rng.uniform(1, 500), 2)
    if rng.random() < 0.4:
        args["reason"] = rng.choice(["damaged", "late", "wrong item", "changed mind"])
    return args


def perturb(rng: random.Random, calls: list[list[Any]]) -> list[list[Any]]:
    """The target: mostly the source again, else one of the regressions the evaluators exist for."""
    out = [[n, dict(a)] for n, a in calls]
    r = rng.random()
    if r < 0.55 or not out:
        return out
    if r < 0.67:  # ARGUMENT_VALUE_DRIFT: a number emitted as a string
        n, a = out[rng.randrange(len(out))]
        if "amount_usd" in a:
            a["amount_usd"] = str(a["amount_usd"])
        else:
            a["order_id"] = a["order_id"].lower()
        return out
    if r < 0.77:  # TOOL_ORDER_DRIFT
        rng.shuffle(out)
        return out
    if r < 0.87:  # a call dropped
        out.pop(rng.randrange(len(out)))
        return out
    if r < 0.95:  # an extra call
        out.insert(rng.randrange(len(out) + 1), [rng.choice(TOOLS), arguments(rng)])
        return out
    return [[rng.choice(TOOLS), arguments(rng)]]  # different tool altogether


def synthetic_pairs(n: int, seed: int = 7) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        expected = [[rng.choice(TOOLS), arguments(rng)] for _ in range(rng.choice((1, 1, 2, 2, 3, 4)))]
        source = perturb(rng, expected) if rng.random() < 0.1 else [[nm, dict(a)] for nm, a in expected]
        pairs.append({"id": f"ex{i}", "expected": expected, "source": source, "target": perturb(rng, source),
                      "target_refused": rng.random() < 0.02})
    return pairs


def write_toolset(base: Path) -> str:
    """The examples' toolset sidecar under ``base``; returns its ``toolset_ref``."""
    from evalshift_core import Toolset
    from evalshift_core.store._suites import write_toolset as write

    toolset = Toolset(tools=TOOLSET)
    write(base, toolset.ref, [t.canonical() for t in toolset.tools])
    return toolset.ref


def to_models(pairs: list[dict[str, Any]], toolset_ref: str | None = None) -> tuple[list[Any], list[Any]]:
    """Validated examples and Call rows, exactly what ``evaluate_run`` gets from a run on disk."""
    from evalshift_core import Call, Example

    def row(example_id: str, role: str, calls: list[list[Any]], refusal: str | None = None) -> Any:
        trace = {"calls": [{"tool_name": n, "arguments": a, "sequence_index": i} for i, (n, a) in enumerate(calls)],
                 "refusal": refusal}
        return Call.model_validate({"example_id": example_id, "role": role, "model": f"openai:{role}", "trace": trace})

    examples, calls = [], []
    for p in pairs:
        examples.append(Example.model_validate(
            {"id": p["id"], "expected_tools": [{"tool_name": n, "arguments": a} for n, a in p["expected"]],
             "toolset_ref": toolset_ref}))
        calls.append(row(p["id"], "source", p["source"]))
        calls.append(row(p["id"], "target", p["target"], "I can't do that." if p["target_refused"] else None))
    return examples, calls


def full_collection_seconds() -> float:
    """CPU seconds of one full cyclic-GC pass over the whole heap (the median of three)."""
    times = []
    for _ in range(3):
        c0 = time.process_time()
        gc.collect()
        times.append(time.process_time() - c0)
    return sorted(times)[1]


def schema_check_ratio(examples: list[Any], calls: list[Any], base: Path, rounds: int = 3) -> tuple[float, float, int]:
    """tool_arguments' CPU seconds with the toolsets resolved (every target call checked against
    its schema) and without (no toolset: no check), alternating, the median of each; and how many
    records carried ARGUMENT_SCHEMA_VIOLATION."""
    from evalshift_core.evaluators import build_evaluators, evaluate_run

    [ev] = build_evaluators({"tool_arguments": CONFIG["tool_arguments"]})
    with_check, without, labelled = [], [], 0
    for _ in range(rounds):
        for on in (True, False):
            gc.collect()
            c0 = time.process_time()
            records = evaluate_run(examples, calls, [ev], progress=False, base=base if on else None)
            gc.collect(1)
            (with_check if on else without).append(time.process_time() - c0)
            if on:
                labelled = sum("ARGUMENT_SCHEMA_VIOLATION" in r.labels for r in records)
            del records
    return sorted(with_check)[rounds // 2], sorted(without)[rounds // 2], labelled


def run_ours(examples: list[Any], calls: list[Any], base: Path | None = None
             ) -> tuple[float, float, dict[str, float], float, tuple[float, int]]:
    """``evaluate_run`` over every pair: CPU seconds, wall seconds, CPU seconds per evaluator alone,
    what the kept records add to each later full collection, and the run's system seconds and
    page faults (first touches of fresh memory, charged by the kernel)."""
    from evalshift_core.evaluators import build_evaluators, evaluate_run

    evaluators = build_evaluators(CONFIG)
    per_evaluator = {}
    # evaluate_run pauses the cyclic GC while it scores; the young-generation passes owed over
    # the records it returns are charged to it here (gc.collect(1)), so the figure is the run's
    # whole cost. An evaluator's figure alone also includes freeing its records (the result is
    # dropped inside the timed window).
    for ev in evaluators:
        gc.collect()
        c0 = time.process_time()
        evaluate_run(examples, calls, [ev], progress=False, base=base)
        gc.collect(1)
        per_evaluator[ev.type_name] = time.process_time() - c0
    gc.collect()
    heap_without = full_collection_seconds()
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0, c0 = time.perf_counter(), time.process_time()
    records = evaluate_run(examples, calls, evaluators, progress=False, base=base)
    gc.collect(1)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    kernel = (r1.ru_stime - r0.ru_stime, r1.ru_minflt - r0.ru_minflt)
    assert len(records) == 5 * len(examples)  # tool_selection has two sides
    # Not part of the run: every full collection a long-lived program makes while it holds the
    # records traverses them (as it would any data the program keeps).
    full_pass = full_collection_seconds() - heap_without
    return cpu, wall, per_evaluator, full_pass, kernel


def baseline_python(install: bool) -> Path | None:
    python = BASELINE_VENV / "bin" / "python"
    if python.exists():
        return python
    if not install:
        return None
    print(f"building {BASELINE_VENV} with {' '.join(BASELINE_PACKAGES)} (first run only) ...", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(BASELINE_VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *BASELINE_PACKAGES], check=True, timeout=900,
                       capture_output=True)
    except (subprocess.SubprocessError, OSError) as exc:
        print(f"could not build the baseline venv ({exc}); using reimplementations", flush=True)
        return None
    return python


def run_baselines(pairs: list[dict[str, Any]], *, reimplemented: bool, install: bool) -> dict[str, Any]:
    python = None if reimplemented else baseline_python(install)
    script = Path(__file__).with_name("_evaluate_baselines.py")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump(pairs, fh)
        path = fh.name
    try:
        if python is None:
            cmd = [sys.executable, str(script), path, "--reimplemented"]
        else:
            cmd = [str(python), str(script), path]
        env = dict(os.environ, DEEPEVAL_TELEMETRY_OPT_OUT="YES", LANGSMITH_TRACING="false",
                   OPENAI_API_KEY=os.environ.get("OPENAI_API_KEY", "sk-bench-unused"))
        out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
        return json.loads(out.stdout.strip().splitlines()[-1])
    finally:
        os.unlink(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--reimplemented", action="store_true", help="baselines as reimplementations, not the libraries")
    parser.add_argument("--no-install", action="store_true", help="never build the baseline venv")
    args = parser.parse_args()

    pairs = synthetic_pairs(args.pairs)
    toolsets = Path(tempfile.mkdtemp(prefix="evalshift-bench-"))
    t0 = time.perf_counter()
    examples, calls = to_models(pairs, write_toolset(toolsets))
    print(f"{args.pairs} synthetic pairs (validated into models in {time.perf_counter() - t0:.1f} s, not timed below)")
    ours, ours_wall, per_evaluator, full_pass, (system, faults) = run_ours(examples, calls, toolsets)
    # CPU time is the figure compared: colleagues' test runs share these two cores, and wall
    # time then measures them as much as us. Wall time is printed beside it.
    for name, seconds in per_evaluator.items():
        print(f"  {name:22s} alone {seconds:6.2f} s CPU  {seconds / args.pairs * 1e6:6.1f} us/pair")
    print(f"evaluate_run, all four       {ours:6.2f} s CPU  {ours / args.pairs * 1e6:6.1f} us/pair  "
          f"(wall {ours_wall:.2f} s; target <= 10 s per 100k)")
    # The records a run keeps are fresh memory: on a virtual machine a first touch can cost
    # microseconds, and that cost moves with the host. Shown so a slow run can be told apart.
    print(f"  of which system time {system / args.pairs * 1e6:.1f} us/pair "
          f"({faults / args.pairs:.2f} page faults/pair, {system / max(faults, 1) * 1e6:.1f} us each)")
    print(f"  (not in the run: each later full GC pass traverses the kept records, "
          f"+{full_pass / args.pairs * 1e6:.1f} us/pair per pass)")

    checked, unchecked, labelled = schema_check_ratio(examples, calls, toolsets)
    print(f"tool_arguments with the schema check {checked:6.2f} s CPU, without {unchecked:6.2f} s "
          f"(alternating, medians of 3): ratio {checked / unchecked:.2f}x; "
          f"{labelled} records carry ARGUMENT_SCHEMA_VIOLATION")
    shutil.rmtree(toolsets, ignore_errors=True)

    base = run_baselines(pairs, reimplemented=args.reimplemented, install=not args.no_install)
    kind = "the real libraries" if base["implementation"] == "real" else "REIMPLEMENTATIONS of the published algorithms"
    print(f"baselines on the same pairs, same run ({kind}):")
    for key, label in (("agentevals", "agentevals strict trajectory match"), ("deepeval", "DeepEval ToolCorrectnessMetric")):
        seconds = base[f"{key}_s"]
        print(f"  {label:36s} {seconds:7.2f} s CPU  {seconds / args.pairs * 1e6:7.1f} us/pair  "
              f"(wall {base[f'{key}_wall_s']:.2f} s)  mean score {base[f'{key}_mean']:.3f}  "
              f"ratio baseline / our four {seconds / ours:5.1f}x")
    print("each evaluator alone against agentevals (one boolean per pair; ours are scored records with detail):")
    print("  " + "  ".join(f"{name} {base['agentevals_s'] / seconds:.1f}x" for name, seconds in per_evaluator.items()))
    ok_time = ours * 100_000 / args.pairs <= 10.0
    ok_ratio = base["agentevals_s"] / ours >= 10.0
    print(f"target <= 10 s per 100k: {'met' if ok_time else 'MISSED'}; >= 10x agentevals: {'met' if ok_ratio else 'MISSED'}")


if __name__ == "__main__":
    main()
