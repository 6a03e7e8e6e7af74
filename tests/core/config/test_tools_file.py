"""Tool files at a prompt's tools_path: YAML or JSON, flat or {"tools": [...]}, shapes mixed (seed 000)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalshift_core._exceptions import ConfigError
from evalshift_core._models import Example, Tool
from evalshift_core.config._config import Config, Prompt
from evalshift_core.config._tools_file import apply_prompt_tools, load_tools_file

ANTHROPIC_YAML = """\
# Anthropic-shape
- name: issue_refund
  description: Issue a refund on an existing order.
  input_schema:
    type: object
    properties:
      order_id:   {type: string}
      amount_usd: {type: number}
    required: [order_id, amount_usd]
  strict: true      # optional
"""

OPENAI_TOOL = {
    "type": "function",
    "function": {
        "name": "issue_refund",
        "description": "Issue a refund on an existing order.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"},
                                                        "amount_usd": {"type": "number"}},
                       "required": ["order_id", "amount_usd"]},
        "strict": True,
    },
}


def test_anthropic_yaml_and_openai_json_are_the_same_toolset(tmp_path):
    """Seed 001: "# OpenAI-shape (equivalent)" — both shapes name the same toolset."""
    (tmp_path / "a.yaml").write_text(ANTHROPIC_YAML)
    (tmp_path / "o.json").write_text(json.dumps({"tools": [OPENAI_TOOL]}))
    a, o = load_tools_file(tmp_path / "a.yaml"), load_tools_file(tmp_path / "o.json")
    assert a.canonical() == o.canonical()
    assert a.ref == o.ref
    assert a.tools[0].strict is True


def test_shapes_mix_freely_in_one_file(tmp_path):
    lookup = {"name": "lookup_order", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}
    (tmp_path / "mixed.json").write_text(json.dumps([lookup, OPENAI_TOOL]))
    assert [t.name for t in load_tools_file(tmp_path / "mixed.json").tools] == ["lookup_order", "issue_refund"]


def test_a_bad_tool_names_file_line_and_field(tmp_path):
    (tmp_path / "bad.yaml").write_text("tools:\n  - name: ok\n  - description: no name here\n")
    with pytest.raises(ConfigError) as info:
        load_tools_file(tmp_path / "bad.yaml")
    assert str(info.value).startswith(f"{tmp_path / 'bad.yaml'}:3: tools[1]: ")


def test_invalid_json_has_a_line(tmp_path):
    (tmp_path / "bad.json").write_text('[\n  {"name": "a"},\n  {"name": }\n]\n')
    with pytest.raises(ConfigError, match=r"bad\.json:3: not valid JSON"):
        load_tools_file(tmp_path / "bad.json")


def test_different_tools_sharing_a_name_are_refused(tmp_path):
    (tmp_path / "dup.yaml").write_text("- name: a\n  description: one\n- name: a\n  description: two\n")
    with pytest.raises(ConfigError, match="two different tools are named 'a'"):
        load_tools_file(tmp_path / "dup.yaml")


def test_prompt_tools_fill_only_examples_without_a_toolset(tmp_path):
    """Seed 000: "A prompt becomes an agent prompt when its tools_path is set"; an example's own
    toolset_ref or tools ([] included) still wins (seed 001)."""
    (tmp_path / "tools.yaml").write_text(ANTHROPIC_YAML)
    cfg = Config(prompts=[Prompt(id="replay", tools_path="tools.yaml")])
    ref = "sha256:" + "ab" * 32
    examples = [Example(id="bare"), Example(id="none", tools=[]), Example(id="ref", toolset_ref=ref)]
    out = apply_prompt_tools(examples, cfg, config_dir=tmp_path)
    assert [t.name for t in out[0].tools] == ["issue_refund"]
    assert out[1].tools == [] and out[2].tools is None and out[2].toolset_ref == ref


# The test's own YAML writer folds control characters and line separators (NEL reads back as a
# space), so descriptions stay within what a YAML dump round-trips; the reader is not the question.
_DESCRIPTION = st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), min_size=1, max_size=20)
_schema = st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(
    st.from_regex(r"[a-z_]{1,8}", fullmatch=True), st.fixed_dictionaries({"type": st.sampled_from(["string", "number"])}),
    max_size=3)})
_tool = st.fixed_dictionaries({"name": st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True), "input_schema": _schema},
                              optional={"description": _DESCRIPTION, "strict": st.booleans()})


def _openai_shape(tool: dict) -> dict:
    fn = {"name": tool["name"], "parameters": tool["input_schema"]}
    fn.update({k: tool[k] for k in ("description", "strict") if k in tool})
    return {"type": "function", "function": fn}


@settings(max_examples=40, deadline=None)
@given(tools=st.lists(_tool, min_size=1, max_size=4, unique_by=lambda t: t["name"]),
       shapes=st.lists(st.booleans(), min_size=4, max_size=4), as_yaml=st.booleans(), wrapped=st.booleans())
def test_any_mix_of_shapes_and_formats_reads_as_the_same_toolset(tmp_path_factory, tools, shapes, as_yaml, wrapped):
    import io

    from ruamel.yaml import YAML

    mixed = [_openai_shape(t) if shapes[i] else t for i, t in enumerate(tools)]
    value = {"tools": mixed} if wrapped else mixed
    path = tmp_path_factory.mktemp("tools") / ("tools.yaml" if as_yaml else "tools.json")
    if as_yaml:
        buf = io.StringIO()
        YAML(typ="safe", pure=True).dump(value, buf)
        path.write_text(buf.getvalue())
    else:
        path.write_text(json.dumps(value))
    assert load_tools_file(path).canonical() == [Tool.model_validate(t).canonical() for t in tools]


def test_the_library_compare_offers_a_prompts_tools_path_tools(tmp_path, demo_simulator):
    """Library first: ``evalshift_core.compare()`` fills toolsets from ``tools_path`` exactly as
    ``evalshift compare`` does, relative to the config file's folder."""
    import evalshift_core
    from evalshift_core.config._config import load_config
    project = tmp_path / "project"
    project.mkdir()
    (project / "tools.yaml").write_text(ANTHROPIC_YAML)
    (project / "evalshift.yaml").write_text("version: 1\nprompts:\n  - id: replay\n    tools_path: tools.yaml\n")
    cfg = load_config(project / "evalshift.yaml")
    assert cfg.tools_dir == project.resolve()
    examples = [Example(id="e1", prompt_id="replay", inputs={"input": "refund order A1, 12 dollars"})]
    sim = demo_simulator
    cfg.providers["openai"] = {"base_url": sim.openai_base_url, "api_key": "sk-test"}
    evalshift_core.compare(examples, source="openai:sim-baseline", target="openai:sim-candidate", config=cfg,
                           out_dir=tmp_path / ".evalshift")
    offered = [[t["function"]["name"] for t in r["body"].get("tools", [])] for r in sim.requests]
    assert offered == [["issue_refund"], ["issue_refund"]]
