"""Every reader of a file EvalShift writes checks ``schema_version`` and refuses a newer one by name.

run.json and batches.json carry one at the top; a suite, examples.jsonl, raw.jsonl or scores.jsonl
line may carry its own (a line without one is of the current version). An older or equal version reads as before.
"""

from __future__ import annotations

import json

import pytest

from evalshift_core import Comparison, InputError, analyze, load_run, load_suite
from evalshift_core._io import atomic_write_json, atomic_write_jsonl, check_schema_version
from evalshift_core._models import SCHEMA_VERSION, Call, Example
from evalshift_core.replay._batch import BatchState
from evalshift_core.store._runs import Manifest, load_manifest, write_manifest

NEWER = SCHEMA_VERSION + 3
REFUSED = f"schema_version: written by a newer EvalShift (schema {NEWER}; this one reads up to {SCHEMA_VERSION}): " \
          "upgrade evalshift"


def _run(base, *, manifest=None, example_extra=None, call_extra=None):
    run_dir = base / "runs" / "run-1"
    example = Example(id="e1", inputs={"input": "x"}).model_dump(mode="json", exclude_none=True)
    call = Call(example_id="e1", role="source", model="openai:a").model_dump(mode="json", exclude_none=True)
    atomic_write_json(run_dir / "run.json", manifest or {"schema_version": SCHEMA_VERSION, "run_id": "run-1"})
    atomic_write_jsonl(run_dir / "examples.jsonl", [{**example, **(example_extra or {})}])
    atomic_write_jsonl(run_dir / "raw.jsonl", [{**call, **(call_extra or {})}])
    return run_dir


def test_a_newer_run_json_is_refused_by_name(tmp_path):
    run_dir = _run(tmp_path, manifest={"schema_version": NEWER, "run_id": "run-1"})
    with pytest.raises(InputError) as info:
        load_run(tmp_path, "run-1")
    assert str(info.value) == f"{run_dir / 'run.json'}: {REFUSED}"


@pytest.mark.parametrize(("file", "extra"), [("examples.jsonl", "example_extra"), ("raw.jsonl", "call_extra")])
def test_a_newer_run_line_is_refused_naming_file_and_line(tmp_path, file, extra):
    run_dir = _run(tmp_path, **{extra: {"schema_version": NEWER}})
    with pytest.raises(InputError) as info:
        load_run(tmp_path, "run-1")
    assert str(info.value) == f"{run_dir / file}:1: {REFUSED}"


def test_a_newer_suite_line_is_refused_or_reported_and_skipped(tmp_path):
    path = tmp_path / "s.jsonl"
    lines = [{"id": "old", "inputs": {"input": "x"}, "schema_version": SCHEMA_VERSION},
             {"id": "new", "inputs": {"input": "x"}, "schema_version": NEWER}]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(InputError) as info:
        load_suite(path)
    assert str(info.value) == f"{path}:2: {REFUSED}"
    bad: list[str] = []
    kept = load_suite(path, on_bad_line=lambda e: bad.append(str(e)))
    assert [e.id for e in kept] == ["old"] and bad == [f"{path}:2: {REFUSED}"]


def test_the_current_and_older_versions_read_as_before(tmp_path):
    _run(tmp_path, example_extra={"schema_version": 1}, call_extra={"schema_version": SCHEMA_VERSION})
    manifest, examples, calls = load_run(tmp_path, "run-1")
    assert isinstance(manifest, Manifest) and manifest.run_id == "run-1"
    assert [e.id for e in examples] == ["e1"] and [c.role for c in calls] == ["source"]


@pytest.mark.parametrize(("value", "message"), [
    ("2", "schema_version: must be a positive integer, not '2'"),
    (0, "schema_version: must be a positive integer, not '0'"),
    (True, "schema_version: must be a positive integer, not 'True'"),
])
def test_a_version_that_is_not_a_positive_integer_is_refused(tmp_path, value, message):
    run_dir = _run(tmp_path, manifest={"schema_version": value, "run_id": "run-1"})
    with pytest.raises(InputError) as info:
        load_manifest(run_dir)
    assert str(info.value) == f"{run_dir / 'run.json'}: {message}"


def test_a_newer_batch_state_is_refused_by_name(tmp_path):
    atomic_write_json(tmp_path / "batches.json", {"schema_version": 2, "batches": []})
    with pytest.raises(InputError) as info:
        BatchState(tmp_path)
    assert str(info.value) == (f"{tmp_path / 'batches.json'}: schema_version: written by a newer EvalShift "
                               "(schema 2; this one reads up to 1): upgrade evalshift")


def test_the_check_accepts_up_to_the_newest_and_names_the_line():
    check_schema_version(1, 1)
    with pytest.raises(InputError) as info:
        check_schema_version(7, 3, file="scores.jsonl", line=12)
    assert str(info.value) == ("scores.jsonl:12: schema_version: written by a newer EvalShift (schema 7; this one "
                               "reads up to 3): upgrade evalshift")


def test_run_json_keeps_the_keys_a_run_set_in_field_order(tmp_path):
    manifest = Manifest(run_id="r", examples=2, created="t")
    manifest.status = "complete"
    manifest.cost_usd = 0.5
    write_manifest(tmp_path, manifest)
    assert list(json.loads((tmp_path / "run.json").read_text())) == [
        "schema_version", "run_id", "examples", "created", "status", "cost_usd"]
    again = load_manifest(tmp_path)
    assert again["cost_usd"] == 0.5 and again.get("errors") is None and "errors" not in again
    assert dict(again) == json.loads((tmp_path / "run.json").read_text())


def test_a_newer_score_row_is_refused_by_the_scores_frame(tmp_path):
    row = {"example_id": "e1", "evaluator": "tool_selection", "name": "routing", "side": "conformance",
           "source_score": 1.0, "target_score": 1.0, "skipped": False, "labels": [], "metadata": {}}
    atomic_write_jsonl(tmp_path / "scores.jsonl", [row, {**row, "schema_version": NEWER}])
    comparison = Comparison(run_id="r1", run_dir=tmp_path, analysis=analyze([row]), report_path=tmp_path / "r.html")
    with pytest.raises(InputError) as info:
        comparison.scores_frame()
    assert str(info.value) == f"{tmp_path / 'scores.jsonl'}:2: {REFUSED}"


def test_a_comparison_given_run_json_keys_holds_them_as_a_manifest(tmp_path):
    keys = {"source_model": "openai:a", "target_model": "openai:b", "cached_calls": 3, "model_calls": 4}
    comparison = Comparison(run_id="r1", run_dir=tmp_path, analysis=analyze([]), report_path=tmp_path / "r.html",
                            manifest=keys)
    assert isinstance(comparison.manifest, Manifest)
    assert (comparison.manifest.run_id, comparison.manifest.cached_calls, comparison.manifest["model_calls"]) == (
        "r1", 3, 4)
    assert "(openai:a -> openai:b, 0 examples regressed" in repr(comparison)
