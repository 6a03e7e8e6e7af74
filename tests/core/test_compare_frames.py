"""Comparison.scores_frame() / regressions_frame(): the run's scores and regressions as pandas tables."""

from __future__ import annotations

import subprocess
import sys

import pytest

from evalshift_core import Comparison, EvalShiftError, analyze
from evalshift_core._io import atomic_write_jsonl

SCORES = [
    {"example_id": "sec", "evaluator": "tool_selection", "name": "routing", "side": "conformance",
     "source_score": 1.0, "target_score": 0.0, "skipped": False, "labels": ["TOOL_SELECTION_DRIFT"],
     "metadata": {"expected": ["notify_security_team"], "source": ["notify_security_team"], "target": []}},
    {"example_id": "ok", "evaluator": "tool_selection", "name": "routing", "side": "conformance",
     "source_score": 1.0, "target_score": 1.0, "skipped": False, "labels": [], "metadata": {}},
]


@pytest.fixture
def comparison(tmp_path) -> Comparison:
    atomic_write_jsonl(tmp_path / "scores.jsonl", SCORES)
    atomic_write_jsonl(tmp_path / "examples.jsonl", [{"id": "sec", "tags": ["security"]}, {"id": "ok", "tags": []}])
    return Comparison(run_id="r1", run_dir=tmp_path, analysis=analyze(SCORES), report_path=tmp_path / "report.html")


def test_scores_frame_has_a_row_per_score_with_tags_and_difference(comparison):
    frame = comparison.scores_frame()
    assert list(frame["example_id"]) == ["sec", "ok"]
    assert list(frame["difference"]) == [-1.0, 0.0]
    assert frame.loc[0, "tags"] == ["security"] and frame.loc[0, "labels"] == ["TOOL_SELECTION_DRIFT"]


def test_regressions_frame_lists_what_regressed(comparison):
    frame = comparison.regressions_frame()
    assert list(frame["example_id"]) == ["sec"]
    assert frame.loc[0, "tools"] == ["notify_security_team"] and frame.loc[0, "tags"] == ["security"]


def test_without_pandas_the_frames_say_which_extra_to_install(comparison, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # what an environment without pandas looks like
    with pytest.raises(EvalShiftError, match=r"pip install 'evalshift\[pandas\]'"):
        comparison.scores_frame()


def test_importing_the_library_does_not_import_pandas():
    code = "import sys, evalshift_core; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
