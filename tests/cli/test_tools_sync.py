"""`evalshift tools sync FILE.py`: literal tool lists out of Python, never importing it (seed 000)."""

from __future__ import annotations

import json
import textwrap

import pytest
from cli_support import assert_user_error
from hypothesis import given, settings
from hypothesis import strategies as st

from evalshift_core._exceptions import ConfigError
from evalshift_core.config._tools_sync import extract_tools, set_tools_path

# Raises the moment anyone imports it: tools sync must only parse it.
TOOL_DEFINITIONS = '''\
"""Tool definitions of the app."""
raise RuntimeError("tool_definitions.py was imported")

LOOKUP_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by id.",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}},
                           "required": ["order_id"]},
        },
    },
]

REFUND_TOOLS: list[dict] = [
    {
        "name": "issue_refund",
        "description": "Issue a refund on an existing order.",
        "input_schema": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "amount_usd": {"type": "number"}},
            "required": ["order_id", "amount_usd"],
        },
        "strict": True,
    },
]

TICKETS = [("not a tool", 1)]
ROUTES = [{"path": f"/{1}"}]
'''

COMMENTED_CONFIG = """\
# evalshift.yaml of the support team
version: 1   # format version

prompts:
  # the capture-first prompt
  - id: replay
    detection: manual
    content: "{input}"      # rendered user message
    variables: [input]

  - id: escalation          # second prompt, multi-line content
    content: |
      Escalate: {input}
    variables:
      - input
# trailing comment of prompts

defaults:
  source_model: openai:sim-baseline
  target_model: openai:sim-candidate
"""


@pytest.fixture
def project(tmp_path):
    (tmp_path / "tool_definitions.py").write_text(TOOL_DEFINITIONS)
    (tmp_path / "evalshift.yaml").write_text(COMMENTED_CONFIG)
    return tmp_path


def test_tools_sync_never_imports_the_file_and_merges_both_lists(cli, project):
    out = cli("tools", "sync", "tool_definitions.py")
    assert out.returncode == 0, out.stderr
    assert "was imported" not in out.stderr
    tools = json.loads((project / ".evalshift/tools.json").read_text())
    assert [t["name"] for t in tools] == ["lookup_order", "issue_refund"]
    assert tools[1]["strict"] is True and "strict" not in tools[0]  # strict only when set
    assert tools[0]["input_schema"]["required"] == ["order_id"]  # OpenAI shape normalised


def test_tools_sync_keeps_the_commented_config_byte_identical_apart_from_the_lines_it_sets(cli, project):
    """Seed 000: "sets tools_path: on your prompts in place, preserving comments and formatting"."""
    out = cli("tools", "sync", "tool_definitions.py")
    assert out.returncode == 0, out.stderr
    after = (project / "evalshift.yaml").read_text().splitlines(keepends=True)
    added = [line for line in after if "tools_path" in line]
    assert added == ["    tools_path: .evalshift/tools.json\n"] * 2
    assert "".join(line for line in after if "tools_path" not in line) == COMMENTED_CONFIG
    # Each line lands inside its own prompt: right after the last line of that prompt.
    assert after[after.index("    variables: [input]\n") + 1] == added[0]
    assert after[after.index("      - input\n") + 1] == added[1]
    second = cli("tools", "sync", "tool_definitions.py")  # a second sync is a no-op
    assert second.returncode == 0 and (project / "evalshift.yaml").read_text() == "".join(after)


def test_tools_sync_replaces_an_existing_tools_path_value_in_place(cli, project):
    config = COMMENTED_CONFIG.replace('    variables: [input]\n\n', '    variables: [input]\n    tools_path: "old.yaml"   # keep me\n\n')
    (project / "evalshift.yaml").write_text(config)
    out = cli("tools", "sync", "tool_definitions.py", "--prompt", "replay")
    assert out.returncode == 0, out.stderr
    assert (project / "evalshift.yaml").read_text() == config.replace('"old.yaml"', ".evalshift/tools.json")


def test_two_different_tools_sharing_a_name_abort_with_nothing_written(cli, project):
    clash = TOOL_DEFINITIONS + textwrap.dedent('''
        MORE = [{"name": "lookup_order", "description": "A different lookup.", "input_schema": {"type": "object"}}]
    ''')
    (project / "tool_definitions.py").write_text(clash)
    (project / ".evalshift").mkdir()
    (project / ".evalshift/tools.json").write_text("[]\n")
    line = assert_user_error(cli("tools", "sync", "tool_definitions.py"), "lookup_order", "nothing was written")
    more_line = clash.splitlines().index(next(x for x in clash.splitlines() if x.startswith("MORE"))) + 1
    assert line.startswith(f"error: tool_definitions.py:{more_line}: MORE[0]: ")
    assert (project / "evalshift.yaml").read_text() == COMMENTED_CONFIG
    assert (project / ".evalshift/tools.json").read_text() == "[]\n"


def test_identical_duplicates_collapse():
    source = TOOL_DEFINITIONS + "AGAIN = " + TOOL_DEFINITIONS.split("REFUND_TOOLS: list[dict] = ", 1)[1].split("\n\nTICKETS")[0] + "\n"
    found = extract_tools(source)
    assert [f.tool.name for f in found] == ["lookup_order", "issue_refund", "issue_refund"]
    from evalshift_core.config._tools_sync import dedupe

    assert [t.name for t in dedupe(found, file="x.py")] == ["lookup_order", "issue_refund"]


@pytest.mark.parametrize(
    ("value", "what"),
    [
        ('{"name": "t", "description": DESCRIPTION}', "the name 'DESCRIPTION'"),
        ('{"name": "t", "input_schema": dict(type="object")}', "a call"),
        ('{"name": f"t_{1}", "description": "x"}', "an f-string"),
        ('{"name": "t", "input_schema": {"type": "object", "required": [k for k in "ab"]}}', "a comprehension"),
        ('{"name": "t", "description": "x", **EXTRA}', "a ** unpacking"),
    ],
)
def test_computed_values_are_rejected_with_file_and_line(value, what):
    source = f"import os\n\nTOOLS = [\n    {value},\n]\n"
    with pytest.raises(ConfigError) as info:
        extract_tools(source, file="app/tools.py")
    assert str(info.value).startswith("app/tools.py:4: TOOLS[0]: ")
    assert what in str(info.value)


def test_a_computed_value_fails_the_command_with_one_line(cli, tmp_path):
    (tmp_path / "t.py").write_text('TOOLS = [\n    {"name": "t", "description": get_description()},\n]\n')
    assert_user_error(cli("tools", "sync", "t.py"), "t.py:2:", "a call")


def test_a_name_inside_a_tool_list_is_rejected_even_when_the_rest_is_literal():
    source = 'LOOKUP = {"name": "a"}\nTOOLS = [\n    LOOKUP,\n    {"name": "b", "description": "x"},\n]\n'
    with pytest.raises(ConfigError, match=r"^x\.py:3: TOOLS\[0\]: the name 'LOOKUP'"):
        extract_tools(source, file="x.py")


def test_only_module_level_lists_count():
    source = textwrap.dedent('''
        def build():
            TOOLS = [{"name": "inner", "description": "x"}]
            return TOOLS

        class Holder:
            TOOLS = [{"name": "in_class", "description": "x"}]
    ''')
    assert extract_tools(source) == []


def test_no_tool_list_is_a_clear_error(cli, tmp_path):
    (tmp_path / "empty.py").write_text("X = 1\n")
    assert_user_error(cli("tools", "sync", "empty.py"), "empty.py", "no module-level literal list of tool dicts")


def test_tools_sync_merges_into_an_existing_tools_json(cli, project):
    (project / ".evalshift").mkdir()
    (project / ".evalshift/tools.json").write_text(json.dumps([{"name": "notify_security_team", "input_schema": {"type": "object"}}]))
    out = cli("tools", "sync", "tool_definitions.py", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["added"] == ["lookup_order", "issue_refund"]
    names = [t["name"] for t in json.loads((project / ".evalshift/tools.json").read_text())]
    assert names == ["notify_security_team", "lookup_order", "issue_refund"]


# -- properties --------------------------------------------------------------------------------

_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                       st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12))
_json = st.recursive(_json_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)), max_leaves=8)
_tool = st.fixed_dictionaries(
    {"name": st.from_regex(r"[a-z][a-z_]{0,10}", fullmatch=True),
     "input_schema": st.fixed_dictionaries({"type": st.just("object"),
                                            "properties": st.dictionaries(st.text(max_size=6), _json, max_size=3)})},
    optional={"description": st.text(min_size=1, max_size=30), "strict": st.booleans()},
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_tool, min_size=1, max_size=4))
def test_extraction_reads_back_any_literal_tool_list(tools):
    """Whatever literal Python repr() writes, tools sync reads back to the same value."""
    found = extract_tools(f"# header\nTOOLS = {tools!r}\n")
    assert [f.tool.model_dump(exclude_none=True) for f in found] == [
        {k: v for k, v in t.items() if k != "description" or v} for t in tools
    ]


@settings(max_examples=60, deadline=None)
@given(
    comments=st.lists(st.sampled_from(["", "# note", "   # indented note", "#"]), min_size=6, max_size=6),
    prompt_ids=st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True), min_size=1, max_size=3, unique=True),
)
def test_set_tools_path_only_adds_lines(comments, prompt_ids):
    """Whatever comments and blank lines surround the prompts, only tools_path lines appear."""
    lines = ["version: 1", comments[0], "prompts:", comments[1]]
    for i, pid in enumerate(prompt_ids):
        lines += [f"  - id: {pid}   # prompt {i}", comments[2], "    content: '{input}'", comments[3]]
    lines += [comments[4], "defaults: {}", comments[5]]
    text = "\n".join(lines) + "\n"
    new, set_ids, _ = set_tools_path(text, ".evalshift/tools.json")
    assert set_ids == prompt_ids
    kept = [line for line in new.splitlines(keepends=True) if "tools_path:" not in line]
    assert "".join(kept) == text
    from evalshift_core.config._config import parse_config

    assert all(p.tools_path == ".evalshift/tools.json" for p in parse_config(new).prompts)


@settings(max_examples=80, deadline=None)
@given(st.text(min_size=1, max_size=40).filter(lambda s: s.strip() == s and "\x00" not in s))
def test_any_tools_path_value_reads_back(value):
    """The scalar tools sync writes (plain when safe, else quoted) reads back as the same string."""
    from evalshift_core.config._config import parse_config

    new, _, _ = set_tools_path("prompts:\n  - id: replay\n", value)
    assert parse_config(new).prompts[0].tools_path == value
