"""Baselines for benchmarks/evaluate.py: agentevals' trajectory match and DeepEval's tool correctness.

Run by evaluate.py with the Python of a side virtualenv holding the real libraries (they pull
langchain and DeepEval's pytest plugins and telemetry, which stay out of the project's venv).
With ``--reimplemented`` it runs faithful reimplementations of their published algorithms
instead. Prints one JSON object: CPU seconds, wall seconds and mean score per baseline.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any


def openai_messages(calls: list[list[Any]]) -> list[dict[str, Any]]:
    """A trajectory as agentevals reads it: the user turn, then one assistant turn with the calls."""
    return [
        {"role": "user", "content": "replay"},
        {"role": "assistant", "content": "",
         "tool_calls": [{"function": {"name": n, "arguments": json.dumps(a)}} for n, a in calls]},
    ]


def run_real(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    from agentevals.trajectory.match import create_trajectory_match_evaluator
    from deepeval.metrics import ToolCorrectnessMetric
    from deepeval.test_case import LLMTestCase, ToolCall, ToolCallParams

    out: dict[str, Any] = {"implementation": "real"}
    # Inputs in each library's own shape, built outside the timed loop.
    trajectories = [(openai_messages(p["target"]), openai_messages(p["source"])) for p in pairs]
    evaluator = create_trajectory_match_evaluator(trajectory_match_mode="strict", tool_args_match_mode="exact")
    t0, c0 = time.perf_counter(), time.process_time()
    total = 0.0
    for outputs, reference in trajectories:
        total += float(evaluator(outputs=outputs, reference_outputs=reference)["score"])
    out["agentevals_wall_s"], out["agentevals_s"] = time.perf_counter() - t0, time.process_time() - c0
    out["agentevals_mean"] = total / len(pairs)

    cases = [LLMTestCase(input="replay", actual_output="",
                         tools_called=[ToolCall(name=n, input_parameters=a) for n, a in p["target"]],
                         expected_tools=[ToolCall(name=n, input_parameters=a) for n, a in p["expected"]])
             for p in pairs]
    metric = ToolCorrectnessMetric(evaluation_params=[ToolCallParams.INPUT_PARAMETERS], async_mode=False,
                                   include_reason=False)
    t0, c0 = time.perf_counter(), time.process_time()
    total = 0.0
    for case in cases:
        total += float(metric.measure(case, _show_indicator=False))
    out["deepeval_wall_s"], out["deepeval_s"] = time.perf_counter() - t0, time.process_time() - c0
    out["deepeval_mean"] = total / len(pairs)
    return out


def strict_trajectory_match(outputs: list[dict[str, Any]], reference: list[dict[str, Any]]) -> bool:
    """agentevals' ``strict`` mode with ``exact`` argument matching, as published."""
    if len(outputs) != len(reference):
        return False
    for out, ref in zip(outputs, reference):
        if out["role"] != ref["role"]:
            return False
        if (out.get("tool_calls") is not None) != (ref.get("tool_calls") is not None):
            return False
        if out.get("tool_calls") is not None:
            if len(out["tool_calls"]) != len(ref["tool_calls"]):
                return False
            seen = [False] * len(ref["tool_calls"])
            for oc in out["tool_calls"]:
                for i, rc in enumerate(ref["tool_calls"]):
                    if not seen[i] and oc["function"]["name"] == rc["function"]["name"] and json.loads(
                        oc["function"]["arguments"]
                    ) == json.loads(rc["function"]["arguments"]):
                        seen[i] = True
                        break
                else:
                    return False
    return True


def _compare_dicts(a: dict[str, Any], b: dict[str, Any]) -> float:
    if a == b:
        return 1.0
    matched, union = set(a) & set(b), set(a) | set(b)
    score = 0.0
    for key in matched:
        if a[key] == b[key]:
            score += 1 / len(union)
        elif isinstance(a[key], dict) and isinstance(b[key], dict):
            score += _compare_dicts(a[key], b[key]) / len(union)
    return score


def tool_correctness(called: list[list[Any]], expected: list[list[Any]]) -> float:
    """DeepEval's ToolCorrectnessMetric (non-exact, unordered, input parameters), as published."""
    total = 0.0
    used: set[int] = set()
    for en, ea in expected:
        best, best_j = 0.0, None
        for j, (cn, ca) in enumerate(called):
            if j in used or cn != en:
                continue
            s = _compare_dicts(ea, ca)
            if s > best:
                best, best_j = s, j
        if best > 0:
            total += best
            used.add(best_j)  # type: ignore[arg-type]
    if not expected and not called:
        return 1.0
    return 0.0 if not expected else total / len(expected)


def run_reimplemented(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {"implementation": "reimplemented"}
    trajectories = [(openai_messages(p["target"]), openai_messages(p["source"])) for p in pairs]
    t0, c0 = time.perf_counter(), time.process_time()
    total = sum(1.0 for o, r in trajectories if strict_trajectory_match(o, r))
    out["agentevals_wall_s"], out["agentevals_s"] = time.perf_counter() - t0, time.process_time() - c0
    out["agentevals_mean"] = total / len(pairs)
    t0, c0 = time.perf_counter(), time.process_time()
    total = sum(tool_correctness(p["target"], p["expected"]) for p in pairs)
    out["deepeval_wall_s"], out["deepeval_s"] = time.perf_counter() - t0, time.process_time() - c0
    out["deepeval_mean"] = total / len(pairs)
    return out


def main() -> None:
    if len(sys.argv) < 2:
        # `make bench` runs every script here; this one is only evaluate.py's helper.
        print("helper of benchmarks/evaluate.py (run that one); nothing to do alone")
        return
    with open(sys.argv[1], encoding="utf-8") as fh:
        pairs = json.load(fh)
    result = run_reimplemented(pairs) if "--reimplemented" in sys.argv else run_real(pairs)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
