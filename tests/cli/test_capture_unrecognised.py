"""`capture promote` on spans of a dialect nothing reads: one line says how many, and where."""

from __future__ import annotations

import json
from pathlib import Path

from _capture_agent import write_spans
from cli_support import run_cli


def _unknown_turns() -> list[dict]:
    """Two traces of an unknown dialect: a root with two children, and a lone root (4 spans)."""
    def span(trace: str, span: str, parent: str | None, start: int) -> dict:
        return {"traceId": trace * 32, "spanId": span * 16, **({"parentSpanId": parent * 16} if parent else {}),
                "name": "request", "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 10),
                "attributes": [{"key": "http.route", "value": {"stringValue": "/chat"}}]}
    return [span("a", "2", "1", 20), span("a", "3", "1", 30), span("a", "1", None, 10), span("b", "1", None, 40)]


def test_cli_prints_one_line_for_them(tmp_path: Path):
    unknown = tmp_path / "unknown.jsonl"
    write_spans(unknown, _unknown_turns(), scope="vendor")
    out = run_cli("capture", "promote", str(unknown), "--suite-name", "s", "--base", str(tmp_path / "b"), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "0 examples added" in out.stdout
    lines = [line for line in out.stderr.splitlines() if "recognised as no model call" in line]
    assert lines == [f"warning: 4 spans recognised as no model call: first at {unknown}:1 "
                     "(no evalshift, GenAI-semconv or OpenInference model-call span in their turn)"]
    as_json = run_cli("capture", "promote", str(unknown), "--suite-name", "s", "--base", str(tmp_path / "b"),
                      "--json", cwd=tmp_path)
    assert json.loads(as_json.stdout)["unrecognised_spans"] == 4
