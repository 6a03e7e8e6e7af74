"""The other files under a base that anyone can edit: cached responses and the price table."""

from __future__ import annotations

import json

import pytest

from evalshift_core._exceptions import ConfigError
from evalshift_core.replay._cache import ResponseCache
from evalshift_core.replay._pricing import load_prices
from evalshift_core.replay.clients import ModelResponse, PreparedRequest


@pytest.mark.parametrize("entry", ['[]', '{"cache_version": 1}', '{"cache_version": 1, "response": 5}',
                                   '{"cache_version": 1, "response": {"tool_calls": [{"x": 1}]}}',
                                   '{"cache_version": 1, "response": {"input_tokens": "many"}}'])
def test_a_damaged_cache_entry_is_a_miss_then_overwritten(tmp_path, entry):
    cache = ResponseCache(tmp_path)
    request = PreparedRequest("openai", "m", {"messages": []}, "http://x")
    path = tmp_path / "cache" / request.cache_key()[:2] / f"{request.cache_key()}.json"
    path.parent.mkdir(parents=True)
    path.write_text(entry)
    assert cache.get(request) is None
    cache.put(request, ModelResponse(text="hi", tool_calls=[]))
    assert cache.get(request).text == "hi"


@pytest.mark.parametrize(("name", "text", "expected"), [
    ("prices.json", "[" * 3000, "prices.json:1: not valid JSON: depth limit exceeded"),
    ("prices.yaml", "openai:m: {input: " + "9" * 5000 + ", output: 1}\n",
     "prices.yaml:1: openai:m.input: is an integer outside the 64-bit range"),
    ("prices.json", json.dumps({"openai:m": {"input": "x"}}), "prices.json: openai:m: needs numeric"),
])
def test_a_damaged_price_table_is_a_config_error_naming_it(tmp_path, name, text, expected):
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError) as info:
        load_prices(tmp_path)
    assert str(info.value).startswith(f"{tmp_path}/{expected}"), str(info.value)
