"""Progress on the long steps (load, score, analyse, render): tqdm bars on stderr after ~2 s."""

from __future__ import annotations

import time

import pytest

from evalshift_core import _progress
from evalshift_core._compare import evaluate_and_report
from evalshift_core._io import atomic_write_json, atomic_write_jsonl
from evalshift_core._models import Call, Example, ToolCall, ToolTrace
from evalshift_core.config._config import Config
from evalshift_core.report._report import render_run_report
from evalshift_core.store._runs import load_run

CONFIG = Config.model_validate({"evaluators": {"tool_selection": [{"name": "routing", "conformance": "expected"}]}})


def _run_on_disk(base, n: int = 12) -> list[Example]:
    run_dir = base / "runs" / "run-1"
    examples = [Example(id=f"e{i}", inputs={"input": "x"}, expected_tools=[{"tool_name": "lookup_order"}])
                for i in range(n)]
    trace = ToolTrace(calls=[ToolCall(tool_name="lookup_order")])
    calls = [Call(example_id=e.id, role=role, model=f"openai:{role}", trace=trace)
             for e in examples for role in ("source", "target")]
    atomic_write_json(run_dir / "run.json", {"run_id": "run-1", "source_model": "openai:source",
                                             "target_model": "openai:target"})
    atomic_write_jsonl(run_dir / "examples.jsonl", [e.model_dump(mode="json", exclude_none=True) for e in examples])
    atomic_write_jsonl(run_dir / "raw.jsonl", [c.model_dump(mode="json", exclude_none=True) for c in calls])
    return examples


@pytest.fixture
def bars_at_once(monkeypatch):
    """Every bar drawn at once, as if each step had already run for longer than the delay."""
    monkeypatch.setattr(_progress, "PROGRESS_DELAY_S", 0.0)
    monkeypatch.setattr(_progress, "progress_enabled", lambda: True)


def test_load_score_and_render_each_show_a_bar_on_stderr(bars_at_once, tmp_path, capsys):
    _run_on_disk(tmp_path)
    manifest, examples, calls = load_run(tmp_path, "run-1")
    assert "load run-1" in capsys.readouterr().err
    evaluate_and_report(tmp_path / "runs" / "run-1", manifest, examples, calls, CONFIG)
    err = capsys.readouterr().err
    for step in ("write scores", "analyse", "build report", "write report"):
        assert step in err, step
    render_run_report(tmp_path, "run-1")
    err = capsys.readouterr().err
    for step in ("load run-1", "load scores", "build report", "write report"):
        assert step in err, step


def test_a_bar_counts_every_row_and_its_total_is_the_files_lines(bars_at_once, tmp_path):
    _run_on_disk(tmp_path, n=7)
    run_dir = tmp_path / "runs" / "run-1"
    total = sum(_progress.count_lines(run_dir / f) for f in ("examples.jsonl", "raw.jsonl"))
    assert total == 21  # 7 examples + 14 Call rows
    with _progress.progress_bar(total, "rows") as bar:
        assert list(_progress.counted(range(total), bar)) == list(range(total))
        assert bar.n == total


def test_a_step_shorter_than_the_delay_draws_nothing(monkeypatch, capsys):
    monkeypatch.setattr(_progress, "progress_enabled", lambda: True)
    assert list(_progress.tracked(range(5), 5, "quick")) == [0, 1, 2, 3, 4]
    assert "quick" not in capsys.readouterr().err


def test_a_step_longer_than_the_delay_draws_its_bar(monkeypatch, capsys):
    monkeypatch.setattr(_progress, "progress_enabled", lambda: True)
    monkeypatch.setattr(_progress, "PROGRESS_DELAY_S", 0.05)

    def slow():
        for i in range(3):
            time.sleep(0.05)
            yield i

    assert list(_progress.tracked(slow(), 3, "slow step")) == [0, 1, 2]
    assert "slow step" in capsys.readouterr().err


def test_without_a_terminal_there_is_no_bar(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(_progress, "PROGRESS_DELAY_S", 0.0)
    _run_on_disk(tmp_path)
    load_run(tmp_path, "run-1")  # capsys's stderr is not a terminal
    assert capsys.readouterr().err == ""
