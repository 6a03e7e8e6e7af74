"""``tool_trace_structure``: the shape of the loop (seed 000, "tool_trace_structure").

Call-count drift within ``call_count_tolerance``, parallelism match, ``expected_tool_count`` and
``expected_parallel`` when set, and refusal alignment; each check toggles off via ``check_*``.
"""

from __future__ import annotations

from typing import Any

from ._base import (
    Pair,
    ScoreRecord,
    ToolEvaluator,
    call_names,
    is_number,
    new_record,
    replayed_rounds,
    round_calls,
    surplus,
)

REFUSAL_MIN_SEVERITY = "high"
"""Seed 000: a refusal mismatch forces severity to at least ``high``."""


class ToolTraceStructure(ToolEvaluator):
    """Call count, parallelism and refusal alignment of the target against the source."""

    type_name = "tool_trace_structure"
    options = frozenset({"call_count_tolerance", "check_call_count", "check_parallelism", "check_refusals"})

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        tolerance = config.get("call_count_tolerance", 1)
        if not is_number(tolerance) or tolerance < 0:
            raise ValueError(f"call_count_tolerance must be a number >= 0, not {tolerance!r}")
        self.call_count_tolerance = tolerance
        self.check_call_count = bool(config.get("check_call_count", True))
        self.check_parallelism = bool(config.get("check_parallelism", True))
        self.check_refusals = bool(config.get("check_refusals", True))
        if not (self.check_call_count or self.check_parallelism or self.check_refusals):
            raise ValueError("every check is off: enable one of check_call_count, check_parallelism, check_refusals")
        # The parts a single-shot pair with aligned refusals is scored on (each 1.0 unless it failed).
        self._plain_parts = self.check_call_count + self.check_parallelism + self.check_refusals

    def compares_to_source(self, side: str | None) -> bool:
        return True


    def score_pair(self, pair: Pair) -> list[ScoreRecord]:
        example = pair.example
        if (pair.single_shot and (pair.source.refusal is None) == (pair.target.refusal is None)
                and example.expected_tool_count is None and example.expected_parallel is None):
            return [self._score_plain(pair)]
        return self._score_general(pair)

    def _score_general(self, pair: Pair) -> list[ScoreRecord]:
        """Round by round on the plain traces: what ``_score_plain`` shortcuts (tests compare)."""
        example, source, target = pair.example, pair.source, pair.target
        rounds = replayed_rounds(source, target)
        refusal_mismatch = self.check_refusals and source.refused != target.refused
        tol = self.call_count_tolerance
        per_round: list[dict[str, Any]] = []
        labels: list[str] = []
        tools: list[str] = []
        for k in rounds or (1,):
            src, tgt = round_calls(source, k), round_calls(target, k)
            ns, nt = len(src), len(tgt)
            s_parts: list[float] = []
            t_parts: list[float] = []
            failed: list[str] = []
            if self.check_call_count:
                s_parts.append(1.0)
                ok = abs(nt - ns) <= tol
                t_parts.append(1.0 if ok else 0.0)
                if not ok:
                    failed.append("call_count")
                if k == 1 and example.expected_tool_count is not None:
                    exp = example.expected_tool_count
                    s_parts.append(1.0 if abs(ns - exp) <= tol else 0.0)
                    t_parts.append(1.0 if abs(nt - exp) <= tol else 0.0)
                    if t_parts[-1] < s_parts[-1]:
                        failed.append("expected_tool_count")
            if self.check_parallelism:
                # Several calls in one model response is a parallel fan-out.
                ps, pt = ns > 1, nt > 1
                s_parts.append(1.0)
                t_parts.append(1.0 if ps == pt else 0.0)
                if ps != pt:
                    failed.append("parallelism")
                if k == 1 and example.expected_parallel is not None:
                    s_parts.append(1.0 if ps == example.expected_parallel else 0.0)
                    t_parts.append(1.0 if pt == example.expected_parallel else 0.0)
                    if t_parts[-1] < s_parts[-1]:
                        failed.append("expected_parallel")
            if self.check_refusals:
                s_parts.append(1.0)
                t_parts.append(0.0 if refusal_mismatch else 1.0)
            s_score = sum(s_parts) / len(s_parts)
            t_score = sum(t_parts) / len(t_parts)
            if failed:
                labels.append("TOOL_TRACE_STRUCTURE_DRIFT")
                sn, tn = call_names(src), call_names(tgt)
                diff = surplus(sn, tn) + surplus(tn, sn)
                tools.extend(diff or sn[:1] or tn[:1])
            per_round.append({"round": k, "source_call_count": ns, "target_call_count": nt,
                              "source_parallel": ns > 1, "target_parallel": nt > 1,
                              "source_score": s_score, "target_score": t_score, "failed": failed})
        metadata: dict[str, Any] = {"call_count_tolerance": tol}
        if refusal_mismatch:
            labels.append("REFUSAL_REGRESSION")
            metadata["refusal"] = {"source_refused": source.refused, "target_refused": target.refused,
                                   "source_refusal": source.refusal, "target_refusal": target.refusal}
            metadata["min_severity"] = REFUSAL_MIN_SEVERITY
        if rounds is None:
            metadata.update({k: v for k, v in per_round[0].items() if k not in ("round", "source_score", "target_score")})
        else:
            metadata["rounds"] = per_round
        metadata["tools"] = list(dict.fromkeys(tools))
        if "TOOL_TRACE_STRUCTURE_DRIFT" in labels:
            metadata["label_tools"] = {"TOOL_TRACE_STRUCTURE_DRIFT": metadata["tools"]}
        return [
            self.record(
                example,
                source_score=sum(r["source_score"] for r in per_round) / len(per_round),
                target_score=sum(r["target_score"] for r in per_round) / len(per_round),
                labels=list(dict.fromkeys(labels)),
                metadata=metadata,
            )
        ]

    def _score_plain(self, pair: Pair) -> ScoreRecord:
        """``score`` of a single-shot pair with aligned refusals and no structural ground truth.

        One round, and only the enabled source/target checks: call count within tolerance and
        parallelism alike (the source's parts are 1.0 by construction; aligned refusals add 1.0
        to both sides).
        """
        sn, tn = pair.source_names, pair.target_names
        ns, nt = len(sn), len(tn)
        ps, pt = ns > 1, nt > 1
        tol = self.call_count_tolerance
        count_drift = self.check_call_count and abs(nt - ns) > tol
        parallel_drift = self.check_parallelism and ps is not pt
        if not (count_drift or parallel_drift):
            return new_record(pair.example.id, self.type_name, self.name, None, 1.0, 1.0, False, [],
                              {"call_count_tolerance": tol, "source_call_count": ns, "target_call_count": nt,
                               "source_parallel": ps, "target_parallel": pt, "failed": [], "tools": []})
        failed = ["call_count", "parallelism"] if count_drift and parallel_drift else (
            ["call_count"] if count_drift else ["parallelism"])
        diff = surplus(sn, tn) + surplus(tn, sn)
        n_parts = self._plain_parts
        tools = list(dict.fromkeys(diff or sn[:1] or tn[:1]))
        return new_record(pair.example.id, self.type_name, self.name, None, 1.0, (n_parts - len(failed)) / n_parts,
                          False, ["TOOL_TRACE_STRUCTURE_DRIFT"],
                          {"call_count_tolerance": tol, "source_call_count": ns, "target_call_count": nt,
                           "source_parallel": ps, "target_parallel": pt, "failed": failed,
                           "tools": tools, "label_tools": {"TOOL_TRACE_STRUCTURE_DRIFT": tools}})
