"""Fuzz: evalshift.yaml and Python tool modules. A full config with values mutated (or its text
cut and spliced) drives ``evaluate`` on a finished run; a Python module of tool lists drives
``tools sync``. Each exits 0 (every example scored; tools.json written inside the base) or 1
naming the file and line, never an internal error or a crash."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from fuzz_support import (
    FUZZ,
    TEXT_JUNK,
    assert_written_only_under,
    cli,
    files_under,
    mutate,
    mutate_text,
    to_json,
    user_outcome,
)
from hypothesis import given
from hypothesis import strategies as st
from ruamel.yaml import YAML
from test_fuzz_runs import EVALUATORS, _copy, _scored_every_example, finished  # noqa: F401 - the fixture

CONFIG = YAML(typ="safe", pure=True).load(EVALUATORS) | {
    "prompts": [{"id": "replay", "content": "{input}", "variables": ["input"]}],
    "defaults": {"source_model": "openai:a", "target_model": "anthropic:b"},
    "providers": {"openai": {"base_url": "http://127.0.0.1:9/v1", "api_key": "k"}},
}


@FUZZ
@given(data=st.data())
def test_evaluate_with_a_mutated_evalshift_yaml(finished, data):  # noqa: F811 - the fixture
    if data.draw(st.booleans(), label="by value"):
        text = to_json(mutate(data, CONFIG))  # JSON is YAML: any drawn value can be written
    else:
        from io import StringIO

        buffer = StringIO()
        YAML().dump(CONFIG, buffer)
        text = mutate_text(data, buffer.getvalue())
    with tempfile.TemporaryDirectory() as tmp:
        project, run_dir, run_id = _copy(finished, Path(tmp))
        (project / "evalshift.yaml").write_text(text)
        before = files_under(Path(tmp))
        out = cli("evaluate", run_id, cwd=project)
        assert_written_only_under(Path(tmp), before, project / ".evalshift")
        if user_outcome(out, "evalshift.yaml", "evalshift.yaml") != "user_error":
            from evalshift_core import load_config
            from evalshift_core.evaluators import build_evaluators

            if build_evaluators(load_config(project / "evalshift.yaml").evaluators):  # none is a valid choice
                _scored_every_example(run_dir)


MODULE = '''"""Tool definitions."""
import os

TOOLS = [
    {"name": "lookup_order", "description": "Look up an order.",
     "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
    {"type": "function", "function": {"name": "issue_refund", "description": "Refund.",
     "parameters": {"type": "object", "properties": {"amount_usd": {"type": "number", "minimum": -1.5}}},
     "strict": True}},
]
OTHER: list = [{"name": "notify", "description": 'Escalate.' "\\u00e9", "parameters": {"type": "object"}}]
'''
PY_JUNK = st.one_of(TEXT_JUNK, st.sampled_from([
    "(" * 300, "lambda: " * 200, "a" + ".b" * 5000, "-" * 500 + "1", "9" * 5000, "0x" + "f" * 40, '"a" ' * 3000,
    "os.system('x')", "**{}", "*[]", "{'name': 1}", "f'{x}'", "b'x'", "{1, 2}", "[x for x in y]", "\\", "\t",
    '{"name": "lookup_order", "description": "different"}',
]))


@FUZZ
@given(data=st.data())
def test_tools_sync_on_a_mutated_python_module(data):
    at = data.draw(st.integers(0, len(MODULE)), label="at")
    if data.draw(st.booleans(), label="insert"):
        source = MODULE[:at] + data.draw(PY_JUNK, label="junk") + MODULE[at:]
    else:
        source = mutate_text(data, MODULE)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "tools.py").write_text(source, encoding="utf-8", errors="surrogatepass")
        shutil.copy(Path(__file__).with_name("conftest.py"), work / "unrelated.py")
        (work / "evalshift.yaml").write_text("version: 1\nprompts:\n  - id: replay  # keep me\n")
        base = work / ".evalshift"
        before = files_under(work)
        out = cli("tools", "sync", "tools.py", cwd=work)
        allowed = base if out.code else work  # a successful sync also edits evalshift.yaml in place
        assert_written_only_under(work, before, allowed)
        if user_outcome(out, "tool files (Python)", "tools.py", line=False) != "user_error":
            tools = json.loads((base / "tools.json").read_text())
            assert tools and all(isinstance(t["name"], str) for t in tools)
            assert "# keep me" in (work / "evalshift.yaml").read_text()
