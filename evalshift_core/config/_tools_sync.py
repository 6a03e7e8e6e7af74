"""``evalshift tools sync FILE.py``: tool definitions that live in Python, without a second copy.

The file is parsed with libcst and never imported: every module-level literal list of tool dicts is
extracted (computed values are rejected with file:line), merged into ``.evalshift/tools.json``, and
``tools_path:`` is set on the prompts of evalshift.yaml in place, every other byte kept.
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst
import orjson
from libcst.metadata import MetadataWrapper, PositionProvider

from .._exceptions import ConfigError
from .._io import atomic_write_bytes
from .._limits import MAX_TEXT_BYTES, LimitError, check_value, format_path
from .._models import Tool
from ..store._suites import DEFAULT_BASE
from ._config import CONFIG_FILE, parse_config
from ._tools_file import load_tools_file

TOOLS_FILE = "tools.json"


@dataclass
class ExtractedTool:
    """One tool dict found in the Python file, canonical, with where it was written."""

    tool: Tool
    variable: str
    index: int
    node: cst.CSTNode = field(repr=False)
    _line_of: Callable[[cst.CSTNode], int] = field(repr=False)

    @property
    def line(self) -> int:
        """1-based line of the tool dict (resolved only when a message needs it)."""
        return self._line_of(self.node)


@dataclass
class ToolsSyncResult:
    """What a ``tools sync`` did."""

    tools_path: Path
    """The merged tool file (``<base>/tools.json``)."""
    variables: list[str] = field(default_factory=list)
    """Module-level variables the tools came from."""
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    prompts_set: list[str] = field(default_factory=list)
    """Prompt ids whose ``tools_path:`` this sync set."""
    config_path: Path | None = None
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "tools_path": str(self.tools_path), "variables": self.variables, "added": self.added,
            "updated": self.updated, "unchanged": self.unchanged, "prompts_set": self.prompts_set,
            "config_path": str(self.config_path) if self.config_path else None, "warnings": self.warnings,
        }


# -- extraction -------------------------------------------------------------------------------


class _Computed(Exception):
    def __init__(self, node: cst.CSTNode, what: str) -> None:
        self.node = node
        self.what = what


_CONSTANT_NAMES = {"True": True, "False": False, "None": None}


def _literal(node: cst.BaseExpression) -> Any:
    """The Python value of a literal expression; anything computed raises ``_Computed``."""
    if isinstance(node, cst.SimpleString):
        value = ast.literal_eval(node.value)
        if isinstance(value, bytes):
            raise _Computed(node, "a bytes literal")
        return value
    if isinstance(node, cst.ConcatenatedString):
        return _literal(node.left) + _literal(node.right)
    if isinstance(node, cst.FormattedString):
        raise _Computed(node, "an f-string")
    if isinstance(node, (cst.Integer, cst.Float)):
        return ast.literal_eval(node.value)
    if isinstance(node, cst.Name):
        if node.value in _CONSTANT_NAMES:
            return _CONSTANT_NAMES[node.value]
        raise _Computed(node, f"the name {node.value!r}")
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)) \
            and isinstance(node.expression, (cst.Integer, cst.Float)):
        value = _literal(node.expression)
        return -value if isinstance(node.operator, cst.Minus) else value
    if isinstance(node, (cst.List, cst.Tuple)):
        out = []
        for el in node.elements:
            if isinstance(el, cst.StarredElement):
                raise _Computed(el, "a * unpacking")
            out.append(_literal(el.value))
        return out
    if isinstance(node, cst.Dict):
        result: dict[str, Any] = {}
        for el in node.elements:
            if isinstance(el, cst.StarredDictElement):
                raise _Computed(el, "a ** unpacking")
            key = _literal(el.key)
            if not isinstance(key, str):
                raise _Computed(el.key, "a non-string key")
            result[key] = _literal(el.value)
        return result
    raise _Computed(node, _describe(node))


def _describe(node: cst.CSTNode) -> str:
    if isinstance(node, cst.Call):
        return "a call"
    if isinstance(node, (cst.ListComp, cst.DictComp, cst.SetComp, cst.GeneratorExp)):
        return "a comprehension"
    if isinstance(node, cst.Attribute):
        return "an attribute access"
    if isinstance(node, cst.Subscript):
        return "a subscript"
    if isinstance(node, cst.BinaryOperation):
        return "an operation"
    if isinstance(node, cst.Set):
        return "a set (not JSON)"
    return f"a computed value ({type(node).__name__})"


def _dict_keys(node: cst.Dict) -> set[str]:
    keys = set()
    for el in node.elements:
        if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
            try:
                key = ast.literal_eval(el.key.value)
            except (ValueError, SyntaxError):
                continue
            if isinstance(key, str):
                keys.add(key)
    return keys


def _looks_like_tool(node: cst.BaseExpression) -> bool:
    """A dict literal in one of the provider tool shapes (Anthropic, OpenAI, Gemini)."""
    return isinstance(node, cst.Dict) and bool(_dict_keys(node) & {"name", "function"}) \
        and bool(_dict_keys(node) & {"input_schema", "parameters", "function", "description"})


def _assignments(module: cst.Module) -> Iterable[tuple[str, cst.BaseExpression]]:
    """Module-level ``NAME = value`` and ``NAME: T = value`` statements, in file order."""
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                names = [t.target.value for t in small.targets if isinstance(t.target, cst.Name)]
                if names:
                    yield " = ".join(names), small.value
            elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
                yield small.target.value, small.value


MAX_PYTHON_DEPTH = 100
"""Deepest syntax tree ``tools sync`` hands to libcst, whose native parser has no stack guard
(5,000 nested parentheses, or a 100,000-link attribute chain, crash the process)."""


def check_python_nesting(source: str, *, file: str) -> None:
    """Refuse a module nested past MAX_PYTHON_DEPTH, naming its line, before libcst sees it.

    CPython's own parser checks its stack and fails cleanly (a SyntaxError, MemoryError or
    RecursionError); its tree is then measured iteratively.
    """
    if len(source) > MAX_TEXT_BYTES:
        raise ConfigError(f"larger than {MAX_TEXT_BYTES // (1024 * 1024)} MiB", file=file)
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise ConfigError(f"not valid Python: {str(exc.msg).split(';')[0]}", file=file, line=exc.lineno) from exc
    except (RecursionError, MemoryError) as exc:
        raise ConfigError(f"nests deeper than {MAX_PYTHON_DEPTH} levels (the parser ran out of stack)",
                          file=file) from exc
    except ValueError as exc:  # e.g. a NUL byte in the source
        raise ConfigError(f"not valid Python: {exc}", file=file) from exc
    stack: list[tuple[ast.AST, int]] = [(tree, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_PYTHON_DEPTH:
            raise ConfigError(f"nests deeper than {MAX_PYTHON_DEPTH} levels; tools sync reads plain literal "
                              "lists of tool dicts", file=file, line=getattr(node, "lineno", None))
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def extract_tools(source: str, *, file: str = "<python>") -> list[ExtractedTool]:
    """Every tool dict of every module-level literal list of tool dicts in ``source``.

    A list counts as a tool list when one of its elements is a dict literal in a tool shape; then
    every element must be a literal, or the whole sync is refused naming file, line and what was
    computed. Nothing is imported or executed.
    """
    with warnings.catch_warnings():
        # The user's own source may hold an invalid escape ("\s"): Python warns, we only read it.
        warnings.simplefilter("ignore")
        return _extract_tools(source, file)


def _extract_tools(source: str, file: str) -> list[ExtractedTool]:
    check_python_nesting(source, file=file)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        raise ConfigError(f"not valid Python: {exc.message}", file=file, line=exc.raw_line) from exc
    except (RecursionError, MemoryError) as exc:
        raise ConfigError(f"too deeply nested for tools sync ({type(exc).__name__})", file=file) from exc
    positions: dict[str, Any] = {}

    def line_of(node: cst.CSTNode) -> int:
        # Positions cost more than the parse itself, and only messages need them: resolve lazily.
        if "map" not in positions:
            positions["map"] = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
        return positions["map"][node].start.line

    found: list[ExtractedTool] = []
    for variable, value in _assignments(module):
        if not isinstance(value, cst.List):
            continue
        if not any(not isinstance(el, cst.StarredElement) and _looks_like_tool(el.value) for el in value.elements):
            continue
        for i, el in enumerate(value.elements):
            where = f"{variable}[{i}]"
            try:
                if isinstance(el, cst.StarredElement):
                    raise _Computed(el, "a * unpacking")
                raw = _literal(el.value)
            except _Computed as exc:
                raise ConfigError(
                    f"{exc.what} in a tool definition: tools sync reads literals only and never runs your code",
                    file=file, line=line_of(exc.node), field=where,
                ) from None
            except RecursionError:  # e.g. thousands of adjacent string literals, nested pairwise
                raise ConfigError("nested too deeply to read as a literal", file=file, line=line_of(el.value),
                                  field=where) from None
            except (ValueError, SyntaxError) as exc:  # e.g. an integer past Python's 4,300 digits
                raise ConfigError(f"not a readable literal: {exc}", file=file, line=line_of(el.value),
                                  field=where) from None
            try:
                check_value(raw)
            except LimitError as exc:
                raise ConfigError(exc.message, file=file, line=line_of(el.value),
                                  field=f"{where}.{format_path(exc.path)}" if exc.path else where) from None
            try:
                tool = Tool.model_validate(raw)
            except ValueError as exc:
                msg = exc.errors()[0]["msg"] if hasattr(exc, "errors") else str(exc)
                raise ConfigError(str(msg).removeprefix("Value error, "), file=file, line=line_of(el.value),
                                  field=where) from None
            found.append(ExtractedTool(tool=tool, variable=variable, index=i, node=el.value, _line_of=line_of))
    return found


def dedupe(found: Sequence[ExtractedTool], *, file: str) -> list[Tool]:
    """One tool per name: identical duplicates collapse, different ones sharing a name abort."""
    first: dict[str, ExtractedTool] = {}
    out: list[Tool] = []
    for item in found:
        prior = first.get(item.tool.name)
        if prior is None:
            first[item.tool.name] = item
            out.append(item.tool)
        elif prior.tool.canonical() != item.tool.canonical():
            raise ConfigError(
                f"two different tools are named {item.tool.name!r} (the other is {prior.variable}[{prior.index}] "
                f"at line {prior.line}); nothing was written",
                file=file, line=item.line, field=f"{item.variable}[{item.index}]",
            )
    return out


# -- evalshift.yaml, edited in place ------------------------------------------------------------

_PLAIN_SCALAR = re.compile(r"[A-Za-z0-9_./][A-Za-z0-9_./:@+\-]*")


def yaml_scalar(value: str) -> str:
    """``value`` as a YAML scalar: plain when it reads back as that same string, else quoted."""
    if _PLAIN_SCALAR.fullmatch(value):
        from ruamel.yaml import YAML

        # "0", "1e3", "null", "true", "0o7" ... are plain-looking but resolve to other types.
        if YAML(typ="safe", pure=True).load(value) == value:
            return value
    return _double_quoted(value)


def _double_quoted(value: str) -> str:
    """A YAML double-quoted scalar; characters YAML forbids raw in a stream are escaped."""
    out = []
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch.isprintable() and ch not in "\u2028\u2029\ufeff":
            out.append(ch)
        elif ord(ch) <= 0xFF:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    return '"' + "".join(out) + '"'


def _content_end(node: Any) -> Any:
    """The mark right after a node's own text (a block collection ends with its last child)."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if isinstance(node, MappingNode) and not node.flow_style and node.value:
        return _content_end(node.value[-1][1])
    if isinstance(node, SequenceNode) and not node.flow_style and node.value:
        return _content_end(node.value[-1])
    return node.end_mark


def set_tools_path(text: str, tools_path: str, *, prompt_ids: Sequence[str] | None = None,
                   file: str = CONFIG_FILE) -> tuple[str, list[str], list[str]]:
    """``text`` with ``tools_path:`` set on the chosen prompts (all when ``prompt_ids`` is None).

    Only the lines holding ``tools_path`` change or appear; every other byte is kept. A prompt
    whose ``tools_path`` already points elsewhere keeps it unless named in ``prompt_ids``.
    Returns the new text, the prompt ids set and warnings.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    newline = "\r\n" if "\r\n" in text else "\n"
    root = YAML(typ="rt").compose(text)
    scalar = yaml_scalar(tools_path)
    edits: list[tuple[int, int, str]] = []  # (start, end, replacement) on character indexes
    set_ids: list[str] = []
    warnings: list[str] = []
    if root is None or not isinstance(root, MappingNode):
        raise ConfigError("the top level must be a mapping", file=file, line=1)
    prompts = next((v for k, v in root.value if k.value == "prompts"), None)
    if prompts is None:
        # The default capture-first prompt, written out so it can carry tools_path.
        block = f"prompts:{newline}  - id: replay{newline}    tools_path: {scalar}{newline}"
        sep = "" if not text or text.endswith("\n") else newline
        if prompt_ids and set(prompt_ids) != {"replay"}:
            raise ConfigError(f"no prompt {sorted(set(prompt_ids) - {'replay'})[0]!r} in the file", file=file,
                              field="prompts")
        return text + sep + block, ["replay"], warnings
    if not isinstance(prompts, SequenceNode) or prompts.flow_style:
        raise ConfigError("prompts must be a block list (one '- id: ...' per prompt) for tools sync to edit it",
                          file=file, line=prompts.start_mark.line + 1, field="prompts")
    wanted = set(prompt_ids or [])
    present: set[str] = set()
    for i, item in enumerate(prompts.value):
        if not isinstance(item, MappingNode) or item.flow_style or not item.value:
            raise ConfigError("each prompt must be a block mapping for tools sync to edit it", file=file,
                              line=item.start_mark.line + 1, field=f"prompts[{i}]")
        pairs = {k.value: v for k, v in item.value}
        pid = str(pairs["id"].value) if isinstance(pairs.get("id"), ScalarNode) else f"prompts[{i}]"
        present.add(pid)
        if prompt_ids is not None and pid not in wanted:
            continue
        current = pairs.get("tools_path")
        if current is not None:
            if not isinstance(current, ScalarNode):
                raise ConfigError("tools_path must be a string", file=file, line=current.start_mark.line + 1,
                                  field=f"prompts[{i}].tools_path")
            if current.value == tools_path:
                continue
            if current.value not in ("", None) and prompt_ids is None:
                warnings.append(f"prompt {pid!r} keeps tools_path: {current.value} (name it with --prompt to replace)")
                continue
            start, end = current.start_mark.index, current.end_mark.index
            lead = " " if start == end and text[start - 1 : start] == ":" else ""
            edits.append((start, end, lead + scalar))
        else:
            key_col = item.value[0][0].start_mark.column
            end = _content_end(item.value[-1][1])
            if end.column == 0:
                at = end.index
            else:
                nl = text.find("\n", end.index)
                at = len(text) if nl < 0 else nl + 1
            prefix = newline if at == len(text) and text and not text.endswith("\n") else ""
            edits.append((at, at, f"{prefix}{' ' * key_col}tools_path: {scalar}{newline}"))
        set_ids.append(pid)
    missing = wanted - present
    if missing:
        raise ConfigError(f"no prompt {sorted(missing)[0]!r} in the file", file=file, field="prompts")
    for start, end, replacement in sorted(edits, reverse=True):
        text = text[:start] + replacement + text[end:]
    return text, set_ids, warnings


# -- the command ------------------------------------------------------------------------------


def _merge(existing: list[Tool], new: list[Tool]) -> tuple[list[Tool], list[str], list[str], list[str]]:
    by_name = {t.name: i for i, t in enumerate(existing)}
    merged = list(existing)
    added, updated, unchanged = [], [], []
    for tool in new:
        if tool.name not in by_name:
            merged.append(tool)
            added.append(tool.name)
        elif merged[by_name[tool.name]].canonical() != tool.canonical():
            merged[by_name[tool.name]] = tool  # the Python file is the source of truth
            updated.append(tool.name)
        else:
            unchanged.append(tool.name)
    return merged, added, updated, unchanged


def tools_sync(
    python_file: str | os.PathLike[str],
    *,
    base: str | os.PathLike[str] = DEFAULT_BASE,
    config_path: str | os.PathLike[str] | None = None,
    prompt_ids: Sequence[str] | None = None,
) -> ToolsSyncResult:
    """Extract the tool lists of ``python_file``, merge them into ``<base>/tools.json`` and point
    the prompts of evalshift.yaml at it. Every check runs before the first write, so an abort
    leaves both files as they were.
    """
    src = Path(python_file)
    try:
        source = src.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError("file not found", file=str(src)) from exc
    except UnicodeDecodeError as exc:
        raise ConfigError("not UTF-8 text", file=str(src)) from exc
    found = extract_tools(source, file=str(src))
    if not found:
        raise ConfigError("no module-level literal list of tool dicts found (e.g. TOOLS = [{\"name\": ...}])",
                          file=str(src))
    new = dedupe(found, file=str(src))

    tools_file = Path(base) / TOOLS_FILE
    existing = list(load_tools_file(tools_file).tools) if tools_file.exists() else []
    merged, added, updated, unchanged = _merge(existing, new)
    result = ToolsSyncResult(tools_path=tools_file, added=added, updated=updated, unchanged=unchanged,
                             variables=sorted({f.variable for f in found}, key=[f.variable for f in found].index))

    cfg = Path(config_path) if config_path is not None else Path(CONFIG_FILE)
    new_text: str | None = None
    if cfg.exists():
        raw = cfg.read_bytes()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigError("not UTF-8 text", file=str(cfg)) from exc
        parse_config(text, file=str(cfg))  # refuse to edit a config that is already invalid
        rel = Path(os.path.relpath(tools_file.resolve(), cfg.resolve().parent)).as_posix()
        candidate, result.prompts_set, result.warnings = set_tools_path(text, rel, prompt_ids=prompt_ids,
                                                                        file=str(cfg))
        parse_config(candidate, file=str(cfg))  # the edit must leave a valid config
        if candidate != text:
            new_text = candidate
        result.config_path = cfg
    elif config_path is not None:
        raise ConfigError("file not found", file=str(cfg))
    else:
        result.warnings.append(f"no {CONFIG_FILE} here: set tools_path: {tools_file.as_posix()} on your prompts")

    payload = orjson.dumps([t.canonical() for t in merged], option=orjson.OPT_INDENT_2) + b"\n"
    if not tools_file.exists() or tools_file.read_bytes() != payload:
        atomic_write_bytes(tools_file, payload)
    if new_text is not None:
        atomic_write_bytes(cfg, new_text.encode("utf-8"))
    return result
