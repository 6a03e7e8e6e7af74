"""Each bad input the hardening pass found, through the installed entry point: exit 1 with one
line naming the file, line and field (never "internal error", never a crash), or for a suite
run, the bad line reported and every valid example replayed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_support import assert_user_error, run_cli

from evalshift_core import Example, compare
from evalshift_core.simulator import Simulator, load_scripts

SCRIPTS = {"sim-a": [{"when": {}, "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}]}}],
           "sim-b": [{"when": {}, "reply": {"text": "done"}}]}
TOOLS = [{"name": "lookup_order", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]


@pytest.fixture(scope="module")
def sim():
    with Simulator(load_scripts(SCRIPTS)) as server:
        yield server


@pytest.fixture(scope="module")
def evaluated_run(tmp_path_factory, sim) -> tuple[Path, str]:
    """A project folder holding one compared run (run.json, raw.jsonl, scores.jsonl, analysis.json)."""
    project = tmp_path_factory.mktemp("project")
    examples = [Example(id=f"e{i}", inputs={"input": f"where is order A{i}?"}, tools=TOOLS) for i in range(3)]
    result = compare(examples, source="openai:sim-a", target="openai:sim-b", out_dir=project / ".evalshift",
                     providers={"openai": {"base_url": sim.openai_base_url, "api_key": "sk-sim"}},
                     run_options={"progress": False})
    return project, result.run_id


def _copy(evaluated_run: tuple[Path, str], tmp_path: Path) -> tuple[Path, Path, str]:
    project, run_id = evaluated_run
    shutil.copytree(project, tmp_path / "p")
    return tmp_path / "p", tmp_path / "p" / ".evalshift" / "runs" / run_id, run_id


def _replace_line(path: Path, lineno: int, text: str) -> None:
    lines = path.read_text().splitlines()
    lines[lineno - 1] = text
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize(("row", "field"), [("[]", "each line must be a JSON object"),
                                            ("null", "each line must be a JSON object"),
                                            ('{"example_id": 1}', "example_id: Input should be a valid string")])
def test_report_on_a_bad_scores_row_names_file_line_field(evaluated_run, tmp_path, row, field):
    """Issue: `report` on a scores.jsonl row that is [], null or {"example_id": 1} was an internal error."""
    project, run_dir, run_id = _copy(evaluated_run, tmp_path)
    _replace_line(run_dir / "scores.jsonl", 2, row)
    assert_user_error(run_cli("report", run_id, cwd=project), f"scores.jsonl:2: {field}")


def test_evaluate_on_a_bad_raw_row_names_file_and_line(evaluated_run, tmp_path):
    """Issue: about 650 raw.jsonl errors read "error: Call: role: ..." with no file and no line."""
    project, run_dir, run_id = _copy(evaluated_run, tmp_path)
    row = json.loads((run_dir / "raw.jsonl").read_text().splitlines()[2])
    _replace_line(run_dir / "raw.jsonl", 3, json.dumps(dict(row, role="baseline")))
    assert_user_error(run_cli("evaluate", run_id, cwd=project),
                      "raw.jsonl:3: role: Input should be 'source' or 'target'")


def test_a_damaged_run_manifest_or_analysis_is_a_user_error(evaluated_run, tmp_path):
    project, run_dir, run_id = _copy(evaluated_run, tmp_path)
    (run_dir / "analysis.json").write_text('{"schema_version": 2, "verdict": "fail", "comparisons": [1]}')
    assert_user_error(run_cli("report", run_id, cwd=project), "analysis.json: comparisons.0")
    (run_dir / "run.json").write_text("[" * 3000)
    assert_user_error(run_cli("report", run_id, cwd=project), "run.json:1: not valid run manifest")


def test_a_run_id_walking_out_of_the_base_is_refused(tmp_path):
    """Issue: ``--run-id ../../X`` wrote a run folder outside .evalshift."""
    project = tmp_path / "deep" / "project"
    (project / ".evalshift" / "suites").mkdir(parents=True)
    (project / ".evalshift" / "suites" / "s.jsonl").write_text('{"id": "a", "inputs": {"input": "hi"}}\n')
    out = run_cli("run", "--suite-name", "s", "--from", "openai:a", "--to", "openai:b", "--run-id", "../../X",
                  cwd=project)
    assert_user_error(out, "run_id: run id '../../X' contains a path separator")
    assert not (tmp_path / "deep" / "X").exists() and not (project / ".evalshift" / "runs").exists()
    for command in (["evaluate", "../../X"], ["report", "../X"], ["evaluate", "/etc"]):
        assert_user_error(run_cli(*command, cwd=project), "run_id: run id")


def test_suite_values_that_crashed_the_replay_are_reported_at_load_and_the_rest_replays(sim, tmp_path):
    """Issue: history parts that are strings and ``generation_config.stop: 1.5`` validated, then
    crashed the replay; duplicate example ids were replayed twice. Each is now a bad line named
    with file:line:field, left out, and every valid example is replayed once."""
    suite = tmp_path / "s.jsonl"
    rows = [
        {"id": "ok1", "inputs": {"input": "where is A1?"}, "tools": TOOLS},
        {"id": "parts", "inputs": {"input": "x"}, "history": [{"role": "user", "parts": ["hello"]}]},
        {"id": "stop", "inputs": {"input": "x"}, "generation_config": {"stop": 1.5}},
        {"id": "ok1", "inputs": {"input": "again"}},
        {"id": "ok2", "inputs": {"input": "where is A2?"}, "tools": TOOLS},
        {"id": "ref", "inputs": {"input": "x"}, "toolset_ref": "sha256:../../outside"},
        {"id": "no-input", "inputs": {"ticket": "x"}},
        {"id": "no-sidecar", "inputs": {"input": "x"}, "toolset_ref": "sha256:" + "0" * 64},
    ]
    suite.write_text("".join(json.dumps(r) + "\n" for r in rows))
    env = {"OPENAI_BASE_URL": sim.openai_base_url, "OPENAI_API_KEY": "sk-sim"}
    out = run_cli("run", "--suite", str(suite), "--from", "openai:sim-a", "--to", "openai:sim-b", "--json",
                  cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stderr
    # sim-a and sim-b have no price: that warning is the pre-flight's, not a bad line's
    warnings = [line for line in out.stderr.splitlines()
                if line.startswith("warning:") and not line.startswith("warning: no price for")]
    assert warnings == [
        f"warning: {suite}:2: history[0].parts[0]: each part must be an object with a type, not a string (line skipped)",
        f"warning: {suite}:3: generation_config.stop: must be a string or a list of strings, not a number (line skipped)",
        f"warning: {suite}:4: id: example id 'ok1' appears twice, on lines 1 and 4 (line skipped)",
        f"warning: {suite}:6: toolset_ref: toolset_ref must be 'sha256:' followed by 64 lowercase hex digits (line skipped)",
        f"warning: {suite}:7: inputs: example 'no-input': prompt template needs 'input' (line skipped)",
        f"warning: {suite}:8: toolset_ref: example 'no-sidecar': toolset_ref sha256:{'0' * 64} has no sidecar at "
        f".evalshift/toolsets/{'0' * 64}.json (line skipped)",
    ]
    run_dir = Path(json.loads(out.stdout)["run_dir"])
    rows_out = [json.loads(line) for line in (tmp_path / run_dir / "raw.jsonl").read_text().splitlines()]
    assert sorted((r["example_id"], r["role"]) for r in rows_out) == [
        ("ok1", "source"), ("ok1", "target"), ("ok2", "source"), ("ok2", "target")]
    assert all(r.get("error") is None for r in rows_out)


YAML_CASES = [
    ("dangerous_tools", "version: 1\nevaluators:\n  agent_trace:\n    - name: s\n      dangerous_tools: 1\n",
     "evalshift.yaml:5: evaluators.agent_trace[0].dangerous_tools: must be a list of strings, not the number 1"),
    ("huge int", "version: " + "9" * 5000 + "\n", "evalshift.yaml:1: version: is an integer outside the 64-bit range"),
    ("2000 deep", "version: 1\nproviders: " + "[" * 2000 + "]" * 2000 + "\n",
     "evalshift.yaml:2: providers[0][0][0][0][0][0][0]...: nests deeper than 64 levels"),
    ("64-bit overflow", "version: 1\nmigration_policy:\n  min_examples: 99999999999999999999999\n",
     "evalshift.yaml:3: migration_policy.min_examples: is an integer outside the 64-bit range"),
    ("template attribute access", "version: 1\nprompts:\n  - id: p\n    content: '{input.__class__}'\n",
     "evalshift.yaml:3: prompts[0]: content uses {input.__class__}: only {name} and {name[key]} are allowed"),
]


@pytest.mark.parametrize(("name", "text", "expected"), YAML_CASES, ids=[c[0] for c in YAML_CASES])
def test_evalshift_yaml_values_that_were_internal_errors(tmp_path, name, text, expected):
    """Issue: a 4,300-digit integer, 2,000-deep brackets, a 64-bit overflow or ``dangerous_tools: 1``
    in evalshift.yaml were internal errors."""
    (tmp_path / "evalshift.yaml").write_text(text)
    assert_user_error(run_cli("compare", "--suite-name", "s", "--to", "openai:b", "--from", "openai:a",
                              cwd=tmp_path), expected)


TOOL_FILE_CASES = [
    ("tools.yaml", "- name: a\n  input_schema: {type: object, maximum: " + "9" * 5000 + "}\n",
     "tools.yaml:2: [0].input_schema.maximum: is an integer outside the 64-bit range"),
    ("tools.yaml", "- name: a\n  input_schema: " + "{a: " * 2000 + "1" + "}" * 2000 + "\n",
     "tools.yaml:2: [0].input_schema.a.a.a.a.a.a...: nests deeper than 64 levels"),
    ("tools.json", '[{"name": "a", "input_schema": ' + "[" * 2000 + "]" * 2000 + "}]",
     "tools.json:1: not valid JSON: depth limit exceeded"),
    ("tools.json", '[{"name": "a", "input_schema": {"type": "object"}},\n {"name": 5}]',
     "tools.json:2: tools[1]: a tool needs a non-empty string 'name'"),
    # A character JSON allows and YAML does not: the line is found in the JSON text itself.
    ("tools.json", '[{"name": "a\x7f"},\n\n {"name": ""}]', "tools.json:3: tools[1]: a tool needs"),
]


@pytest.mark.parametrize(("file", "text", "expected"), TOOL_FILE_CASES)
def test_tool_file_values_that_were_internal_errors(tmp_path, file, text, expected):
    (tmp_path / file).write_text(text)
    (tmp_path / "evalshift.yaml").write_text(f"version: 1\nprompts:\n  - id: replay\n    tools_path: {file}\n")
    assert_user_error(run_cli("compare", "--suite-name", "s", "--to", "openai:b", "--from", "openai:a",
                              cwd=tmp_path), expected)


@pytest.mark.parametrize(("source", "expected"), [
    ("TOOLS = [" + "(" * 5000 + ")" * 5000 + "]\n", "tools.py:1: not valid Python: too many nested parentheses"),
    ("TOOLS = " + "[" * 100_000 + "]" * 100_000 + "\n", "tools.py:1: not valid Python: too many nested parentheses"),
    ("TOOLS = [" + "lambda: " * 5000 + "1]\n", "tools.py: nests deeper than 100 levels"),
    ("TOOLS = [a" + ".b" * 100_000 + "]\n", "tools.py: nests deeper than 100 levels"),
    ('TOOLS = [{"name": "a", "x": ' + "-" * 300 + "1}]\n", "tools.py:1: nests deeper than 100 levels"),
    ('TOOLS = [{"name": "a", "description": "d", "input_schema": {"max": ' + "9" * 5000 + "}}]\n",
     "tools.py:1: not valid Python: Exceeds the limit (4300 digits) for integer string conversion"),
    ('TOOLS = [{"name": "a", "description": "d", "input_schema": {"max": ' + "9" * 30 + "}}]\n",
     "tools.py:1: TOOLS[0].input_schema.max: is an integer outside the 64-bit range"),
])
def test_tools_sync_refuses_input_past_its_nesting_limit_instead_of_crashing(tmp_path, source, expected):
    """Issue: `tools sync` died with exit 139 (libcst's native parser overflowed its stack) on
    5,000 nested parentheses or a 100k-deep list literal."""
    (tmp_path / "tools.py").write_text(source)
    assert_user_error(run_cli("tools", "sync", "tools.py", cwd=tmp_path), expected)
