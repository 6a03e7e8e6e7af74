"""Bounded parsing: depth, size, node count and number range give one message with file:line:field."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evalshift_core._exceptions import ConfigError, InputError
from evalshift_core._limits import (
    MAX_DEPTH,
    LimitError,
    check_value,
    format_path,
    load_json,
    load_yaml,
)


def _nested(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def test_format_path_names_keys_and_indexes_and_shortens_deep_ones():
    assert format_path(["prompts", 0, "id"]) == "prompts[0].id"
    assert format_path([0, "a"]) == "[0].a"
    assert format_path(["a"] + [0] * 20) == "a[0][0][0][0][0][0][0]..."


def test_check_value_known_answers():
    check_value({"a": [1, 2.5, "x", None, True, {"b": 2**63 - 1, "c": -(2**63)}]})
    check_value(_nested(MAX_DEPTH - 1))
    for value, path, message in [
        ({"a": [0, {"b": 2**64}]}, ["a", 1, "b"], "is an integer outside the 64-bit range"),
        ({"a": -(2**63) - 1}, ["a"], "is an integer outside the 64-bit range"),
        ({"x": float("nan")}, ["x"], "is not a finite number"),
        ({"x": [float("-inf")]}, ["x", 0], "is not a finite number"),
        ({"deep": _nested(MAX_DEPTH)}, ["deep"] + [0] * (MAX_DEPTH - 1), f"nests deeper than {MAX_DEPTH} levels"),
    ]:
        with pytest.raises(LimitError) as info:
            check_value(value)
        assert info.value.path == path and info.value.message == message


def test_check_value_counts_what_aliases_share():
    shared = ["x"] * 1000
    bomb = [shared] * 1000  # a YAML alias bomb builds exactly this: one list referenced many times
    with pytest.raises(LimitError, match="more than 1,000 values"):
        check_value([bomb], max_nodes=1000)


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=3),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                    max_leaves=12))
def test_check_value_agrees_with_a_recursive_definition(value):
    import math

    def ok(v, depth=0):
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return True
        if isinstance(v, int):
            return -(2**63) <= v <= 2**64 - 1
        if isinstance(v, float):
            return math.isfinite(v)
        if depth >= 4:
            return False
        children = v.values() if isinstance(v, dict) else v
        return all(ok(c, depth + 1) for c in children)

    try:
        check_value(value, max_depth=4)
        assert ok(value)
    except LimitError:
        assert not ok(value)


@pytest.mark.parametrize(("text", "expected"), [
    ("a: " + "[" * 2000 + "]" * 2000, "f.yaml:1: a[0][0][0][0][0][0][0]...: nests deeper than 64 levels"),
    ("a:\n  b: " + "9" * 5000 + "\n", "f.yaml:2: a.b: is an integer outside the 64-bit range"),
    ("a:\n  - 1\n  - " + "9" * 30 + "\n", "f.yaml:3: a[1]: is an integer outside the 64-bit range"),
    ("x: 18446744073709551616\n", "f.yaml:1: x: is an integer outside the 64-bit range"),
    ("x:\n  y: .inf\n", "f.yaml:2: x.y: is not a finite number"),
    ("x: [1, 2\n", "f.yaml:2: not valid YAML"),
    ("x: !!python/object:os.system {}\n", "f.yaml:1: not valid YAML"),
    ("a: 1\nb: \x1f\n", "f.yaml:2: not valid YAML: special characters are not allowed"),
    ('a:\n  b: "x\\ud800"\n', "f.yaml:2: a.b: is not valid Unicode (a lone surrogate)"),
])
def test_yaml_past_a_limit_is_one_line_with_file_line_field(text, expected):
    with pytest.raises(ConfigError) as info:
        load_yaml(text, file="f.yaml")
    assert str(info.value).startswith(expected), str(info.value)
    assert "\n" not in str(info.value)


def test_yaml_alias_bomb_is_refused_before_anything_walks_it():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    with pytest.raises(ConfigError, match="holds more than 1,000,000 values"):
        load_yaml("\n".join(lines) + "\n", file="bomb.yaml")


def test_yaml_and_json_size_limits():
    with pytest.raises(ConfigError, match="larger than 0 MiB"):
        load_yaml("a: 1\n", file="f.yaml", max_bytes=2)
    with pytest.raises(InputError, match="f.jsonl:3: suite line larger than"):
        load_json(b"[1]", file="f.jsonl", line=3, what="suite line", error=InputError, max_bytes=2)


@pytest.mark.parametrize(("data", "expected"), [
    (b"[" * 2000 + b"]" * 2000, "f.json:1: not valid JSON: depth limit exceeded"),
    (b'{"a": ' + b"[" * 70 + b"]" * 70 + b"}", "f.json:1: a[0][0][0][0][0][0][0]...: nests deeper than 64 levels"),
    (b'{"a": 1e400}', "f.json:1: not valid JSON"),
    (b'{"a": [1, 2', "f.json:1: not valid JSON"),
])
def test_json_past_a_limit_names_file_line_field(data, expected):
    with pytest.raises(InputError) as info:
        load_json(data, file="f.json", line=1, error=InputError)
    assert str(info.value).startswith(expected), str(info.value)
