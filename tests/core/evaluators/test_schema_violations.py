"""``ARGUMENT_SCHEMA_VIOLATION``: target calls checked against the offered tool's ``input_schema``."""

from __future__ import annotations

from typing import Any

from evaluator_builders import call, example, trace
from hypothesis import given, settings
from hypothesis import strategies as st

from evalshift_core import Call, Example, Toolset
from evalshift_core.analysis import analyze
from evalshift_core.evaluators import LABELS, evaluate_pair, evaluate_run
from evalshift_core.evaluators._schemas import SchemaCheck
from evalshift_core.report._data import field_explanations
from evalshift_core.store._suites import write_toolset

LABEL = "ARGUMENT_SCHEMA_VIOLATION"
REFUND_SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string"},
        "amount_usd": {"type": "number"},
        "reason": {"type": "string", "enum": ["damaged", "late", "wrong item"]},
    },
    "required": ["order_id", "amount_usd"],
}
TOOLS = [{"name": "issue_refund", "input_schema": REFUND_SCHEMA},
         {"name": "lookup_order", "description": "no schema given"}]
OFFERED = example("issue_refund", tools=TOOLS)


def score(ex: Example, src: Any, tgt: Any, **config: Any) -> dict[str, Any]:
    [rec] = evaluate_pair(ex, src, tgt, {"tool_arguments": [config]})
    return rec


def violations(rec: dict[str, Any]) -> list[dict[str, Any]]:
    return [f for f in rec["metadata"].get("fields", []) if f.get("label") == LABEL]


def test_a_number_sent_as_a_string_is_a_violation_on_that_tool_and_field():
    rec = score(OFFERED, trace(call("issue_refund", order_id="A1", amount_usd=12.0)),
                trace(call("issue_refund", order_id="A1", amount_usd="12")))
    assert rec["labels"] == ["ARGUMENT_VALUE_DRIFT", LABEL]
    assert violations(rec) == [{"tool": "issue_refund", "field": "amount_usd", "target": "12",
                                "message": "'12' is not of type 'number'", "label": LABEL}]
    assert rec["target_score"] == 0.5  # the finding is a label; the score is tool_arguments' own
    assert "issue_refund.amount_usd: '12' is not of type 'number' [ARGUMENT_SCHEMA_VIOLATION]" in \
        field_explanations(rec["metadata"])


def test_a_missing_required_key_names_the_key():
    rec = score(OFFERED, trace(call("issue_refund", order_id="A1", amount_usd=12.0)),
                trace(call("issue_refund", order_id="A1")))
    assert LABEL in rec["labels"]
    assert violations(rec) == [{"tool": "issue_refund", "field": "amount_usd", "target": None, "missing": "target",
                                "message": "'amount_usd' is a required property", "label": LABEL}]


def test_a_value_outside_the_enum_is_a_violation():
    rec = score(OFFERED, trace(call("issue_refund", order_id="A1", amount_usd=5, reason="late")),
                trace(call("issue_refund", order_id="A1", amount_usd=5, reason="tardy")))
    assert [(v["field"], v["target"], v["message"]) for v in violations(rec)] == [
        ("reason", "tardy", "'tardy' is not one of ['damaged', 'late', 'wrong item']")]


def test_every_broken_field_of_a_call_is_reported_once():
    rec = score(OFFERED, trace(call("issue_refund", order_id="A1", amount_usd=5)),
                trace(call("issue_refund", order_id=7, reason="tardy")))
    assert sorted(v["field"] for v in violations(rec)) == ["amount_usd", "order_id", "reason"]


def test_a_valid_call_gets_no_label_even_when_its_values_drift():
    rec = score(OFFERED, trace(call("issue_refund", order_id="A1", amount_usd=12.0)),
                trace(call("issue_refund", order_id="A2", amount_usd=13, reason="damaged")))
    assert rec["labels"] == ["ARGUMENT_VALUE_DRIFT"]
    assert violations(rec) == []


def test_a_tool_without_a_schema_and_an_unoffered_tool_get_no_label():
    rec = score(OFFERED, trace(call("lookup_order", order_id="A1")),
                trace(call("lookup_order", order_id=1, anything=[1, 2]), call("not_offered", x=1)))
    assert LABEL not in rec["labels"]
    no_tools = score(example("issue_refund"), trace(call("issue_refund", amount_usd=1.0)),
                     trace(call("issue_refund", amount_usd="1")))
    assert LABEL not in no_tools["labels"]


def test_the_label_is_found_when_target_repeats_the_source_exactly():
    """Both sides sending the string: no drift, but the target still breaks the schema."""
    rec = score(OFFERED, trace(call("issue_refund", order_id="A1", amount_usd="12")),
                trace(call("issue_refund", order_id="A1", amount_usd="12")))
    assert rec["labels"] == [LABEL] and rec["target_score"] == 1.0


def test_under_against_expected_the_target_is_checked_too():
    ex = example("issue_refund", tools=TOOLS).model_copy(update={"expected_tools": None})
    from evalshift_core import ExpectedToolCall

    ex = ex.model_copy(update={"expected_tools": [ExpectedToolCall(tool_name="issue_refund",
                                                                   arguments={"amount_usd": 12.0})]})
    rec = score(ex, trace(call("issue_refund", order_id="A1", amount_usd=12.0)),
                trace(call("issue_refund", order_id="A1", amount_usd="12")), against="expected")
    assert LABEL in rec["labels"] and [v["field"] for v in violations(rec)] == ["amount_usd"]


def test_a_multi_round_violation_sits_in_its_round():
    src = trace(rounds=[[call("lookup_order", order_id="A1")], [call("issue_refund", order_id="A1", amount_usd=5.0)]])
    tgt = trace(rounds=[[call("lookup_order", order_id="A1")], [call("issue_refund", order_id="A1", amount_usd="5")]])
    rec = score(OFFERED, src, tgt)
    assert LABEL in rec["labels"]
    [round2] = [r for r in rec["metadata"]["rounds"] if r["round"] == 2]
    assert [(f["field"], f["round"]) for f in round2["fields"] if f["label"] == LABEL] == [("amount_usd", 2)]
    assert "Round 2: issue_refund.amount_usd: '5' is not of type 'number' [ARGUMENT_SCHEMA_VIOLATION]" in \
        field_explanations(rec["metadata"])


def test_an_invalid_schema_gives_no_verdict():
    ex = example("issue_refund", tools=[{"name": "issue_refund",
                                         "input_schema": {"type": "object", "properties": {"a": {"type": 5}}}}])
    rec = score(ex, trace(call("issue_refund", a=1)), trace(call("issue_refund", a="x")))
    assert LABEL not in rec["labels"]


def test_the_label_is_registered_and_attributed_in_the_analysis():
    assert LABEL in LABELS
    recs = [score(OFFERED.model_copy(update={"id": f"e{i}"}),
                  trace(call("issue_refund", order_id="A1", amount_usd=12.0)),
                  trace(call("issue_refund", order_id="A1", amount_usd="12" if i % 2 else 12.0)))
            for i in range(6)]
    summary = analyze(recs).labels[LABEL]
    assert summary.count == 3
    assert summary.by_tool == {"issue_refund": 3}
    assert summary.by_field == {"issue_refund.amount_usd": 3}


def _rows(example_id: str, src: dict[str, Any], tgt: dict[str, Any]) -> list[Call]:
    return [Call.model_validate({"example_id": example_id, "role": role, "model": f"openai:{role}",
                                 "trace": {"calls": [{"tool_name": "issue_refund", "arguments": args,
                                                      "sequence_index": 0}]}})
            for role, args in (("source", src), ("target", tgt))]


def test_evaluate_run_reads_the_toolset_ref_sidecar_under_base(tmp_path):
    toolset = Toolset(tools=TOOLS)
    write_toolset(tmp_path, toolset.ref, [t.canonical() for t in toolset.tools])
    examples = [Example.model_validate({"id": "e1", "inputs": {"input": "x"}, "toolset_ref": toolset.ref}),
                Example.model_validate({"id": "e2", "inputs": {"input": "x"}, "toolset_ref": "sha256:" + "0" * 64})]
    calls = (_rows("e1", {"order_id": "A1", "amount_usd": 1.0}, {"order_id": "A1", "amount_usd": "1"})
             + _rows("e2", {"order_id": "A1", "amount_usd": 1.0}, {"order_id": "A1", "amount_usd": "1"}))
    config = {"tool_arguments": [{"name": "args"}]}
    with_base = {r.example_id: r.labels for r in evaluate_run(examples, calls, config, base=tmp_path, progress=False)}
    # e2's sidecar is missing: the check is left out, the evaluation goes on
    assert with_base == {"e1": ["ARGUMENT_VALUE_DRIFT", LABEL], "e2": ["ARGUMENT_VALUE_DRIFT"]}
    without = evaluate_run(examples, calls, config, progress=False)
    assert all(LABEL not in r.labels for r in without)


def test_validators_are_compiled_once_per_schema_and_toolset():
    from evalshift_core import Tool

    check = SchemaCheck()
    tools = [Tool.model_validate(t) for t in TOOLS]
    first = check.validator(tools, "sha256:" + "a" * 64, "issue_refund")
    again = check.validator(list(tools), None, "issue_refund")  # inline copy: same schema, same validator
    assert first is not None and again is first
    assert check.validator(tools, None, "lookup_order") is None


# -- property: an instance valid for the schema never gets the label ---------------------------

KINDS = {
    "string": ({"type": "string"}, st.text(max_size=8)),
    "number": ({"type": "number"}, st.floats(allow_nan=False, allow_infinity=False) | st.integers()),
    "integer": ({"type": "integer"}, st.integers()),
    "boolean": ({"type": "boolean"}, st.booleans()),
    "enum": ({"enum": ["a", "b", 3]}, st.sampled_from(["a", "b", 3])),
    "array": ({"type": "array", "items": {"type": "integer"}}, st.lists(st.integers(), max_size=3)),
}


@st.composite
def schema_and_instance(draw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), unique=True, max_size=5))
    kinds = {n: draw(st.sampled_from(sorted(KINDS))) for n in names}
    required = [n for n in names if draw(st.booleans())]
    schema: dict[str, Any] = {"type": "object", "properties": {n: KINDS[k][0] for n, k in kinds.items()},
                              "required": required}
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    instance = {n: draw(KINDS[k][1]) for n, k in kinds.items() if n in required or draw(st.booleans())}
    return schema, instance


@settings(max_examples=150, deadline=None)
@given(schema_and_instance(), st.booleans())
def test_a_valid_instance_never_gets_the_label(drawn, same_on_source):
    schema, instance = drawn
    ex = example("t", tools=[{"name": "t", "input_schema": schema}])
    src = trace(call("t", **instance)) if same_on_source else trace(call("t"))
    rec = score(ex, src, trace(call("t", **instance)))
    assert LABEL not in rec["labels"]
    assert violations(rec) == []


def test_the_headline_says_the_field_was_sent_against_its_schema():
    from evalshift_core.analysis._headline import _label_clauses

    labels = {LABEL: {"count": 3, "by_field": {"issue_refund.amount_usd": 3}},
              "ARGUMENT_VALUE_DRIFT": {"count": 3, "by_field": {"issue_refund.amount_usd": 3}}}
    assert [text for text, _ in _label_clauses(labels, 6, tools_said=False)] == [
        "sent issue_refund.amount_usd against its schema on 3 of 6 examples (ARGUMENT_SCHEMA_VIOLATION)",
        "changed issue_refund.amount_usd on 3 of 6 examples (ARGUMENT_VALUE_DRIFT)"]


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                    | st.text(max_size=4), lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=3), inner, max_size=3), max_leaves=6)
TRICKY = st.sampled_from([0.5, 1.0, 0, 1, True, False, None, "a", "1", "", [], {}])
"""Values on the edges between JSON types: 1.0 is an integer, True is not a number, "1" is not 1."""
PROPERTY = st.fixed_dictionaries({}, optional={
    "type": st.sampled_from(["string", "number", "integer", "boolean", "null", "object", "array"])
    | st.lists(st.sampled_from(["string", "number", "integer", "boolean", "null"]), min_size=1, max_size=3),
    "enum": st.lists(st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([1.0, 0.0, "a", "b", "1"]),
                     max_size=4),
    "description": st.text(max_size=3),
})


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b"]), PROPERTY, max_size=2), st.sampled_from([None, True, False]),
       st.data())
def test_the_fast_pre_check_never_accepts_what_jsonschema_rejects(props, extra, data):
    from jsonschema.validators import Draft202012Validator

    from evalshift_core.evaluators._schemas import surely_valid

    required = data.draw(st.lists(st.sampled_from(sorted(props) + ["z"]), unique=True, max_size=2))
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": required}
    if extra is not None:
        schema["additionalProperties"] = extra
    fast = surely_valid(schema)
    assert fast is not None  # every drawn schema lies in the subset the pre-check understands
    # mostly the schema's own keys, each with an edge value or any JSON; sometimes not an object
    keys = st.sampled_from(sorted(props) + ["z"]) if props else st.just("z")
    instance = data.draw(st.dictionaries(keys, TRICKY | TRICKY | JSON, max_size=3) | JSON)
    if fast(instance):
        assert Draft202012Validator(schema).is_valid(instance)


def test_the_fast_pre_check_stays_out_of_schemas_it_does_not_understand():
    from evalshift_core.evaluators._schemas import surely_valid

    assert surely_valid({"type": "object", "properties": {"n": {"type": "number", "minimum": 0}}}) is None
    assert surely_valid({"type": "object", "properties": {"n": {"$ref": "#/$defs/n"}}}) is None
    assert surely_valid({"type": "object", "additionalProperties": {"type": "string"}}) is None
    # and where it is out, jsonschema still finds the violation
    ex = example("t", tools=[{"name": "t", "input_schema": {"type": "object",
                                                            "properties": {"n": {"type": "number", "minimum": 0}}}}])
    rec = score(ex, trace(call("t", n=1)), trace(call("t", n=-1)))
    assert [v["message"] for v in violations(rec)] == ["-1 is less than the minimum of 0"]


EDGE_VALUES = [0.5, 1.0, 0, 1, -3, True, False, None, "a", "1", "", [], [1], {}, {"a": 1}]
EDGE_PROPERTIES = (
    [{}]
    + [{"type": k} for k in ("string", "number", "integer", "boolean", "null", "object", "array")]
    + [{"type": ["integer", "null"]}, {"type": ["string", "boolean"]}]
    + [{"enum": e} for e in (["a", 1], [1, None], [True], [1.0], [])]
    + [{"type": "string", "enum": ["a", "1"]}, {"type": "integer", "enum": [1, "a"]}]
)


def test_the_fast_pre_check_agrees_with_jsonschema_on_every_edge_value():
    """Exhaustively: every property kind the pre-check understands, every value on a JSON type
    edge, as required, optional and extra keys. Where it says valid, jsonschema must agree; and
    on the plain typed properties it must not defer what is plainly valid (or it saves nothing)."""
    from jsonschema.validators import Draft202012Validator

    from evalshift_core.evaluators._schemas import surely_valid

    decided = 0
    for prop in EDGE_PROPERTIES:
        for extra in (None, False):
            schema: dict[str, Any] = {"type": "object", "properties": {"p": prop}, "required": ["p"]}
            if extra is not None:
                schema["additionalProperties"] = extra
            fast, full = surely_valid(schema), Draft202012Validator(schema)
            assert fast is not None
            for value in EDGE_VALUES:
                for instance in ({"p": value}, {"p": value, "q": 1}, {"q": value}, value):
                    if fast(instance):
                        decided += 1
                        assert full.is_valid(instance), (schema, instance)
    assert decided > 100
