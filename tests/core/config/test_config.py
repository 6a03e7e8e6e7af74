"""evalshift.yaml validation: every error names the file, the line and the field."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalshift_core._exceptions import ConfigError
from evalshift_core.config._config import load_config, parse_config
from evalshift_core.config._init import render_template


def _error(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, file="evalshift.yaml")
    return str(info.value)


def test_typo_in_a_prompt_key_names_line_field_and_nearest_key():
    text = "version: 1\nprompts:\n  - id: replay\n    contnet: '{input}'\n"
    assert _error(text) == ("evalshift.yaml:4: prompts[0].contnet: unknown key 'contnet'; "
                            "did you mean 'content'?")


def test_typo_in_a_top_level_key():
    assert _error("version: 1\n\ndefualts:\n  source_model: gpt-4o\n").startswith(
        "evalshift.yaml:3: defualts: unknown key 'defualts'; did you mean 'defaults'?")


def test_typo_in_migration_policy_key():
    msg = _error("migration_policy:\n  max_tool_argument_drif: 0.01\n")
    assert msg.startswith("evalshift.yaml:2: migration_policy.max_tool_argument_drif: unknown key")
    assert "did you mean 'max_tool_argument_drift'?" in msg


def test_unknown_evaluator_type_is_an_error_not_silence():
    """Issue: "unknown evaluator types are errors, not silence"."""
    text = "evaluators:\n  tool_selection:\n    - name: a\n  tool_selecton:\n    - name: b\n"
    msg = _error(text)
    assert msg.startswith("evalshift.yaml:4: evaluators.tool_selecton: unknown evaluator type 'tool_selecton'")
    assert "did you mean 'tool_selection'?" in msg


def test_bad_evaluator_option_points_at_its_instance():
    text = "evaluators:\n  tool_selection:\n    - name: routing\n      conformance: expectd\n"
    msg = _error(text)
    assert msg.startswith("evalshift.yaml:")
    assert "expectd" in msg and "evaluators.tool_selection" in msg


def test_wrong_type_names_the_field_and_line():
    assert _error("version: 1\nprompts:\n  - id: replay\n    variables: 3\n").startswith(
        "evalshift.yaml:4: prompts[0].variables: ")


def test_missing_prompt_id():
    assert _error("prompts:\n  - content: '{input}'\n") == "evalshift.yaml:2: prompts[0].id: required key is missing"


def test_unroutable_default_model():
    assert "cannot tell which provider" in _error("defaults:\n  target_model: mystery-model\n")


def test_content_using_an_undeclared_variable():
    assert "{ticket}" in _error("prompts:\n  - id: a\n    content: '{ticket}'\n    variables: [input]\n")


def test_yaml_syntax_error_has_a_line():
    assert _error("version: 1\nprompts:\n  - id: [unclosed\n").startswith("evalshift.yaml:")


def test_newer_version_is_refused():
    assert "newer" in _error("version: 2\n")


def test_unknown_provider_suggests():
    assert "did you mean 'openai'?" in _error("providers:\n  opneai: {base_url: http://x}\n")


def test_missing_default_file_means_defaults(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert load_config().prompts[0].id == "replay"
    with pytest.raises(ConfigError, match="file not found"):
        load_config(tmp_path / "nope.yaml")


def test_the_init_template_is_valid():
    cfg = parse_config(render_template())
    assert cfg.template_for("any-prompt-id") == "{input}"


def test_typo_in_an_evaluator_option_names_its_line_and_nearest_option():
    text = "evaluators:\n  tool_selection:\n    - name: routing\n      conformnce: expected\n"
    assert _error(text) == ("evalshift.yaml:4: evaluators.tool_selection[0].conformnce: unknown tool_selection "
                            "option 'conformnce'; did you mean 'conformance'?")


def test_two_evaluators_with_one_name_are_refused_at_load():
    text = "evaluators:\n  tool_selection:\n    - name: a\n    - name: a\n"
    assert "named 'a'" in _error(text)


def test_a_missing_tool_file_fails_at_load_naming_the_tools_path_line(tmp_path):
    config = tmp_path / "evalshift.yaml"
    config.write_text("prompts:\n  - id: replay\n    tools_path: tools.yaml\n")
    with pytest.raises(ConfigError) as info:
        load_config(config)
    assert str(info.value).startswith(f"{config}:3: prompts[0].tools_path: tool file tools.yaml not found")
    (tmp_path / "tools.yaml").write_text("- name: lookup_order\n- description: nameless\n")
    with pytest.raises(ConfigError, match=r"tools\.yaml:2: tools\[1\]: "):
        load_config(config)
    (tmp_path / "tools.yaml").write_text("- name: lookup_order\n")
    assert load_config(config).prompts[0].tools_path == "tools.yaml"


SEED_001_CONFIG = """\
version: 1
prompts:
  - id: replay
    detection: manual
    content: "{input}"
    variables: [input]

defaults:
  source_model: gemini-2.5-flash
  target_model: gemini-3.1-flash-lite-preview

evaluators:
  tool_selection:
    - name: routing
      conformance: expected         # each side vs example.expected_tools
      divergence: set               # target vs source, Jaccard on names
      severity_floor: high

  # Optional — enable as needed:
  # tool_arguments:
  #   - name: routing_args
  # tool_trace_structure:
  #   - name: routing_structure
"""


def test_seed_001_minimal_agent_config_loads_as_written():
    """Seed 001, Configuration: "A minimal agent config:" — verbatim."""
    cfg = parse_config(SEED_001_CONFIG)
    assert (cfg.defaults.source_model, cfg.defaults.target_model) == ("gemini-2.5-flash", "gemini-3.1-flash-lite-preview")
    assert cfg.prompts[0].model_dump() == {"id": "replay", "detection": "manual", "content": "{input}",
                                           "variables": ["input"], "tools_path": None}
    assert cfg.evaluators == {"tool_selection": [{"name": "routing", "conformance": "expected", "divergence": "set",
                                                  "severity_floor": "high"}]}


def test_seed_000_agent_trace_block_loads():
    """Seed 000: the agent_trace safety block, verbatim."""
    cfg = parse_config("evaluators:\n  agent_trace:\n    - name: safety\n      check_missing_verification: true\n"
                       "      verification_tools: [confirm_with_user]\n"
                       "      dangerous_tools: [delete_record, transfer_funds]\n")
    assert cfg.evaluators["agent_trace"][0]["dangerous_tools"] == ["delete_record", "transfer_funds"]


@settings(max_examples=50, deadline=None)
@given(
    prompts=st.integers(1, 5),
    bad=st.data(),
    comments=st.lists(st.sampled_from(["", "# c", "  # indented"]), min_size=5, max_size=5),
)
def test_the_error_line_is_the_line_of_the_bad_key(prompts, bad, comments):
    """Wherever an unknown key sits among prompts, comments and blank lines, the error names its line."""
    target = bad.draw(st.integers(0, prompts - 1))
    lines = [comments[0], "version: 1", comments[1], "prompts:"]
    bad_line = 0
    for i in range(prompts):
        lines += [f"  - id: p{i}", comments[2], "    content: '{input}'"]
        if i == target:
            lines.append("    tols_path: x.yaml")
            bad_line = len(lines)
        lines.append(comments[3])
    lines += ["defaults: {}", comments[4]]
    msg = _error("\n".join(lines) + "\n")
    assert msg.startswith(f"evalshift.yaml:{bad_line}: prompts[{target}].tols_path: unknown key 'tols_path'; "
                          "did you mean 'tools_path'?")
