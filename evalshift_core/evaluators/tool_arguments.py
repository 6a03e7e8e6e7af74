"""``tool_arguments``: same tools, different values? (seed 000, "tool_arguments").

Matches calls by ``(tool_name, nearest sequence_index)`` (or optimally), then scores each
argument field with a per-field strategy; drift against the source, or correctness against
``expected_tools[].arguments`` with ``against: expected``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._models import Example, ExpectedToolCall, ToolCall, ToolTrace
from ._base import (
    MATCHING,
    Evaluator,
    Pair,
    ScoreRecord,
    ToolEvaluator,
    ground_truth_labels,
    is_number,
    json_equal,
    match_calls,
    match_calls_greedy,
    new_record,
    replayed_rounds,
    round_calls,
)
from ._schemas import ARGUMENT_SCHEMA_VIOLATION, SchemaCheck

__all__ = ["ARGUMENT_SCHEMA_VIOLATION", "ToolArguments", "with_schema_violations"]

STRATEGIES = ("exact", "subset", "numeric", "semantic")
NO_MATCHED_CALLS = "no matched calls between source and target"
ARGUMENTS_FIELD = "(arguments)"
"""Pseudo field name when a side's arguments are not an object (unparseable JSON text)."""

_MISSING = object()


def numeric_score(reference: float, actual: float, tolerance: float) -> float:
    """Relative error decaying linearly to 0 at ``tolerance`` (seed 000, ``numeric``)."""
    if reference == actual:
        return 1.0
    if tolerance <= 0 or reference == 0:
        return 0.0
    relative = abs(actual - reference) / abs(reference)
    return max(0.0, 1.0 - relative / tolerance)


def subset_score(reference: Any, actual: Any) -> float:
    """Share of the reference's items found in ``actual`` (objects by key, arrays by item)."""
    if isinstance(reference, dict) and isinstance(actual, dict):
        if not reference:
            return 1.0
        hits = sum(1 for k, v in reference.items() if k in actual and json_equal(v, actual[k]))
        return hits / len(reference)
    if isinstance(reference, list) and isinstance(actual, list):
        if not reference:
            return 1.0
        return sum(1 for v in reference if any(json_equal(v, a) for a in actual)) / len(reference)
    return 1.0 if json_equal(reference, actual) else 0.0


def contains(reference: Any, actual: Any) -> bool:
    """``contains_per_field``: the actual value contains the recorded one."""
    if isinstance(reference, str) and isinstance(actual, str):
        return reference in actual
    if isinstance(reference, dict) and isinstance(actual, dict):
        return all(k in actual and contains(v, actual[k]) for k, v in reference.items())
    if isinstance(reference, list) and isinstance(actual, list):
        return all(any(contains(v, a) for a in actual) for v in reference)
    return json_equal(reference, actual)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    import orjson

    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def with_schema_violations(record: ScoreRecord, found: list[dict[str, Any]]) -> ScoreRecord:
    """``record`` with the target's schema violations: the label, and one field entry each (in
    its round's entry on a multi-round record, where the report and attribution read them).

    A skipped record stays as it is: it measured nothing to attach a finding to.
    """
    if record.skipped:
        return record
    metadata = dict(record.metadata)
    rest = found
    rounds = metadata.get("rounds")
    if isinstance(rounds, list) and rounds:
        by_round: dict[Any, list[dict[str, Any]]] = {}
        for entry in found:
            by_round.setdefault(entry.get("round"), []).append(entry)
        new_rounds = []
        for r in rounds:
            if isinstance(r, dict) and r.get("round") in by_round:
                r = dict(r)
                r["fields"] = list(r.get("fields") or []) + by_round.pop(r["round"])
            new_rounds.append(r)
        metadata["rounds"] = new_rounds
        rest = [e for entries in by_round.values() for e in entries]
    if rest:
        metadata["fields"] = list(metadata.get("fields") or []) + rest
    tools = list(metadata.get("tools") or [])
    metadata["tools"] = tools + [t for t in dict.fromkeys(e["tool"] for e in found) if t not in tools]
    labels = list(record.labels)
    if ARGUMENT_SCHEMA_VIOLATION not in labels:
        labels.append(ARGUMENT_SCHEMA_VIOLATION)
    return record.model_copy(update={"labels": labels, "metadata": metadata})


class ToolArguments(ToolEvaluator):
    """Per-field argument scores on matched calls; drift (default) or ``against: expected``."""

    type_name = "tool_arguments"
    options = frozenset({"against", "matching", "fields", "numeric_tolerance", "optional_fields_scored"})
    reads_arguments = True

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.against = str(config.get("against", "source"))
        if self.against not in ("source", "expected"):
            raise ValueError(f"against must be source or expected, not {self.against!r}")
        self.matching = str(config.get("matching", "optimal"))
        if self.matching not in MATCHING:
            raise ValueError(f"matching must be optimal or greedy, not {self.matching!r}")
        tolerance = config.get("numeric_tolerance", 0.05)
        if not is_number(tolerance) or tolerance < 0:
            raise ValueError(f"numeric_tolerance must be a number >= 0, not {tolerance!r}")
        self.numeric_tolerance = float(tolerance)
        optional = str(config.get("optional_fields_scored", "lenient"))
        if optional not in ("lenient", "strict"):
            raise ValueError(f"optional_fields_scored must be lenient or strict, not {optional!r}")
        # Seed 000: a field present on one side only scores 0.5; ``strict`` restores 0.0.
        self.one_side_score = 0.0 if optional == "strict" else 0.5
        fields = config.get("fields") or {}
        if not isinstance(fields, dict):
            raise ValueError("fields must map a field (or tool.field) to a strategy")
        for key, strategy in fields.items():
            if strategy not in STRATEGIES:
                raise ValueError(f"fields.{key}: unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
        self.strategies: dict[str, str] = {str(k): str(v) for k, v in fields.items()}
        self._semantic: Any = None
        self._schemas = SchemaCheck()

    def compares_to_source(self, side: str | None) -> bool:
        return self.against == "source"

    def bind(self, evaluators: Sequence[Evaluator]) -> None:
        # Seed 000: ``semantic`` borrows the configured semantic evaluator's model and cache.
        for ev in evaluators:
            if ev.type_name == "semantic":
                self._semantic = ev
                return

    # -- fields ---------------------------------------------------------------------------

    def _strategy(self, tool: str, key: str) -> str:
        if not self.strategies:
            return "exact"
        return self.strategies.get(f"{tool}.{key}") or self.strategies.get(key) or "exact"

    def _field_score(self, tool: str, key: str, reference: Any, actual: Any, containment: bool) -> float:
        strategy = self._strategy(tool, key)
        if strategy == "exact":
            if containment:
                return 1.0 if contains(reference, actual) else 0.0
            return 1.0 if json_equal(reference, actual) else 0.0
        if strategy == "numeric":
            if is_number(reference) and is_number(actual):
                return numeric_score(float(reference), float(actual), self.numeric_tolerance)
            return 1.0 if json_equal(reference, actual) else 0.0
        if strategy == "subset":
            return subset_score(reference, actual)
        # semantic
        if json_equal(reference, actual):
            return 1.0
        if self._semantic is None:
            return 0.0  # without a semantic evaluator the strategy degrades to exact
        return self._semantic.similarity(_as_text(reference), _as_text(actual))

    def score_call(
        self, tool: str, reference: Any, actual: Any, *, recorded_keys_only: bool = False, containment: bool = False
    ) -> tuple[float, list[tuple[str, Any, Any, float]]]:
        """Mean field score of one matched call and its imperfect fields ``(field, ref, act, score)``.

        ``recorded_keys_only`` compares only the reference's keys (``subset`` /
        ``contains_per_field`` expectations); otherwise the union of keys.
        """
        if reference is None:
            reference = {}
        if actual is None:
            actual = {}
        if type(reference) is not dict or type(actual) is not dict:
            ok = json_equal(reference, actual)
            return (1.0, []) if ok else (0.0, [(ARGUMENTS_FIELD, reference, actual, 0.0)])
        if json_equal(reference, actual):
            return 1.0, []  # every strategy scores an identical value 1.0
        return self._score_fields(tool, reference, actual, recorded_keys_only, containment)

    def _score_fields(
        self, tool: str, reference: dict[str, Any], actual: dict[str, Any], recorded_keys_only: bool, containment: bool
    ) -> tuple[float, list[tuple[str, Any, Any, float]]]:
        """``score_call`` of two argument objects known not to be JSON-equal: field by field."""
        total = 0.0
        n = 0
        drifted: list[tuple[str, Any, Any, float]] = []
        one_side = self.one_side_score
        for key, ref_value in reference.items():
            n += 1
            act_value = actual.get(key, _MISSING)
            if act_value is _MISSING:
                total += one_side
                drifted.append((key, ref_value, _MISSING, one_side))
                continue
            s = self._field_score(tool, key, ref_value, act_value, containment)
            total += s
            if s < 1.0:
                drifted.append((key, ref_value, act_value, s))
        if not recorded_keys_only:
            for key, act_value in actual.items():
                if key not in reference:
                    n += 1
                    total += one_side
                    drifted.append((key, _MISSING, act_value, one_side))
        return (total / n if n else 1.0), drifted

    # -- matching -------------------------------------------------------------------------

    def _match(
        self,
        reference: Sequence[ToolCall | ExpectedToolCall],
        actual: Sequence[ToolCall],
        scorer: Callable[[int, int], tuple[float, list[tuple[str, Any, Any, float]]]],
        greedy: list[int | None] | None = None,
    ) -> list[tuple[int | None, float, list[tuple[str, Any, Any, float]]]]:
        """Per reference call: (matched actual index or None, call score, imperfect fields).

        ``greedy`` is the greedy assignment when the caller already has it.
        """
        results: dict[tuple[int, int], tuple[float, list[tuple[str, Any, Any, float]]]] = {}

        def scored(i: int, j: int) -> tuple[float, list[tuple[str, Any, Any, float]]]:
            found = results.get((i, j))
            if found is None:
                found = results[(i, j)] = scorer(i, j)
            return found

        if self.matching == "greedy":
            assignment = match_calls_greedy(reference, actual) if greedy is None else greedy
        else:
            assignment = match_calls(reference, actual, lambda i, j: scored(i, j)[0])
        out: list[tuple[int | None, float, list[tuple[str, Any, Any, float]]]] = []
        for i, j in enumerate(assignment):
            if j is None:
                out.append((None, 0.0, []))
            else:
                s, fields = scored(i, j)
                out.append((j, s, fields))
        return out

    # -- scoring --------------------------------------------------------------------------


    def score_pair(self, pair: Pair) -> list[ScoreRecord]:
        if self.against == "source" and pair.single_shot and (
                self.matching == "greedy" or pair.same_calls or pair.names_unique):
            # With no tool called twice on either side, optimal matching pairs what greedy does.
            records = [self._score_drift_single_shot(pair)]
        else:
            records = self._score_general(pair)
        tools = pair.tools
        if tools and pair.target_calls:
            found = self._schemas.violations(tools, pair.example.toolset_ref, pair.target_calls,
                                             rounds=not pair.single_shot)
            if found:
                return [with_schema_violations(r, found) for r in records]
        return records

    def _score_general(self, pair: Pair) -> list[ScoreRecord]:
        """Round by round on the plain traces: what the single-shot path shortcuts (tests compare)."""
        example, source, target = pair.example, pair.source, pair.target
        grade = self._grade_expected if self.against == "expected" else self._grade_drift
        rounds = replayed_rounds(source, target)
        per_round = [grade(example, source, target, k) for k in rounds or (1,)]
        scored = [r for r in per_round if not r.get("skipped")]
        if not scored:
            reason = per_round[0].get("reason") if rounds is None else "no round had arguments to compare"
            metadata: dict[str, Any] = {"against": self.against, "skipped": True, "reason": reason}
            if rounds is not None:
                metadata["rounds"] = per_round
            return [self.record(example, source_score=1.0, target_score=1.0, skipped=True, metadata=metadata)]
        fields: list[dict[str, Any]] = []
        labels: list[str] = []
        tools: list[str] = []
        for r in scored:
            fields.extend(r["fields"])
            labels.extend(r["labels"])
            tools.extend(r["tools"])
        metadata = {"against": self.against, "fields": fields, "tools": list(dict.fromkeys(tools))}
        if rounds is None:
            if "reason" in scored[0]:
                metadata["reason"] = scored[0]["reason"]
            if scored[0].get("missing_calls"):
                metadata["missing_calls"] = scored[0]["missing_calls"]
        else:
            metadata["rounds"] = [
                {k: v for k, v in r.items() if k not in ("fields", "labels")} for r in per_round
            ]
        s_score = sum(r["source_score"] for r in scored) / len(scored)
        t_score = sum(r["target_score"] for r in scored) / len(scored)
        if self.against == "expected":
            labels = ground_truth_labels(s_score, t_score, labels)
        return [
            self.record(
                example,
                source_score=s_score,
                target_score=t_score,
                labels=list(dict.fromkeys(labels)),
                metadata=metadata,
            )
        ]

    def _score_drift_single_shot(self, pair: Pair) -> ScoreRecord:
        """``score`` against the source with greedy matching on a single-shot pair (the common case).

        ``_grade_drift`` of round 1 and its assembly into one record, on the pair's shared
        greedy matching; a target repeating the source's calls scores 1.0 with nothing to report.
        """
        example = pair.example
        reference = pair.source_calls
        if not reference:
            return self.record(example, source_score=1.0, target_score=1.0, skipped=True, metadata={
                "against": self.against, "skipped": True,
                "reason": "the source made no tool calls to compare arguments with"})
        if pair.same_calls:
            # Every source call matched to its twin with equal arguments: every field scores 1.0.
            return new_record(example.id, self.type_name, self.name, None, 1.0, 1.0, False, [],
                              {"against": self.against, "fields": [], "tools": []})
        matches = pair.matches
        if all(j is None for j in matches):
            # Seed 001: the evaluator scores a regression when the target reuses none of the
            # source's tool names; tool_selection is where to triage it.
            names = list(dict.fromkeys(c.tool_name for c in reference))
            return self.record(example, source_score=1.0, target_score=0.0, labels=["TOOL_SELECTION_DRIFT"],
                               metadata={"against": self.against, "fields": [], "tools": list(names),
                                         "reason": NO_MATCHED_CALLS, "missing_calls": names})
        actual = pair.target_calls
        fields: list[dict[str, Any]] = []
        tools: list[str] = []
        missing: list[str] = []
        total = 0.0
        for call, j, equal in zip(reference, matches, pair.arguments_equal):
            if equal:
                total += 1.0  # what score_call gives equal arguments, under every strategy
                continue
            if j is None:
                missing.append(call.tool_name)
                tools.append(call.tool_name)
                continue
            ref_args, act_args = call.arguments, actual[j].arguments
            if type(ref_args) is dict and type(act_args) is dict:  # unequal, as ``pair`` found
                s, drifted = self._score_fields(call.tool_name, ref_args, act_args, False, False)
            else:
                s, drifted = self.score_call(call.tool_name, ref_args, act_args)
            total += s
            if drifted:
                fields.extend(self._field_entries(call.tool_name, drifted, None))
                tools.append(call.tool_name)
        labels = (["ARGUMENT_VALUE_DRIFT"] if fields else []) + (["TOOL_SELECTION_DRIFT"] if missing else [])
        metadata: dict[str, Any] = {"against": self.against, "fields": fields, "tools": list(dict.fromkeys(tools))}
        if missing:
            metadata["missing_calls"] = missing
        return new_record(example.id, self.type_name, self.name, None, 1.0, total / len(reference), False, labels,
                          metadata)

    def _field_entries(
        self, tool: str, fields: list[tuple[str, Any, Any, float]], k: int | None
    ) -> list[dict[str, Any]]:
        out = []
        for key, ref_value, act_value, s in fields:
            entry: dict[str, Any] = {
                "tool": tool,
                "field": key,
                "source": None if ref_value is _MISSING else ref_value,
                "target": None if act_value is _MISSING else act_value,
                "score": s,
                "label": "ARGUMENT_VALUE_DRIFT",
            }
            if ref_value is _MISSING:
                entry["missing"] = "source"
            elif act_value is _MISSING:
                entry["missing"] = "target"
            if k is not None:
                entry["round"] = k
            out.append(entry)
        return out

    def _grade_drift(
        self, example: Example, source: ToolTrace, target: ToolTrace, k: int, greedy: list[int | None] | None = None
    ) -> dict[str, Any]:
        reference = round_calls(source, k)
        actual = round_calls(target, k)
        round_key = k if source.round_count is not None or target.round_count is not None else None
        if not reference:
            return {"round": k, "skipped": True, "reason": "the source made no tool calls to compare arguments with"}
        matches = self._match(
            reference, actual,
            lambda i, j: self.score_call(reference[i].tool_name, reference[i].arguments, actual[j].arguments),
            greedy,
        )
        if all(j is None for j, _, _ in matches):
            # Seed 001: the evaluator scores a regression when the target reuses none of the
            # source's tool names; tool_selection is where to triage it.
            names = list(dict.fromkeys(c.tool_name for c in reference))
            return {"round": k, "source_score": 1.0, "target_score": 0.0, "reason": NO_MATCHED_CALLS,
                    "fields": [], "labels": ["TOOL_SELECTION_DRIFT"], "tools": names, "missing_calls": names}
        fields: list[dict[str, Any]] = []
        tools: list[str] = []
        missing: list[str] = []
        total = 0.0
        for call, (j, s, drifted) in zip(reference, matches):
            total += s
            if j is None:
                missing.append(call.tool_name)
                tools.append(call.tool_name)
            elif drifted:
                fields.extend(self._field_entries(call.tool_name, drifted, round_key))
                tools.append(call.tool_name)
        labels = (["ARGUMENT_VALUE_DRIFT"] if fields else []) + (["TOOL_SELECTION_DRIFT"] if missing else [])
        entry = {"round": k, "source_score": 1.0, "target_score": total / len(reference),
                 "fields": fields, "labels": labels, "tools": tools}
        if missing:
            entry["missing_calls"] = missing
        return entry

    def _grade_expected(self, example: Example, source: ToolTrace, target: ToolTrace, k: int) -> dict[str, Any]:
        expected = [] if example.expected_no_tools else list(example.expected_round(k) or ())
        graded = [i for i, e in enumerate(expected) if e.arguments is not None]
        if not graded:
            # Seed 000: an example with no expected arguments is skipped neutrally at 1.0/1.0.
            return {"round": k, "skipped": True, "reason": "no expected arguments"}
        with_args = [expected[i] for i in graded]
        round_key = k if source.round_count is not None or target.round_count is not None else None
        side_results = []
        for trace in (source, target):
            actual = round_calls(trace, k)

            def scorer(i: int, j: int, actual: list[ToolCall] = actual) -> tuple[float, list[tuple[str, Any, Any, float]]]:
                e = expected[i]
                if e.arguments is None:  # any call of the tool meets a names-only expectation
                    return 1.0, []
                return self.score_call(
                    e.tool_name, e.arguments, actual[j].arguments,
                    recorded_keys_only=e.match_strategy != "exact",
                    containment=e.match_strategy == "contains_per_field",
                )

            # Every expectation takes part in matching, so a names-only one keeps its call and
            # the expectations with arguments meet the calls they describe; only those are graded.
            matches = self._match(expected, actual, scorer)
            side_results.append((actual, [matches[i] for i in graded]))
        (src_calls, src_matches), (tgt_calls, tgt_matches) = side_results
        fields: list[dict[str, Any]] = []
        tools: list[str] = []
        missing: list[str] = []
        for i, e in enumerate(with_args):
            js, ss, s_fields = src_matches[i]
            jt, ts, t_fields = tgt_matches[i]
            if jt is None:
                missing.append(e.tool_name)
            if ts < ss:
                tools.append(e.tool_name)
            src_by_field = {f[0]: f for f in s_fields}
            for key, exp_value, act_value, fs in t_fields:
                src_field = src_by_field.get(key)
                src_fs = src_field[3] if src_field else 1.0
                if fs >= src_fs:
                    continue
                src_value = src_calls[js].arguments.get(key, None) if js is not None and isinstance(src_calls[js].arguments, dict) else None
                entry = {
                    "tool": e.tool_name, "field": key,
                    "expected": None if exp_value is _MISSING else exp_value,
                    "source": src_value, "target": None if act_value is _MISSING else act_value,
                    "source_field_score": src_fs, "score": fs, "label": "ARGUMENT_VALUE_DRIFT",
                }
                if act_value is _MISSING:
                    entry["missing"] = "target"
                elif exp_value is _MISSING:
                    entry["missing"] = "expected"
                if round_key is not None:
                    entry["round"] = round_key
                fields.append(entry)
        s_score = sum(m[1] for m in src_matches) / len(with_args)
        t_score = sum(m[1] for m in tgt_matches) / len(with_args)
        labels: list[str] = []
        if t_score < s_score:
            labels.append("ARGUMENT_VALUE_DRIFT" if fields or not missing else "TOOL_SELECTION_DRIFT")
        entry = {"round": k, "source_score": s_score, "target_score": t_score, "fields": fields,
                 "labels": labels, "tools": list(dict.fromkeys(tools))}
        if missing:
            entry["missing_calls"] = missing
        return entry
