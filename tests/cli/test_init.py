"""`evalshift init`: seed 001's capture-first evalshift.yaml, commented, never clobbered."""

from __future__ import annotations

from cli_support import assert_user_error
from hypothesis import given, settings
from hypothesis import strategies as st
from ruamel.yaml import YAML

from evalshift_core.config._config import load_config, parse_config
from evalshift_core.config._init import render_template
from evalshift_core.evaluators import build_evaluators


def test_init_writes_seed_001_capture_first_config(cli, tmp_path):
    """Seed 001, Configuration: "version: 1 / prompts: - id: replay, detection: manual,
    content: "{input}", variables: [input] / defaults: source_model, target_model / evaluators:
    tool_selection: - name: routing, conformance: expected, divergence: set, severity_floor: high"."""
    out = cli("init")
    assert out.returncode == 0, out.stderr
    data = YAML(typ="safe").load((tmp_path / "evalshift.yaml").read_text())
    assert data["version"] == 1
    assert data["prompts"] == [{"id": "replay", "detection": "manual", "content": "{input}", "variables": ["input"]}]
    assert data["defaults"] == {"source_model": "gemini-2.5-flash", "target_model": "gemini-3.1-flash-lite-preview"}
    assert data["evaluators"] == {"tool_selection": [
        {"name": "routing", "conformance": "expected", "divergence": "set", "severity_floor": "high"}]}
    load_config(tmp_path / "evalshift.yaml")  # and our own loader accepts it


def test_init_explains_each_block_in_comments(cli, tmp_path):
    cli("init")
    lines = (tmp_path / "evalshift.yaml").read_text().splitlines()
    for key in ("version:", "prompts:", "defaults:", "evaluators:"):
        i = next(n for n, line in enumerate(lines) if line.startswith(key))
        assert lines[i - 1].startswith("#"), f"{key} has no comment above it"
    text = "\n".join(lines)
    assert "# tool_arguments:" in text and "# tool_trace_structure:" in text  # the seed's optional block


def test_init_takes_default_models(cli, tmp_path):
    out = cli("init", "--source-model", "openai:sim-baseline", "--target-model", "openai:sim-candidate")
    assert out.returncode == 0, out.stderr
    cfg = load_config(tmp_path / "evalshift.yaml")
    assert (cfg.defaults.source_model, cfg.defaults.target_model) == ("openai:sim-baseline", "openai:sim-candidate")


def test_init_refuses_to_overwrite_without_force(cli, tmp_path):
    (tmp_path / "evalshift.yaml").write_text("# mine\nversion: 1\n")
    assert_user_error(cli("init"), "evalshift.yaml", "--force")
    assert (tmp_path / "evalshift.yaml").read_text() == "# mine\nversion: 1\n"
    assert cli("init", "--force").returncode == 0
    assert "prompts:" in (tmp_path / "evalshift.yaml").read_text()


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=1, max_size=30).filter(lambda s: s.strip() == s and "\x00" not in s))
def test_any_model_name_is_written_so_it_reads_back(name):
    """A model name with YAML-special characters ('#', ': ', quotes) still reads back exactly."""
    text = render_template(source_model=f"openai:{name}", target_model="claude-x")
    assert parse_config(text).defaults.source_model == f"openai:{name}"


def _uncommented(text: str, first: str) -> str:
    """The template with the commented block starting at ``first`` uncommented (explanations stay)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == first)
    for i in range(start, len(lines)):
        stripped = lines[i].strip()
        if not stripped.startswith("# ") or (i > start and not lines[i].lstrip().startswith("#   ")):
            break
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = indent + lines[i].lstrip()[2:]
    return "\n".join(lines) + "\n"


def test_init_offers_tool_arguments_against_expected_commented_and_explained(cli, tmp_path):
    """Seed 000: "If your suite came from real captures, you have the ground truth; use
    `against: expected`." The block is there, every line commented, and the comment says why."""
    assert cli("init").returncode == 0
    text = (tmp_path / "evalshift.yaml").read_text()
    cfg = load_config(tmp_path / "evalshift.yaml")
    assert list(cfg.evaluators) == ["tool_selection"]  # commented out: loads without it
    block = text[text.index("# tool_arguments:"):text.index("# Optional — the shape of the loop")].splitlines()
    assert block and all(line.lstrip().startswith("#") for line in block if line.strip())
    explanation = text[:text.index("# tool_arguments:")].rsplit("# Optional", 1)[1]
    assert "against: expected" in explanation and "captures" in explanation

    uncommented = _uncommented(text, "# tool_arguments:")
    evaluators = build_evaluators(parse_config(uncommented).evaluators)
    args = [ev for ev in evaluators if ev.type_name == "tool_arguments"]
    assert [(ev.name, ev.against, ev.numeric_tolerance) for ev in args] == [("routing_args", "expected", 0.05)]


def test_init_providers_block_uncommented_routes_the_local_model_on_its_own():
    from evalshift_core.replay._routing import route, settings_for

    text = _uncommented(render_template(), "# providers:")
    providers = parse_config(text).providers
    assert settings_for(route("openai:my-local-model"), providers) == (
        "openai:my-local-model", {"api_key_env": "OPENAI_API_KEY", "rpm": 500, "base_url": "http://127.0.0.1:8000/v1"})
    assert settings_for(route("openai:gpt-4.1"), providers) == ("openai", {"api_key_env": "OPENAI_API_KEY", "rpm": 500})
