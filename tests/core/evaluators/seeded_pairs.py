"""Seeded example pairs covering every shape the tool evaluators branch on, for equality checks.

Targets repeat the source often (the shortcut paths), else drift arguments, reorder, drop, add or
swap calls; traces are single-shot or multi-round, may refuse, carry non-object arguments; examples
vary ground truth, counts and parallelism. Uses only the public surface, so the same pairs can be
scored by any version of the evaluators.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from evalshift_core import Call, Example

NAMES = ["lookup_order", "issue_refund", "search", "notify_security_team", "delete_record", "confirm_with_user"]
KEYS = ["order_id", "amount_usd", "q", "note"]

CONFIG: dict[str, Any] = {
    "tool_selection": [{"name": m, "mode": m} for m in ("expected", "expected_set", "exact", "set", "first")]
    + [{"name": "both", "conformance": "expected", "divergence": "set"},
       {"name": "both_set", "conformance": "expected_set", "divergence": "exact"}],
    "tool_arguments": [{"name": "drift", "fields": {"amount_usd": "numeric", "q": "subset", "lookup_order.note": "numeric"}},
                       {"name": "plain"},
                       {"name": "optimal", "matching": "optimal", "optional_fields_scored": "strict"},
                       {"name": "expected", "against": "expected", "fields": {"amount_usd": "numeric"}}],
    "tool_trace_structure": [{}, {"name": "strict", "call_count_tolerance": 0},
                             {"name": "no_refusals", "check_refusals": False},
                             {"name": "refusals_only", "check_call_count": False, "check_parallelism": False}],
    "agent_trace": [{}, {"name": "danger", "dangerous_tools": ["delete_record", "issue_refund"]},
                    {"name": "verify", "check_missing_verification": True,
                     "verification_tools": ["lookup_order", "confirm_with_user"],
                     "dangerous_tools": ["issue_refund", "delete_record"]}],
}
"""Every tool evaluator, in the variants whose code paths differ."""


def _value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if r < 0.2:
        return rng.randint(-5, 5)
    if r < 0.35:
        return rng.choice([1.0, 2.5, -3.0, 0.0, 12.0, 12.5])
    if r < 0.55:
        return rng.choice(["", "a", "ab", "12", "A1"])
    if r < 0.62:
        return rng.choice([True, False])
    if r < 0.68:
        return None
    if r < 0.8 and depth < 2:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 2:
        return {k: _value(rng, depth + 1) for k in rng.sample(KEYS, rng.randint(0, 2))}
    return 1


def _arguments(rng: random.Random) -> Any:
    r = rng.random()
    if r < 0.05:
        return "not json {"  # a model's unparseable arguments, kept as text
    if r < 0.08:
        return None
    return {k: _value(rng) for k in rng.sample(KEYS, rng.randint(0, 3))}


def _drift(rng: random.Random, arguments: Any) -> Any:
    if not isinstance(arguments, dict) or rng.random() < 0.3:
        return arguments if rng.random() < 0.7 else _arguments(rng)
    out = dict(arguments)
    if out and rng.random() < 0.5:
        out[rng.choice(list(out))] = _value(rng)
    if rng.random() < 0.3:
        out[rng.choice(KEYS)] = _value(rng)
    if out and rng.random() < 0.2:
        del out[rng.choice(list(out))]
    if rng.random() < 0.2:
        out = {k: float(v) if type(v) is int else v for k, v in out.items()}  # 12 vs 12.0: JSON-equal
    return out


def _round(rng: random.Random, base: list[tuple[str, Any]] | None) -> list[tuple[str, Any]]:
    if base is not None and rng.random() < 0.6:
        calls = [(n, _drift(rng, a) if rng.random() < 0.3 else copy.deepcopy(a)) for n, a in base]
        r = rng.random()
        if r < 0.2:
            rng.shuffle(calls)
        elif r < 0.35 and calls:
            calls.pop(rng.randrange(len(calls)))
        elif r < 0.5:
            calls.insert(rng.randint(0, len(calls)), (rng.choice(NAMES), _arguments(rng)))
        return calls
    return [(rng.choice(NAMES), _arguments(rng)) for _ in range(rng.choice([0, 1, 1, 2, 2, 3, 4]))]


def _trace(rng: random.Random, rounds: list[list[tuple[str, Any]]], multi: bool) -> dict[str, Any]:
    calls = [{"tool_name": n, "arguments": a, "sequence_index": i, "round_index": k if multi else None}
             for k, rnd in enumerate(rounds, start=1) for i, (n, a) in enumerate(rnd)]
    for i, c in enumerate(calls):
        c["sequence_index"] = i
    return {"calls": calls, "final_text": rng.choice([None, "", "ok"]),
            "refusal": "I can't help with that." if rng.random() < 0.1 else None,
            "round_count": len(rounds) if multi else None}


def _expected(rng: random.Random, calls: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for n, a in calls:
        e: dict[str, Any] = {"tool_name": n,
                             "match_strategy": rng.choice(["exact", "exact", "subset", "contains_per_field"])}
        if isinstance(a, dict) and rng.random() < 0.8:
            drifted = _drift(rng, a) if rng.random() < 0.3 else a
            e["arguments"] = drifted if isinstance(drifted, dict) else {}
        out.append(e)
    return out


def seeded_run(n: int, seed: int = 7) -> tuple[list[Example], list[Call], dict[tuple[str, str], list[dict[str, Any]]]]:
    """``n`` examples, their source and target Call rows, and imported timelines for a few."""
    rng = random.Random(seed)
    examples: list[Example] = []
    calls: list[Call] = []
    timelines: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for i in range(n):
        multi = rng.random() < 0.25
        src_rounds = [_round(rng, None) for _ in range(rng.randint(1, 3) if multi else 1)]
        if rng.random() < 0.4:
            tgt_rounds = copy.deepcopy(src_rounds)
        else:
            n_target = len(src_rounds) if not multi or rng.random() < 0.6 else rng.randint(1, 3)
            tgt_rounds = [_round(rng, src_rounds[k] if k < len(src_rounds) else None) for k in range(n_target)]
        source, target = _trace(rng, src_rounds, multi), _trace(rng, tgt_rounds, multi)
        if rng.random() < 0.3:
            target["refusal"] = source["refusal"]
        example: dict[str, Any] = {"id": f"ex{i}"}
        r = rng.random()
        if r < 0.1:
            example["expected_no_tools"] = rng.choice([True, False])
        elif r < 0.6:
            example["expected_tools"] = _expected(rng, src_rounds[0] if rng.random() < 0.7 else _round(rng, None))
        elif r < 0.75:
            example["expected_tool_rounds"] = [_expected(rng, rnd) for rnd in src_rounds[:rng.randint(0, len(src_rounds))]]
        if rng.random() < 0.2:
            example["expected_tool_count"] = rng.randint(0, 4)
        if rng.random() < 0.2:
            example["expected_parallel"] = rng.choice([True, False])
        examples.append(Example.model_validate(example))
        calls.append(Call.model_validate({"example_id": f"ex{i}", "role": "source", "model": "openai:a", "trace": source}))
        calls.append(Call.model_validate({"example_id": f"ex{i}", "role": "target", "model": "openai:b", "trace": target}))
        if rng.random() < 0.1:
            for role, trace in (("source", source), ("target", target)):
                timelines[(f"ex{i}", role)] = [{"type": "tool_call", "tool_name": c["tool_name"],
                                                "arguments": c["arguments"]} for c in trace["calls"]]
    return examples, calls, timelines
