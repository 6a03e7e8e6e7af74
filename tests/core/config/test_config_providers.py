"""``providers:`` in evalshift.yaml: by provider or by model, routed through the real SDKs."""

from __future__ import annotations

import pytest

from evalshift_core import Example, compare
from evalshift_core._exceptions import ConfigError
from evalshift_core.config._config import load_config, parse_config
from evalshift_core.simulator import Simulator, load_scripts

SCRIPTS = {
    "hosted-model": [{"when": {}, "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}]}}],
    "my-model": [{"when": {}, "reply": {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}]}}],
}
TOOLS = [{"name": "lookup_order", "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}}}]


def _examples(n: int) -> list[Example]:
    return [Example(id=f"ex{i}", inputs={"input": f"refund order {i}"}, tools=TOOLS) for i in range(n)]


def _error(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_config(text, file="evalshift.yaml")
    return str(info.value)


def test_a_model_entry_routes_that_model_to_its_own_server_and_the_other_to_the_provider_entry(tmp_path, monkeypatch):
    """The local OpenAI-compatible server (vLLM, Ollama) gets only `my-model`; hosted gets the rest."""
    monkeypatch.setenv("HOSTED_KEY", "sk-hosted")
    monkeypatch.setenv("LOCAL_KEY", "sk-local")
    for var in ("OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    with Simulator(load_scripts(SCRIPTS)) as hosted, Simulator(load_scripts(SCRIPTS)) as local:
        path = tmp_path / "evalshift.yaml"
        path.write_text(
            "version: 1\n"
            "defaults:\n  source_model: openai:hosted-model\n  target_model: openai:my-model\n"
            "providers:\n"
            f"  openai:\n    base_url: {hosted.openai_base_url}\n    api_key_env: HOSTED_KEY\n"
            "    headers: {x-team: support}\n    rpm: 6000\n    concurrency: 2\n"
            f"  \"openai:my-model\":\n    base_url: {local.openai_base_url}\n    api_key_env: LOCAL_KEY\n"
        )
        config = load_config(path)
        result = compare(_examples(3), source=config.defaults.source_model, target=config.defaults.target_model,
                         config=config, out_dir=tmp_path / ".evalshift")
        hosted_models = [r["model"] for r in hosted.served()]
        local_models = [r["model"] for r in local.served()]
        local_headers = [r["headers"] for r in local.served()]
        hosted_headers = [r["headers"] for r in hosted.served()]
    assert hosted_models == ["hosted-model"] * 3
    assert local_models == ["my-model"] * 3
    assert all(c.error is None for c in result.calls) and len(result.calls) == 6
    # The model's entry goes over its provider's: base_url and key replaced, headers inherited.
    assert all(h.get("x-team") == "support" for h in hosted_headers + local_headers)
    assert "authorization" not in local_headers[0]  # the simulator does not log keys


def test_the_model_entry_takes_precedence_key_by_key():
    from evalshift_core.replay._routing import route, settings_for

    config = parse_config("providers:\n  openai: {base_url: http://a/v1, rpm: 60}\n"
                          "  openai:my-model: {base_url: http://b/v1}\n")
    assert settings_for(route("openai:my-model"), config.providers) == (
        "openai:my-model", {"base_url": "http://b/v1", "rpm": 60})
    assert settings_for(route("openai:gpt-4o"), config.providers) == ("openai", {"base_url": "http://a/v1", "rpm": 60})


def test_an_unknown_key_inside_an_entry_names_file_line_and_field():
    text = "version: 1\nproviders:\n  openai:my-model:\n    base_url: http://127.0.0.1:8000/v1\n    bse_url: x\n"
    assert _error(text) == ("evalshift.yaml:5: providers.openai:my-model.bse_url: unknown provider setting "
                            "'bse_url'; did you mean 'base_url'? (known: base_url, api_key, api_key_env, headers, "
                            "rpm, concurrency, max_concurrency, timeout, api)")


@pytest.mark.parametrize(("text", "expected"), [
    ("providers:\n  openai:\n    rpm: 0\n", "evalshift.yaml:3: providers.openai.rpm: must be a number above 0"),
    ("providers:\n  openai:\n    base_url:\n", "evalshift.yaml:3: providers.openai.base_url: must be a string, not empty"),
    ("providers:\n  openai:\n    concurrency: 1.5\n", "evalshift.yaml:3: providers.openai.concurrency: must be a whole"),
    ("providers:\n  openai:\n    headers: [a]\n", "evalshift.yaml:3: providers.openai.headers: must be a mapping"),
    ("providers:\n  anthropic:\n    api: responses\n", "evalshift.yaml:3: providers.anthropic.api: only openai"),
    ("providers:\n  openai: 3\n", "evalshift.yaml:2: providers.openai: must be a mapping of settings"),
    ("providers:\n  opneai:my-model: {}\n", "evalshift.yaml:2: providers.opneai:my-model: unknown provider 'opneai'; "
                                            "did you mean 'openai'?"),
    ("providers:\n  'openai:': {}\n", "evalshift.yaml:2: providers.openai:: 'openai:' names a provider but no model"),
])
def test_bad_entries_are_one_line_naming_the_field(text, expected):
    assert _error(text).startswith(expected)


def test_an_empty_model_entry_means_the_provider_settings():
    assert parse_config("providers:\n  openai:my-model:\n").providers == {"openai:my-model": {}}


def test_programmatic_configs_are_checked_too():
    from pydantic import ValidationError

    from evalshift_core.config._config import Config

    with pytest.raises(ValidationError, match="unknown provider setting 'bse_url'"):
        Config.model_validate({"providers": {"openai:m": {"bse_url": "x"}}})


def test_the_readme_local_server_example_loads_and_routes_as_it_says():
    from pathlib import Path

    from evalshift_core.replay._routing import route, settings_for

    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = readme.split("## Providers: hosted and local models", 1)[1]
    block = section.split("```yaml\n", 1)[1].split("```", 1)[0]
    config = parse_config(block, file="README.md")
    local = settings_for(route(config.defaults.target_model), config.providers)[1]
    hosted = settings_for(route(config.defaults.source_model), config.providers)[1]
    assert local["base_url"].startswith("http://127.0.0.1:") and local["concurrency"] == hosted["concurrency"]
    assert "base_url" not in hosted
