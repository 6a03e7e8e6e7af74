"""evalshift.yaml loading and `tools sync` extraction, each against a baseline measured in this run.

- load_config on a 200-prompt config (round-trip compose for line numbers + pydantic) vs a bare
  YAML safe load of the same text.
- extract_tools over a Python file with 2,000 tool dicts (libcst parse, literal checks,
  normalisation) vs ``ast.parse`` + ``ast.literal_eval`` of the same lists, and vs the libcst
  parse alone (the part the project does not control).
- set_tools_path on that config vs a full ruamel.yaml round-trip load + dump (what an in-place
  edit would cost with the library's own dumper).
"""

from __future__ import annotations

import ast
import io
import statistics
import time
from collections.abc import Callable

import libcst as cst
from ruamel.yaml import YAML

from evalshift_core.config._config import parse_config
from evalshift_core.config._tools_sync import extract_tools, set_tools_path


def best_of(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def make_config(prompts: int) -> str:
    lines = ["# generated", "version: 1", "prompts:"]
    for i in range(prompts):
        lines += [f"  # prompt {i}", f"  - id: p{i}", "    detection: manual", '    content: "{input}"',
                  "    variables: [input]"]
    lines += ["defaults:", "  source_model: openai:a", "  target_model: openai:b", "evaluators:",
              "  tool_selection:", "    - name: routing", "      conformance: expected", "      divergence: set"]
    return "\n".join(lines) + "\n"


def make_tools_module(tools: int) -> str:
    items = [
        {"type": "function", "function": {"name": f"tool_{i}", "description": f"Tool number {i}.",
                                          "parameters": {"type": "object", "properties": {
                                              "order_id": {"type": "string"}, "amount": {"type": "number"}},
                                              "required": ["order_id"]}}}
        for i in range(tools)
    ]
    chunks = [items[i:i + 100] for i in range(0, len(items), 100)]
    return "\n".join(f"TOOLS_{n} = {chunk!r}\n" for n, chunk in enumerate(chunks))


def literal_baseline(source: str) -> int:
    count = 0
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            count += len(ast.literal_eval(node.value))
    return count


def roundtrip_baseline(text: str) -> str:
    yaml = YAML(typ="rt")
    data = yaml.load(text)
    for p in data["prompts"]:
        p["tools_path"] = ".evalshift/tools.json"
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def main() -> None:
    config = make_config(200)
    module = make_tools_module(2000)
    assert len(extract_tools(module)) == 2000 == literal_baseline(module)

    load = best_of(lambda: parse_config(config))
    load_base = best_of(lambda: YAML(typ="safe", pure=True).load(config))
    extract = best_of(lambda: extract_tools(module), repeat=3)
    extract_base = best_of(lambda: literal_baseline(module), repeat=3)
    parse_only = best_of(lambda: cst.parse_module(module), repeat=3)
    edit = best_of(lambda: set_tools_path(config, ".evalshift/tools.json"))
    edit_base = best_of(lambda: roundtrip_baseline(config))

    print(f"load_config, 200 prompts:      {load * 1000:8.1f} ms  vs YAML safe load {load_base * 1000:8.1f} ms"
          f"  ratio {load / load_base:5.2f}x")
    print(f"extract_tools, 2,000 tools:    {extract * 1000:8.1f} ms  vs ast.literal_eval {extract_base * 1000:8.1f} ms"
          f"  ratio {extract / extract_base:5.2f}x")
    print(f"  of which libcst.parse_module: {parse_only * 1000:8.1f} ms"
          f"  (extraction over the parse: {extract / parse_only:5.2f}x)")
    print(f"set_tools_path, 200 prompts:   {edit * 1000:8.1f} ms  vs ruamel round-trip {edit_base * 1000:8.1f} ms"
          f"  ratio {edit / edit_base:5.2f}x")


if __name__ == "__main__":
    main()
