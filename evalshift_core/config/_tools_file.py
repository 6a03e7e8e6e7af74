"""Tool files at a prompt's ``tools_path``: YAML or JSON, a flat list or ``{"tools": [...]}``.

Anthropic and OpenAI tool shapes mix freely (seed 000); every tool comes back canonical.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from .._exceptions import ConfigError
from .._limits import MAX_TEXT_BYTES, load_json, load_yaml
from .._models import Example, Tool, Toolset


def _parse(text: str, file: str) -> tuple[Any, Any]:
    """The file's value plus where to find line numbers: for YAML its composed node tree, for
    JSON its text. Both are parsed under the depth, size and number limits."""
    if file.lower().endswith(".json"):
        return load_json(text, file=file, what="JSON", error=ConfigError, max_bytes=MAX_TEXT_BYTES), text
    # YAML is a superset of JSON, so any other extension reads as YAML.
    return load_yaml(text, file=file)


def _json_item_line(text: str, wrapped: bool, index: int) -> int | None:
    """Line of the ``index``-th tool in JSON text: the items of the top-level list (or of the
    ``tools`` list, one level down), found by a scan that skips strings. Run on errors only."""
    target_depth = 2 if wrapped else 1
    depth, line, item, in_string, escaped, expect_item = 0, 1, -1, False, False, False
    for ch in text:
        if ch == "\n":
            line += 1
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
            continue
        if expect_item and not ch.isspace() and ch not in "]}":
            item += 1
            expect_item = False
            if item == index:
                return line
        if ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if ch == "[" and depth == target_depth:
                expect_item = True
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == target_depth:
            expect_item = True
    return None


def _item_line(root: Any, wrapped: bool, index: int) -> int | None:
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if isinstance(root, str):
        return _json_item_line(root, wrapped, index)
    node = root
    if wrapped and isinstance(node, MappingNode):
        node = next((v for k, v in node.value if k.value == "tools"), None)
    if isinstance(node, SequenceNode) and 0 <= index < len(node.value):
        return node.value[index].start_mark.line + 1
    return None


def parse_tools(value: Any, *, file: str = "<tools>", root: Any = None) -> Toolset:
    """Validate a loaded tool file's value: a list of tool dicts, or ``{"tools": [...]}``.

    ``root`` locates lines for messages: a YAML file's composed nodes, or a JSON file's text.
    """
    wrapped = isinstance(value, Mapping)
    if wrapped:
        extra = sorted(set(value) - {"tools"})
        if extra or "tools" not in value:
            raise ConfigError(
                f"a tool file is a list of tools or a mapping with one key 'tools' (found {', '.join(map(repr, extra)) or 'no tools key'})",
                file=file, line=1,
            )
        value = value["tools"]
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise ConfigError("a tool file is a list of tools or {tools: [...]}", file=file, line=1)
    tools: list[Tool] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(value):
        field = f"tools[{i}]"
        try:
            tool = Tool.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigError(str(err["msg"]).removeprefix("Value error, "), file=file,
                              line=_item_line(root, wrapped, i), field=field) from exc
        if tool.name in seen:
            if tools[seen[tool.name]].canonical() != tool.canonical():
                raise ConfigError(f"two different tools are named {tool.name!r} (also tools[{seen[tool.name]}])",
                                  file=file, line=_item_line(root, wrapped, i), field=field)
            continue  # identical duplicates collapse
        seen[tool.name] = len(tools)
        tools.append(tool)
    return Toolset(tools=tools)


def load_tools_file(path: str | os.PathLike[str]) -> Toolset:
    """Read the tool definitions at ``path`` (YAML or JSON; either provider shape, mixed)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError("tool file not found", file=str(p), field="tools_path") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError("tool file is not UTF-8 text", file=str(p)) from exc
    value, root = _parse(text, str(p))
    return parse_tools(value, file=str(p), root=root)


def apply_prompt_tools(
    examples: list[Example], config: Any, *, config_dir: str | os.PathLike[str] = "."
) -> list[Example]:
    """Give examples that carry no toolset the tools of their prompt's ``tools_path``.

    An example's own ``toolset_ref`` or inline ``tools`` (``[]`` included) always wins; a prompt
    with ``tools_path`` only fills the gap, which is what makes it agent-style.
    """
    cache: dict[str, list[Tool]] = {}
    out = []
    for example in examples:
        prompt = config.prompt(example.prompt_id) if config is not None else None
        if prompt is None or not prompt.tools_path or example.tools is not None or example.toolset_ref is not None:
            out.append(example)
            continue
        path = Path(config_dir) / prompt.tools_path
        key = str(path)
        if key not in cache:
            cache[key] = list(load_tools_file(path).tools)
        out.append(example.model_copy(update={"tools": cache[key]}))
    return out
