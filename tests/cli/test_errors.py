"""Every command on bad input: one line on stderr, exit code 1, never a traceback (design.md)."""

from __future__ import annotations

import json

import pytest
from cli_support import assert_user_error

BAD_CONFIG = "version: 1\nprompts:\n  - id: replay\n    contnet: '{input}'\n"

CASES = [
    (["init", "--source-model", "mystery-model"], "cannot tell which provider"),
    (["capture", "sync", "no-such-dir"], "no captures at no-such-dir"),
    (["capture", "promote", "missing.jsonl"], "missing.jsonl: capture file not found"),
    (["capture", "sync", "--rounds", "some"], "'some' is not one of"),
    (["run", "--suite-name", "nope", "--from", "openai:a", "--to", "openai:b"], "no suite 'nope'"),
    (["run", "--suite-name", "x", "--to", "openai:b"], "no source model"),
    (["evaluate", "no-such-run"], "no run 'no-such-run'"),
    (["compare", "--suite-name", "nope", "--from", "openai:a", "--to", "openai:b"], "no suite 'nope'"),
    (["compare", "--suite-name", "x", "--from", "mystery", "--to", "openai:b"], "cannot tell which provider"),
    (["compare", "--suite-name", "x", "--to", "openai:b", "--config", "bad.yaml"],
     "bad.yaml:4: prompts[0].contnet: unknown key 'contnet'; did you mean 'content'?"),
    (["compare", "--sute-name", "x"], "No such option"),
    (["traces", "import", "r1", "--source", "s.jsonl", "--target", "t.jsonl"], "s.jsonl: traces file not found"),
    (["traces", "import", "r1"], "Missing option '--source'"),
    (["tools", "sync", "missing.py"], "missing.py: file not found"),
    (["tools", "sync", "broken.py"], "broken.py:1: not valid Python"),
    (["report", "no-such-run"], "no run 'no-such-run'"),
    (["simulator", "--scripts", "missing.yaml"], "missing.yaml: scripts file not found"),
    (["demo", "--base"], "requires an argument"),
    (["demo", "--base", "bad.yaml"], "Not a directory"),
    (["no-such-command"], "No such command"),
]


@pytest.mark.parametrize(("args", "needle"), CASES, ids=[" ".join(a) for a, _ in CASES])
def test_bad_input_is_one_line_and_exit_1(cli, tmp_path, args, needle):
    (tmp_path / "bad.yaml").write_text(BAD_CONFIG)
    (tmp_path / "broken.py").write_text("TOOLS = [\n")
    assert_user_error(cli(*args), needle)


def test_invalid_evalshift_yaml_in_the_folder_is_reported_by_every_config_reader(cli, tmp_path):
    (tmp_path / "evalshift.yaml").write_text(BAD_CONFIG)
    for args in (["compare", "--suite-name", "s", "--to", "openai:b"], ["evaluate", "r"], ["tools", "sync", "x.py"]):
        (tmp_path / "x.py").write_text('TOOLS = [{"name": "a", "description": "b"}]\n')
        assert_user_error(cli(*args), "evalshift.yaml:4:")


def test_a_corrupt_suite_line_is_reported_with_file_and_line_and_the_rest_replays(cli, tmp_path):
    suites = tmp_path / ".evalshift" / "suites"
    suites.mkdir(parents=True)
    (suites / "s.jsonl").write_text('{"id": "a", "inputs": {"input": "hi"}}\n{"id": \n')
    out = cli("run", "--suite-name", "s", "--from", "openai:a", "--to", "openai:b")
    assert "warning: .evalshift/suites/s.jsonl:2: not valid suite example" in out.stderr
    assert "replaying 1 examples of s" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_suite_of_bad_lines_only_is_an_error_naming_the_first(cli, tmp_path):
    suites = tmp_path / ".evalshift" / "suites"
    suites.mkdir(parents=True)
    (suites / "s.jsonl").write_text('{"id": \n{"id": "b", "history": ["hi"]}\n')
    out = cli("run", "--suite-name", "s", "--from", "openai:a", "--to", "openai:b")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    warnings, error = out.stderr.splitlines()[:-1], out.stderr.splitlines()[-1]
    assert warnings == ["warning: .evalshift/suites/s.jsonl:1: not valid suite example: unexpected end of data "
                        "(line skipped)",
                        "warning: .evalshift/suites/s.jsonl:2: history[0]: Input should be a valid dictionary "
                        "(line skipped)"]
    assert error.startswith("error: no valid example: all 2 line(s) are bad; first: .evalshift/suites/s.jsonl:1")


def test_under_json_an_error_is_also_a_json_document_on_stdout(cli):
    out = cli("capture", "sync", "no-such-dir", "--json")
    assert_user_error(out, "no captures at no-such-dir")
    assert json.loads(out.stdout) == {"error": "no captures at no-such-dir: run your agent with EVALSHIFT_CAPTURE=1 "
                                               "first", "exit_code": 1}
