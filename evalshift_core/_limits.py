"""Bounded parsing of untrusted JSON and YAML: size, nesting depth, node count and number range.

Every file a user, a capture or a run hands EvalShift is parsed here (or checked here right after
parsing), so a 2,000-deep bracket, a 5,000-digit integer or a YAML alias bomb is one clear
message naming the file, the line and the field, never a RecursionError or an overflow later.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ._exceptions import ConfigError, EvalShiftError

MAX_DEPTH = 64
"""Deepest nesting of lists and mappings accepted in any value read from a file."""
MAX_NODES = 1_000_000
"""Most values one document may hold once YAML aliases are followed."""
MAX_TEXT_BYTES = 16 * 1024 * 1024
"""Largest evalshift.yaml, tool file or Python tool module read whole."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest single JSON line (a capture batch, a suite example, a Call row)."""
INT_MIN, INT_MAX = -(2**63), 2**64 - 1
"""Integers outside 64 bits (signed below, unsigned above) cannot be written back as JSON."""

# YAML 1.2 integers (and 1.1's sexagesimal ones) a plain scalar can spell; a longer run of
# digits than any 64-bit value has is refused before the loader turns it into a Python int.
_YAML_INT = re.compile(r"[-+]?(?:[0-9_:]+|0[xX][0-9A-Fa-f_]+|0[oO][0-7_]+|0[bB][01_]+)")
_MAX_INT_CHARS = 40


class LimitError(ValueError):
    """A value past one of the limits; ``path`` says where in the document."""

    def __init__(self, message: str, path: Sequence[str | int] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.path = list(path)


def format_path(path: Sequence[str | int], limit: int = 8) -> str:
    """``["prompts", 0, "id"]`` -> ``prompts[0].id``; past ``limit`` parts, the rest is ``...``."""
    out = ""
    for n, part in enumerate(path):
        if n == limit:
            return out + "..."
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def parse_path(field: str) -> list[str | int]:
    """``prompts[0].id`` -> ``["prompts", 0, "id"]``: the inverse of :func:`format_path`."""
    return [int(p) if p.isdigit() else p for p in re.findall(r"[^.\[\]]+", field)]


def _within(value: Any, max_depth: int, max_nodes: int) -> bool:
    """True when ``value`` is inside every limit: the fast pass, pushing containers only."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    nodes = 0
    while stack:
        item, depth = stack.pop()
        if depth >= max_depth:
            return False
        children = item.values() if type(item) is dict else item
        nodes += len(children)
        if nodes > max_nodes:
            return False
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
            elif kind is int:
                if not INT_MIN <= child <= INT_MAX:
                    return False
            elif kind is float:
                if child != child or child in (math.inf, -math.inf):
                    return False
            elif kind is not str and kind is not bool and child is not None:
                return False  # a tuple, a YAML date or an int subclass: let the full pass judge
    return True


def check_value(value: Any, *, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> None:
    """Raise LimitError when ``value`` nests deeper than ``max_depth``, holds more than
    ``max_nodes`` values, or holds an integer outside 64 bits or a float that is not finite.

    Iterative, so the check itself cannot overflow the stack it protects. A fast pass visits
    containers only; the path to a problem is traced by a second pass when there is one.
    """
    kind = type(value)
    if kind is dict or kind is list:
        if _within(value, max_depth, max_nodes):
            return
    elif kind is str or kind is bool or value is None:
        return
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 0, ())]
    nodes = 0
    while stack:
        item, depth, path = stack.pop()
        nodes += 1
        if nodes > max_nodes:
            raise LimitError(f"holds more than {max_nodes:,} values", path)
        if isinstance(item, (str, bool)) or item is None:
            continue
        if isinstance(item, int):
            if not INT_MIN <= item <= INT_MAX:
                raise LimitError("is an integer outside the 64-bit range", path)
            continue
        if isinstance(item, float):
            if not math.isfinite(item):
                raise LimitError("is not a finite number", path)
            continue
        if isinstance(item, Mapping):
            children: Iterable[tuple[Any, Any]] = item.items()
        elif isinstance(item, (list, tuple)):
            children = enumerate(item)
        else:
            continue  # a date or another scalar a YAML constructor made
        if depth >= max_depth:
            raise LimitError(f"nests deeper than {max_depth} levels", path)
        for key, child in children:
            if type(child) is str:  # most values: counted, never pushed
                nodes += 1
            else:
                stack.append((child, depth + 1, (*path, key if isinstance(key, int) else str(key))))


# -- YAML -----------------------------------------------------------------------------------------


def _yaml_error(exc: Exception, text: str, file: str, error: type[EvalShiftError]) -> EvalShiftError:
    """A YAML error as one line with its line number (a reader error has only a position)."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    position = getattr(exc, "position", None)
    if line is None and isinstance(position, int):
        line = text.count("\n", 0, max(0, position)) + 1
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None) or exc
    if not isinstance(problem, str) and hasattr(exc, "reason"):  # a ReaderError
        problem = f"{exc.reason}: character {getattr(exc, 'character', '?')!r}"
    return error(f"not valid YAML: {problem}", file=file, line=line or 1)


def _scan_yaml(text: str, file: str, error: type[EvalShiftError], max_depth: int) -> None:
    """Walk the token stream (iteratively) before anything recursive sees the document, keeping
    the path of keys and indexes so a refusal names its field."""
    from ruamel.yaml import YAML
    from ruamel.yaml import tokens as T
    from ruamel.yaml.error import YAMLError

    # Frames: [kind, key or index]; kind is "map", "seq" (block), "flow" (flow sequence) or
    # "list" (a block sequence written at its key's indentation, which no token closes).
    stack: list[list[Any]] = []
    key_next = False

    def path() -> list[str | int]:
        return [f[1] for f in stack if f[1] is not None and f[1] != -1]

    def close_indentless() -> None:
        while stack and stack[-1][0] == "list":
            stack.pop()

    try:
        for token in YAML(typ="safe", pure=True).scan(text):
            kind = type(token)
            if kind in (T.BlockMappingStartToken, T.FlowMappingStartToken):
                stack.append(["map", None])
            elif kind is T.BlockSequenceStartToken:
                stack.append(["seq", -1])
            elif kind is T.FlowSequenceStartToken:
                stack.append(["flow", 0])
            elif kind in (T.BlockEndToken, T.FlowMappingEndToken, T.FlowSequenceEndToken):
                close_indentless()
                if stack:
                    stack.pop()
                continue
            elif kind is T.KeyToken:
                close_indentless()
                key_next = bool(stack) and stack[-1][0] == "map"
                continue
            elif kind is T.ValueToken:
                key_next = False
                continue
            elif kind is T.BlockEntryToken:
                if stack and stack[-1][0] in ("seq", "list"):
                    stack[-1][1] += 1
                else:
                    stack.append(["list", 0])
            elif kind is T.FlowEntryToken:
                if stack and stack[-1][0] == "flow":
                    stack[-1][1] += 1
                continue
            elif kind is T.ScalarToken:
                if not token.value.isascii() and not _is_utf8(token.value):
                    # "\ud800" in a double-quoted scalar: no file, JSON or request can carry it
                    raise error("is not valid Unicode (a lone surrogate)", file=file,
                                line=token.start_mark.line + 1, field=format_path(path()) or None)
                if key_next:
                    stack[-1][1] = token.value
                    key_next = False
                elif token.plain and len(token.value) > _MAX_INT_CHARS and _YAML_INT.fullmatch(token.value):
                    raise error("is an integer outside the 64-bit range", file=file,
                                line=token.start_mark.line + 1, field=format_path(path()) or None)
                continue
            else:
                continue
            if len(stack) > max_depth:
                raise error(f"nests deeper than {max_depth} levels", file=file,
                            line=token.start_mark.line + 1, field=format_path(path()) or None)
    except YAMLError as exc:
        raise _yaml_error(exc, text, file, error) from exc


def _is_utf8_value(value: Any) -> bool:
    """No lone surrogate ("\\ud800" in a double-quoted scalar) anywhere in a loaded value."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii() and not _is_utf8(item):
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def node_line(root: Any, path: Sequence[str | int]) -> int | None:
    """1-based line of the node at ``path`` in a composed YAML tree (the deepest one found)."""
    from ruamel.yaml.nodes import MappingNode, SequenceNode

    if root is None:
        return None
    node = root
    line = node.start_mark.line + 1
    for part in path:
        if isinstance(node, MappingNode):
            for key, value in node.value:
                if str(key.value) == str(part):
                    line = key.start_mark.line + 1
                    node = value
                    break
            else:
                return line
        elif isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def load_yaml(
    text: str,
    *,
    file: str,
    error: type[EvalShiftError] = ConfigError,
    max_depth: int = MAX_DEPTH,
    max_bytes: int = MAX_TEXT_BYTES,
    compose: bool = True,
) -> tuple[Any, Any]:
    """Parse YAML under the limits: ``(value, composed node tree or None)``.

    Every problem is ``error`` naming ``file``, the line and, for a value past a limit, the field.
    The loaders recurse per level (pure Python: a RecursionError, never a crash) and refuse an
    integer past 4,300 digits; an iterative token scan then finds where.
    """
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    if len(text) > max_bytes:
        raise error(f"larger than {max_bytes // (1024 * 1024)} MiB", file=file)
    try:
        value = YAML(typ="safe", pure=True).load(text)
        root = YAML(typ="rt").compose(text) if compose else None
    except YAMLError as exc:
        raise _yaml_error(exc, text, file, error) from exc
    except (ValueError, TypeError, RecursionError, OverflowError) as exc:
        # Nesting past the stack or an integer past Python's 4,300 digits: the token scan says
        # where (it is iterative, and only run here: it costs about as much as the load).
        _scan_yaml(text, file, error, max_depth)
        raise error(f"not valid YAML: {type(exc).__name__}: {exc}", file=file, line=1) from exc
    try:
        check_value(value, max_depth=max_depth)
    except LimitError as exc:
        if root is None:  # nested too deeply for the composer: the scan finds the line
            _scan_yaml(text, file, error, max_depth)
        raise error(exc.message, file=file, line=node_line(root, exc.path) or 1,
                    field=format_path(exc.path) or None) from exc
    if not _is_utf8_value(value):
        _scan_yaml(text, file, error, max_depth)  # names the scalar's line and field
    return value, root


# -- JSON -----------------------------------------------------------------------------------------


def load_json(
    data: bytes | str,
    *,
    file: str,
    line: int | None = None,
    what: str = "JSON",
    error: type[EvalShiftError] = EvalShiftError,
    max_depth: int = MAX_DEPTH,
    max_bytes: int = MAX_LINE_BYTES,
) -> Any:
    """Parse one JSON document (or line) under the limits; problems are ``error`` naming
    ``file``, ``line`` and, for a value past a limit, the field."""
    import orjson

    if len(data) > max_bytes:
        raise error(f"{what} larger than {max_bytes // (1024 * 1024)} MiB", file=file, line=line)
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        at = line
        if at is None and isinstance(exc.doc, str):
            at = exc.doc.count("\n", 0, max(0, exc.pos)) + 1
        raise error(f"not valid {what}: {exc.msg}", file=file, line=at) from exc
    try:
        check_value(value, max_depth=max_depth)
    except LimitError as exc:
        at = line if line is not None else _line_past_depth(data, max_depth)
        raise error(exc.message, file=file, line=at, field=format_path(exc.path) or None) from exc
    return value


def _line_past_depth(data: bytes | str, max_depth: int) -> int:
    """The line of a whole JSON document where nesting first passes ``max_depth`` (line 1 if
    it never does: then another limit was the reason). Only run on the way to an error."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    depth, line, in_string, escaped = 0, 1, False, False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > max_depth:
                return line
        elif ch in "]}":
            depth -= 1
        if ch == "\n":
            line += 1
    return 1
