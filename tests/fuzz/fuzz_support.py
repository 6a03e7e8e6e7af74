"""What the fuzz tests share: the CLI run in-process, hostile values, mutations of valid inputs,
the outcome rule (exit 0, or exit 1 with one line naming the file and line; never an internal
error) and the tally a long run reports (EVALSHIFT_FUZZ_REPORT=path)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from evalshift_core.cli._main import main

EXAMPLES = int(os.environ.get("EVALSHIFT_FUZZ_EXAMPLES", "30"))
"""Inputs per fuzz test: a few seconds each in `make test`; raise it for a long run."""
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])

TALLY: dict[str, Counter[str]] = {}
"""Per input kind: inputs tried, accepted (exit 0), user errors (a message naming the file)."""


def count(kind: str, outcome: str) -> None:
    tally = TALLY.setdefault(kind, Counter())
    tally["inputs"] += 1
    tally[outcome] += 1


# -- hostile values -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Deep:
    """A value nested ``depth`` levels: kept as a marker until :func:`to_json` writes it, since
    the json module itself recurses and stops near 1,000 levels."""

    depth: int
    kind: str = "list"

    def text(self) -> str:
        if self.kind == "list":
            return "[" * self.depth + "1" + "]" * self.depth
        return '{"k": ' * self.depth + "1" + "}" * self.depth


def to_json(value: Any) -> str:
    """JSON text for a drawn value (``Deep`` markers written out whole)."""
    deep: list[Deep] = []

    def mark(v: Any) -> Any:
        if isinstance(v, Deep):
            deep.append(v)
            return f"@@deep{len(deep) - 1}@@"
        raise TypeError(type(v).__name__)

    text = json.dumps(value, default=mark)
    for i, d in enumerate(deep):
        text = text.replace(f'"@@deep{i}@@"', d.text(), 1)
    return text


HOSTILE_STRINGS = ["../../X", "/abs/path/X", "a\x00b", "..", ".", "", " ", "CON", "x" * 300, "sha256:../../outside",
                   "sha256:" + "0" * 64, "\u202egnp.exe", "9" * 50, "{input.__class__}", "{0}", "\ud800", "%s%n",
                   "sk-proj-abcdefghijklmnop0123", "line\nbreak", "tab\tx", "source", "target", "model_call"]

LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**63, max_value=2**70),
    st.integers(max_value=-(2**63) - 1, min_value=-(2**70)),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12), st.sampled_from(HOSTILE_STRINGS),
)
JSON = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=10)
DEEP = st.builds(Deep, st.sampled_from([62, 63, 64, 65, 100, 300, 1100]), st.sampled_from(["list", "dict"]))
VALUES = st.one_of(JSON, JSON, JSON, DEEP)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every path into a JSON value (the root included)."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, (*prefix, i))


def replace(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replace(value[head], rest, new)}
    out = list(value)
    out[head] = replace(out[head], rest, new)
    return out


def mutate(data: Any, value: Any, *, times: int = 3) -> Any:
    """``value`` with one to ``times`` of its subtrees replaced by drawn (often hostile) values,
    or a key added or removed."""
    for _ in range(data.draw(st.integers(1, times), label="mutations")):
        target = data.draw(st.sampled_from(list(paths(value))), label="path")
        action = data.draw(st.sampled_from(["replace", "replace", "replace", "add", "drop"]), label="action")
        if action == "replace":
            value = replace(value, target, data.draw(VALUES, label="value"))
        elif action == "add" and target and isinstance(_at(value, target), dict):
            key = data.draw(st.text(max_size=8) | st.sampled_from(["id", "role", "type", "events", "name"]))
            value = replace(value, target, {**_at(value, target), key: data.draw(VALUES, label="value")})
        elif action == "drop" and target:
            parent = _at(value, target[:-1])
            if isinstance(parent, dict):
                value = replace(value, target[:-1], {k: v for k, v in parent.items() if k != target[-1]})
    return value


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


TEXT_JUNK = st.one_of(
    st.text(max_size=40), st.sampled_from(["[" * 3000, "{" * 2000, "9" * 5000, "\x00", "\ufeff", "null", "[]", "{}",
                                          '"text"', "1e400", "-" * 300 + "1", "{{{", "]]]", "'", '"""']))


def mutate_text(data: Any, text: str) -> str:
    """``text`` with a drawn junk string inserted, or a slice cut out."""
    at = data.draw(st.integers(0, len(text)), label="at")
    if data.draw(st.booleans(), label="insert"):
        return text[:at] + data.draw(TEXT_JUNK, label="junk") + text[at:]
    end = data.draw(st.integers(at, min(len(text), at + 40)), label="end")
    return text[:at] + text[end:]


# -- running the CLI ------------------------------------------------------------------------------


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    @property
    def warnings(self) -> list[str]:
        return [line for line in self.err.split("\n") if line.startswith("warning: ")]

    @property
    def error(self) -> str:
        lines = [line for line in self.err.split("\n") if line.startswith("error: ")]
        return lines[-1] if lines else ""


@contextlib.contextmanager
def in_dir(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


def cli(*args: str, cwd: Path) -> Outcome:
    """``evalshift ARGS`` in this process (the entry point itself: error translation included)."""
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), in_dir(cwd):
        try:
            main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
    return Outcome(code, out.getvalue(), err.getvalue())


def user_outcome(outcome: Outcome, kind: str | None, *names: str, line: bool = True) -> str:
    """Assert the rule every input is held to and count it (under ``kind``; None: not counted):
    exit 0, or exit 1 with one error line naming one of ``names`` (with ``:<line>`` when
    ``line``); never an internal error. Returns ``accepted``, ``reported`` (exit 0 with a
    warning naming the file) or ``user_error``."""
    assert "Traceback" not in outcome.err and "internal error" not in outcome.err, outcome.err[-2000:]
    reported = [w for w in outcome.warnings if any(n in w for n in names)]
    for warning in reported:
        assert not line or re.search(rf"({'|'.join(map(re.escape, names))}):\d+", warning), warning
    if outcome.code == 0:
        if kind is not None:
            count(kind, "user_errors" if reported else "accepted")
        return "reported" if reported else "accepted"
    assert outcome.code == 1, (outcome.code, outcome.err[-2000:])
    error = outcome.error
    assert error, outcome.err[-2000:]
    named = any(n in error for n in names)
    assert named, error
    if line:
        assert re.search(rf"({'|'.join(map(re.escape, names))}):\d+", error), error
    if kind is not None:
        count(kind, "user_errors")
    return "user_error"


def files_under(root: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in root.rglob("*") if p.is_file()}


def assert_written_only_under(root: Path, before: dict[Path, int], base: Path) -> None:
    """No file outside ``base`` was created or changed."""
    after = files_under(root)
    changed = [p for p, m in after.items() if before.get(p) != m]
    outside = [p for p in changed if not p.resolve().is_relative_to(base.resolve())]
    assert not outside, outside
