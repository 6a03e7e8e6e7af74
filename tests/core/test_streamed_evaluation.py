"""evaluate reads a run example by example, on one process or two, and writes the report row by
row; each of those paths gives the bytes the whole-run path gives (test_outputs_digest pins them),
and a run folder EvalShift cannot vouch for is validated row by row, with the same messages."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import orjson
import pytest
from _replicated_run import copy_demo_run, replicate_run

import evalshift_core._evaluation as evaluation
import evalshift_core._parallel as parallel
from evalshift_core._compare import evaluate_saved_run
from evalshift_core._exceptions import EvalShiftError, InputError
from evalshift_core.analysis._tool_use import ToolUseTally, tool_use
from evalshift_core.config._config import Config
from evalshift_core.evaluators import ToolEvaluator
from evalshift_core.report._data import (
    build_report,
    example_row,
    regressions_by_example,
    severities,
)
from evalshift_core.report._report import ReportWriter, render_run_report, write_report
from evalshift_core.store._rows import RunCalls, SavedRows, record_written, written_intact
from evalshift_core.store._runs import load_run

OUTPUTS = ("scores.jsonl", "analysis.json", "report.json", "report.html")


def _digest(run_dir: Path) -> str:
    return hashlib.sha256(b"".join((run_dir / name).read_bytes() for name in OUTPUTS)).hexdigest()


def test_two_processes_write_what_one_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = replicate_run(tmp_path, 3_000, seed=7)
    one = evaluate_saved_run(run_id, config=Config(), base=tmp_path)
    serial = _digest(one.run_dir)
    halves: list[int] = []
    real = evaluation.in_halves

    def counted(work, n, **kw):  # noqa: ANN001, ANN003, ANN202 - the function under test, counted
        out = real(work, n, **kw)
        halves.append(len(out))
        return out

    monkeypatch.setattr(parallel, "_parallel", lambda n: n > 0)
    monkeypatch.setattr(evaluation, "in_halves", counted)
    two = evaluate_saved_run(run_id, config=Config(), base=tmp_path)
    assert halves == [2, 2]  # both passes forked
    assert _digest(two.run_dir) == serial
    assert two.analysis == one.analysis
    monkeypatch.setattr(parallel, "in_halves", counted)
    for name in ("report.json", "report.html"):
        (two.run_dir / name).unlink()
    render_run_report(tmp_path, run_id)  # `evalshift report`, its rows on two processes too
    assert halves == [2, 2, 2]
    assert _digest(two.run_dir) == serial


class _Fails(ToolEvaluator):
    """Raises on one example, to see an error in the forked half reach the caller."""

    type_name = "fails_late"

    def score_pair(self, pair):  # noqa: ANN001, ANN201
        if pair.example.id.endswith("-002900"):
            raise ValueError(f"cannot score {pair.example.id}")
        return []


def test_an_error_in_the_forked_half_is_raised_by_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = replicate_run(tmp_path, 3_000, seed=7)
    monkeypatch.setattr(parallel, "_parallel", lambda n: n > 0)
    monkeypatch.setattr(evaluation, "resolve_evaluators", lambda *a, **k: [_Fails({"name": "late"})])
    with pytest.raises(ValueError, match=r"cannot score .*-002900"):
        evaluate_saved_run(run_id, config=Config(), base=tmp_path)


def test_an_exception_that_does_not_pickle_travels_as_its_words(monkeypatch: pytest.MonkeyPatch) -> None:
    class Stubborn(Exception):
        def __init__(self, what: str, *, where: str) -> None:
            super().__init__(f"{what} at {where}")

    def work(part: range) -> int:
        if part.start:
            raise Stubborn("no", where="the second half")
        return 1

    monkeypatch.setattr(parallel, "_parallel", lambda n: True)
    with pytest.raises(EvalShiftError, match="Stubborn: no at the second half"):
        parallel.in_halves(work, 10**6)


def test_report_rows_written_in_any_order_over_two_spools_equal_the_whole_report(tmp_path: Path) -> None:
    run_id = replicate_run(tmp_path, 400, seed=3)
    done = evaluate_saved_run(run_id, config=Config(), base=tmp_path)
    manifest, examples, calls = load_run(tmp_path, run_id)
    report = build_report(done.analysis, examples, calls, manifest, tool_calls=done.tool_calls)
    write_report(tmp_path, report)
    whole = {name: (tmp_path / name).read_bytes() for name in ("report.json", "report.html")}
    severity_of, regressed = severities(done.analysis), regressions_by_example(done.analysis)
    rows = SavedRows(done.run_dir)
    indexed = [(i, row) for i, (row, _) in enumerate(rows)]
    random.Random(0).shuffle(indexed)
    out = tmp_path / "streamed"
    out.mkdir()
    with ReportWriter(out, len(indexed), spools=2) as writer:
        for n, (i, (ex, src, tgt, _)) in enumerate(indexed):
            writer.spools[n % 2].add(i, example_row(ex, src, tgt, regressed.get(ex.id, ()), severity_of))
        writer.write({k: v for k, v in report.items() if k != "examples"} | {"examples": []})
    assert {name: (out / name).read_bytes() for name in whole} == whole


def test_a_report_with_no_rows_is_the_same_either_way(tmp_path: Path) -> None:
    run_id = copy_demo_run(tmp_path)
    done = evaluate_saved_run(run_id, config=Config(), base=tmp_path)
    header = {**orjson.loads((done.run_dir / "report.json").read_bytes()), "examples": []}
    write_report(tmp_path, header)
    with ReportWriter(done.run_dir, 0) as writer:
        writer.write(header)
    for name in ("report.json", "report.html"):
        assert (done.run_dir / name).read_bytes() == (tmp_path / name).read_bytes()


def test_tool_use_counted_in_two_parts_is_the_whole_count(tmp_path: Path) -> None:
    run_id = replicate_run(tmp_path, 500, seed=5)
    _, examples, calls = load_run(tmp_path, run_id)
    rows = list(SavedRows(tmp_path / "runs" / run_id))
    halves = [ToolUseTally(), ToolUseTally()]
    for i, ((ex, src, tgt, _), _) in enumerate(rows):
        halves[i * 3 // len(rows) // 2].add(ex, src, tgt)  # a third and two thirds
    halves[0].merge(halves[1])
    assert halves[0].result() == tool_use(examples, calls)


def test_a_hand_edited_run_is_validated_with_the_usual_messages(tmp_path: Path) -> None:
    run_id = replicate_run(tmp_path, 50, seed=2)
    run_dir = tmp_path / "runs" / run_id
    assert written_intact(run_dir)
    lines = (run_dir / "raw.jsonl").read_bytes().splitlines(keepends=True)
    lines[6] = lines[6].replace(b'"role":"source"', b'"role":"sauce"').replace(b'"role":"target"', b'"role":"sauce"')
    (run_dir / "raw.jsonl").write_bytes(b"".join(lines))
    assert not written_intact(run_dir)
    with pytest.raises(InputError) as seen:
        evaluate_saved_run(run_id, config=Config(), base=tmp_path)
    with pytest.raises(InputError) as before:
        load_run(tmp_path, run_id)
    assert str(seen.value) == str(before.value)
    assert "raw.jsonl:7" in str(seen.value) and "role" in str(seen.value)


def test_evaluate_leaves_no_thread_that_would_keep_the_next_one_from_forking(tmp_path: Path) -> None:
    """tqdm's monitor thread would: a bar of ours never starts it."""
    import threading

    before = set(threading.enumerate())
    run_id = replicate_run(tmp_path, 200, seed=1)
    evaluate_saved_run(run_id, config=Config(), base=tmp_path)
    assert set(threading.enumerate()) <= before


def test_written_json_is_only_believed_when_both_digests_match(tmp_path: Path) -> None:
    run_id = copy_demo_run(tmp_path)
    run_dir = tmp_path / "runs" / run_id
    assert not written_intact(run_dir)  # recorded before written.json existed
    record_written(run_dir)
    assert written_intact(run_dir)
    with open(run_dir / "examples.jsonl", "ab") as fh:
        fh.write(b"\n")
    assert not written_intact(run_dir)
    (run_dir / "written.json").write_bytes(b"[not json")
    assert not written_intact(run_dir)


def test_a_saved_runs_calls_are_read_when_first_used(tmp_path: Path) -> None:
    run_id = replicate_run(tmp_path, 40, seed=4)
    done = evaluate_saved_run(run_id, config=Config(), base=tmp_path)
    assert isinstance(done.calls, RunCalls)
    _, _, calls = load_run(tmp_path, run_id)
    assert list(done.calls) == calls and len(done.calls) == 80 and done.calls[3] == calls[3]


def test_source_repeats_read_from_the_saved_run_score_as_in_memory(tmp_path: Path) -> None:
    """A run replayed with source_repeats: its extra source rows are the A/A baseline, found by
    the index of a saved run as by pairing rows in memory."""
    outputs = []
    for written in (False, True):
        base = tmp_path / str(written)
        run_id = replicate_run(base, 300, seed=11, written=False)
        run_dir = base / "runs" / run_id
        examples = [orjson.loads(line) for line in (run_dir / "examples.jsonl").read_bytes().splitlines()]
        for example in examples:  # no recording: the repeats are the only A/A baseline
            del example["recording"]
        (run_dir / "examples.jsonl").write_bytes(b"".join(orjson.dumps(e) + b"\n" for e in examples))
        rows = [orjson.loads(line) for line in (run_dir / "raw.jsonl").read_bytes().splitlines()]
        repeats = [{**r, "repeat": 1} for r in rows if r["role"] == "source"]
        random.Random(1).shuffle(repeats)
        (run_dir / "raw.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows + repeats))
        if written:
            record_written(run_dir)
        drift = {"evaluators": {"tool_selection": [{"name": "routing", "divergence": "set"}]}}
        done = evaluate_saved_run(run_id, config=Config.model_validate(drift), base=base)
        assert isinstance(done.calls, RunCalls) == written
        outputs.append({name: (done.run_dir / name).read_bytes() for name in OUTPUTS})
    assert outputs[0] == outputs[1]
    assert b'"kind":"source_repeats"' in outputs[1]["scores.jsonl"]


def test_a_written_json_that_vouches_for_bad_rows_still_gets_the_usual_message(tmp_path: Path) -> None:
    """written.json is itself a file in the run folder: recomputed over rows that do not read
    back, the rows are still read under validation and the bad one named."""
    run_id = replicate_run(tmp_path, 20, seed=2)
    run_dir = tmp_path / "runs" / run_id
    lines = (run_dir / "raw.jsonl").read_bytes().splitlines(keepends=True)
    lines[3] = b'{"role": "source"}\n'
    (run_dir / "raw.jsonl").write_bytes(b"".join(lines))
    record_written(run_dir)
    assert written_intact(run_dir)
    with pytest.raises(InputError, match=r"raw\.jsonl:4"):
        evaluate_saved_run(run_id, config=Config(), base=tmp_path)
