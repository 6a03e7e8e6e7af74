"""What every evaluator is and produces: the evaluator contract and ``scores.jsonl`` records.

An evaluator writes one method, ``score_pair(pair)``; :class:`ToolEvaluator` and
:class:`TextEvaluator` hold what the evaluators of each kind share.

Also what several evaluators share: the per-pair derived data (:class:`Pair`), replayed rounds,
JSON equality and call matching. The record models live in ``_records``, the measured
speed shortcuts in ``_speed``.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Sequence
from functools import wraps
from operator import attrgetter
from typing import Any, ClassVar, Literal

from .._models import Example, Tool, ToolCall, ToolTrace
from ._records import SEVERITIES, ScoreRecord
from ._speed import new_record
from ._text import answer_text, is_empty, skipped_metadata

# Options every evaluator accepts; each type adds its own in ``options``.
COMMON_OPTIONS = frozenset({"name", "severity_floor"})


class Evaluator:
    """Base class: one configured instance of an evaluator type.

    Subclass :class:`ToolEvaluator` or :class:`TextEvaluator`, set ``type_name`` (the config key
    under ``evaluators:``) and ``options`` (the settings accepted besides ``name`` and
    ``severity_floor``), and write :meth:`score_pair`.
    """

    type_name: ClassVar[str] = ""
    kind: ClassVar[Literal["tool", "text", ""]] = ""
    """``tool`` (compares tool calls; the report shows its rows as traces) or ``text`` (compares answers)."""
    options: ClassVar[frozenset[str]] = frozenset()
    reads_arguments: ClassVar[bool] = False
    """Its comparison reads call arguments: a baseline recorded names-only cannot serve it."""
    reads_text: ClassVar[bool] = False
    """Its comparison reads the answer text: a baseline must have recorded it."""
    reads_timelines: ClassVar[bool] = False
    """It scores imported timelines (``traces import``) when a pair has them."""

    def __init__(self, config: dict[str, Any]) -> None:
        unknown = sorted(set(config) - COMMON_OPTIONS - self.options)
        if unknown:
            known = ", ".join(sorted(COMMON_OPTIONS | self.options))
            raise ValueError(f"unknown {self.type_name} option {unknown[0]!r} (known: {known})")
        self.config = dict(config)
        self.name = str(config.get("name") or self.type_name)
        floor = config.get("severity_floor")
        if floor is not None and floor not in SEVERITIES:
            raise ValueError(f"severity_floor must be one of {'|'.join(SEVERITIES)}, not {floor!r}")
        self.severity_floor: str | None = floor
        """A regression on this evaluator is never classified below this severity."""

    def bind(self, evaluators: Sequence[Evaluator]) -> None:
        """Called once every configured evaluator is built (to borrow another's model)."""

    def compares_to_source(self, side: str | None) -> bool:
        """Whether ``side`` scores the target relative to the source (a drift comparison).

        Such a comparison pins the source at 1.0 by construction, so it is only tested once an
        A/A baseline scores the source the same way (:mod:`._calibration`); comparisons that
        score both sides against ground truth are calibrated as they are.
        """
        return False

    def score_pair(self, pair: Pair) -> list[ScoreRecord]:
        """Score one pair: one record per side this evaluator grades (what ``evaluate_run`` calls).

        The one method an evaluator writes. ``pair`` holds the example, both traces, imported
        timelines, and the derived data every tool evaluator reads (computed once per pair).
        """
        raise NotImplementedError

    def score(
        self,
        example: Example,
        source: ToolTrace,
        target: ToolTrace,
        *,
        timelines: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None,
    ) -> list[ScoreRecord]:
        """:meth:`score_pair` on a pair built from its parts (``timelines``: imported event lists)."""
        return self.score_pair(Pair(example, source, target, timelines))

    def record(
        self,
        example: Example,
        *,
        source_score: float,
        target_score: float,
        side: str | None = None,
        skipped: bool = False,
        labels: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> ScoreRecord:
        """This instance's score record for ``example`` (scores in [0, 1]; ``side`` where it has two)."""
        return new_record(
            example.id, self.type_name, self.name, side, float(source_score), float(target_score), skipped,
            labels if labels is not None else [], metadata if metadata is not None else {},
        )


class ToolEvaluator(Evaluator):
    """An evaluator of tool calls: reads ``pair``'s traces and the call data it derives once."""

    kind = "tool"


class TextEvaluator(Evaluator):
    """An evaluator of the answers' text.

    A turn that ends in tool calls has no text. When neither side answered in text, the pair is
    skipped here, before the subclass's ``score_pair`` runs, never scored as a tie (seed 000):
    the record scores both sides ``skipped_score`` and its metadata says why, with the instance
    attributes named in ``skipped_details``. A subclass's ``score_pair`` therefore always has at
    least one side's answer to read.
    """

    kind = "text"
    skipped_score: ClassVar[float] = 1.0
    """Both sides' score on a both-empty pair."""
    skipped_details: ClassVar[tuple[str, ...]] = ()
    """Instance attributes copied into a both-empty pair's metadata (``model``, ``mode``)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("score_pair")
        if own is not None:
            cls.score_pair = _skipping_empty_answers(own)  # type: ignore[method-assign]

    def skipped_record(self, example: Example) -> ScoreRecord:
        """The record of a pair in which neither side answered in text."""
        details = {attr: getattr(self, attr) for attr in self.skipped_details}
        return self.record(example, source_score=self.skipped_score, target_score=self.skipped_score, skipped=True,
                           metadata=skipped_metadata(**details))


def _skipping_empty_answers(score_pair: Callable[[Any, Pair], list[ScoreRecord]]) -> Any:
    @wraps(score_pair)
    def wrapper(self: TextEvaluator, pair: Pair) -> list[ScoreRecord]:
        if is_empty(answer_text(pair.source)) and is_empty(answer_text(pair.target)):
            return [self.skipped_record(pair.example)]
        return score_pair(self, pair)

    return wrapper


MISSED_BELOW = 0.5
"""A side missed the ground truth when it scored below this: it got most of the expected calls
wrong (on 0/1 scores, simply a miss)."""
TOOL_GROUND_TRUTH_MISS = "TOOL_GROUND_TRUTH_MISS"


def ground_truth_labels(source_score: float, target_score: float, drift: Sequence[str]) -> list[str]:
    """The labels of a row graded against ground truth (seed 001, "TOOL_GROUND_TRUTH_MISS").

    Both sides missed the ground truth: TOOL_GROUND_TRUTH_MISS alone, whichever side did better,
    and the row leaves every rate. The rule must not look at which side did better: if only the
    rows the target did no worse on left, every A/A comparison of a non-deterministic model would
    keep its drops and shed its gains, and fail. Otherwise ``drift``: the labels of the rounds in
    which the target scored lower.
    """
    if source_score < MISSED_BELOW and target_score < MISSED_BELOW:
        return [TOOL_GROUND_TRUTH_MISS]
    return list(dict.fromkeys(drift))


tool_name_of = attrgetter("tool_name")
"""A call's ``tool_name``, as a C-level function (``map`` over it builds no Python frame)."""

_ABSENT: Any = object()
"""A value no caller passes: a missing key, a lazy value not computed yet."""


class Pair:
    """One example's source and target traces, with what every tool evaluator derives from them.

    ``evaluate_run`` builds one per example and hands it to each evaluator, so the call lists,
    name sequences and the source/target comparison are computed once per pair, not once per
    evaluator. Names are tuples (compared without building lists); records get list copies.
    """

    __slots__ = ("example", "source", "target", "timelines", "tools", "single_shot", "source_calls", "target_calls",
                 "source_names", "target_names", "_same_calls", "_matches", "_arguments_equal", "_expected_names")

    def __init__(
        self,
        example: Example,
        source: ToolTrace,
        target: ToolTrace,
        timelines: tuple[list[dict[str, Any]], list[dict[str, Any]]] | None = None,
        tools: list[Tool] | None = None,
    ) -> None:
        self.example = example
        self.source = source
        self.target = target
        self.timelines = timelines
        self.tools = example.tools if tools is None else tools
        """The toolset offered to both sides: the example's inline ``tools`` or its resolved
        ``toolset_ref`` sidecar; None when it is not known (a sidecar that was not found)."""
        self.single_shot = source.round_count is None and target.round_count is None
        """Neither side was replayed round by round: every call is round 1."""
        self.source_calls: list[ToolCall] = source.calls
        self.target_calls: list[ToolCall] = target.calls
        self.source_names: tuple[str, ...] = tuple(map(tool_name_of, self.source_calls))
        """Tool names of every source call, in order (the whole trace, all rounds)."""
        self.target_names: tuple[str, ...] = tuple(map(tool_name_of, self.target_calls))
        self._same_calls: bool | None = None
        self._matches: list[int | None] | None = None
        self._arguments_equal: list[bool] | None = None
        self._expected_names: Any = _ABSENT  # not read yet (None: the example has no ground truth)

    @property
    def expected_names(self) -> tuple[str, ...] | None:
        """Tool names of the example's expected calls for round 1, or None without ground truth."""
        names = self._expected_names
        if names is _ABSENT:
            expected = self.example.expected_round(1)
            names = self._expected_names = None if expected is None else tuple(map(tool_name_of, expected))
        return names

    @property
    def matches(self) -> list[int | None]:
        """``match_calls_greedy(source_calls, target_calls)``: for each source call, its target call.

        Shared, read-only: agent_trace and (on single-shot pairs) tool_arguments match alike.
        """
        matches = self._matches
        if matches is None:
            matches = self._matches = match_names_greedy(self.source_names, self.target_names)
        return matches

    @property
    def arguments_equal(self) -> list[bool]:
        """Per source call: matched (:attr:`matches`) to a target call with JSON-equal arguments."""
        equal = self._arguments_equal
        if equal is None:
            if self.source_names == self.target_names:  # every call matched to its twin
                equal = [json_equal(s.arguments, t.arguments) for s, t in zip(self.source_calls, self.target_calls)]
            else:
                target_calls = self.target_calls
                equal = [j is not None and json_equal(call.arguments, target_calls[j].arguments)
                         for call, j in zip(self.source_calls, self.matches)]
            self._arguments_equal = equal
        return equal

    @property
    def names_unique(self) -> bool:
        """No tool is called twice on either side: every matching rule pairs the calls alike."""
        src, tgt = self.source_names, self.target_names
        return len(set(src)) == len(src) and len(set(tgt)) == len(tgt)

    @property
    def same_calls(self) -> bool:
        """The target made the source's calls: same names in the same order, JSON-equal arguments."""
        same = self._same_calls
        if same is None:
            # Equal name sequences match every call to its twin (``match_calls_greedy``).
            same = self._same_calls = self.source_names == self.target_names and all(self.arguments_equal)
        return same


def round_calls(trace: ToolTrace, k: int) -> list[ToolCall]:
    """``trace.round(k)`` without copying the call list of a single-shot trace (hot path)."""
    if trace.round_count is None:
        return trace.calls if k == 1 else []
    return trace.round(k)


def replayed_rounds(source: ToolTrace, target: ToolTrace) -> list[int] | None:
    """Rounds to grade, or None on a single-shot pair (which then carries no ``rounds`` key)."""
    if source.round_count is None and target.round_count is None:
        return None
    return list(range(1, max(source.round_count or 1, target.round_count or 1) + 1))


def is_number(value: Any) -> bool:
    """A JSON number: int or float, never bool."""
    t = type(value)
    return t is int or t is float


_JSON_SCALARS = frozenset({str, int, float, bool, type(None)})


def json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: ``12 == 12.0`` but ``12.0 != "12"`` and ``1 != true``."""
    ta, tb = type(a), type(b)
    if ta is tb:
        if ta is dict:
            if len(a) != len(b):
                return False
            for key, v in a.items():
                w = b.get(key, _ABSENT)
                tv = type(v)
                # scalars of one type inline: this loop is the hot path of two evaluators
                if tv is type(w) and tv in _JSON_SCALARS:
                    if v != w:
                        return False
                elif w is _ABSENT or not json_equal(v, w):
                    return False
            return True
        if ta is list:
            return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
        return bool(a == b)
    if (ta is int or ta is float) and (tb is int or tb is float):
        return bool(a == b)
    if ta in (list, tuple) and tb in (list, tuple):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    return False


def match_calls_greedy(reference: Sequence[ToolCall | Any], actual: Sequence[ToolCall]) -> list[int | None]:
    """For each reference call, the index of its actual call, or None when never made.

    The seed's rule: calls are matched greedily by ``(tool_name, nearest sequence_index)``.
    Positions within the round stand in for ``sequence_index`` (they are equal on a
    single-shot trace; on a multi-round trace earlier rounds may differ in call count).
    """
    return match_names_greedy(tuple(map(tool_name_of, reference)), tuple(map(tool_name_of, actual)))


def match_names_greedy(reference: Sequence[str], actual: Sequence[str]) -> list[int | None]:
    """:func:`match_calls_greedy` on the two sides' tool names, in call order."""
    n = len(reference)
    if n == len(actual) and reference == actual:
        return list(range(n))  # same names in the same order: every call is its own nearest
    positions: dict[str, list[int]] = {}  # per name, its unmatched actual positions, ascending
    for j, name in enumerate(actual):
        free = positions.get(name)
        if free is None:
            positions[name] = [j]
        else:
            free.append(j)
    out: list[int | None] = []
    for i, name in enumerate(reference):
        free = positions.get(name)
        if not free:
            out.append(None)
        elif len(free) == 1:
            out.append(free.pop())
        else:
            # The nearest free position; on a tie the earlier one.
            k = bisect_left(free, i)
            if k == len(free) or (k > 0 and i - free[k - 1] <= free[k] - i):
                k -= 1
            out.append(free.pop(k))
    return out


MATCHING = ("optimal", "greedy")
"""How calls are paired: ``optimal`` (the default) assigns the calls of one model response to
maximise their argument agreement and pairs the rest by nearest position; ``greedy`` is seed
000's literal rule, ``(tool_name, nearest sequence_index)``."""


def round_of(call: Any) -> int | None:
    """The model round a call belongs to (None on single-shot traces and expectations)."""
    return getattr(call, "round_index", None)


def match_calls(
    reference: Sequence[Any],
    actual: Sequence[Any],
    score: Callable[[int, int], float],
    *,
    matching: str = "optimal",
) -> list[int | None]:
    """For each reference call, the index of its actual call, or None when never made.

    ``matching="greedy"`` is :func:`match_calls_greedy`. ``optimal``: calls of one model response
    (the same round; every call of a single-shot trace is one response) have no order of their
    own, so within a round the calls of each tool are assigned to maximise the summed
    ``score(i, j)`` (argument agreement, ties broken by distance in the sequence); a response
    that lists the same calls in another order then matches call for call. Calls left over
    (a round made more calls of a tool than the other side's) are paired across rounds by
    nearest position, as the greedy rule does.
    """
    if matching == "greedy":
        return match_calls_greedy(reference, actual)
    out: list[int | None] = [None] * len(reference)
    groups: dict[tuple[int | None, str], tuple[list[int], list[int]]] = {}
    for i, call in enumerate(reference):
        groups.setdefault((round_of(call), call.tool_name), ([], []))[0].append(i)
    for j, call in enumerate(actual):
        group = groups.get((round_of(call), call.tool_name))
        if group is not None:
            group[1].append(j)
    used: set[int] = set()
    for ref_idx, act_idx in groups.values():
        if not act_idx:
            continue
        if len(ref_idx) == 1 and len(act_idx) == 1:
            out[ref_idx[0]] = act_idx[0]
            used.add(act_idx[0])
            continue
        import numpy as np
        from scipy.optimize import linear_sum_assignment

        cost = np.array([[-score(i, j) + 1e-6 * abs(i - j) for j in act_idx] for i in ref_idx], dtype=float)
        rows, cols = linear_sum_assignment(cost)
        for r, c in zip(rows.tolist(), cols.tolist()):
            out[ref_idx[r]] = act_idx[c]
            used.add(act_idx[c])
    if len(used) < len(actual):
        free: dict[str, list[int]] = {}
        for j, call in enumerate(actual):
            if j not in used:
                free.setdefault(call.tool_name, []).append(j)
        for i, j in enumerate(out):
            candidates = free.get(reference[i].tool_name) if j is None else None
            if candidates:
                nearest = min(candidates, key=lambda k: (abs(k - i), k))  # on a tie the earlier one
                candidates.remove(nearest)
                out[i] = nearest
    return out


def reordered(reference: Sequence[str], actual: Sequence[str]) -> list[str]:
    """The tools whose calls moved: names at the positions where the two sequences differ."""
    return list(dict.fromkeys(a for a, b in zip(reference, actual) if a != b))


def surplus(a: Sequence[str], b: Sequence[str]) -> list[str]:
    """The names ``a`` has more often than ``b``, grouped by first appearance in ``a``.

    ``list((Counter(a) - Counter(b)).elements())`` without building two Counters (hot path).
    """
    if len(a) + len(b) > 64:  # the list scans below are quadratic; count instead
        counts: dict[str, int] = {}
        for x in a:
            counts[x] = counts.get(x, 0) + 1
        for x in b:
            if x in counts:
                counts[x] -= 1
        return [x for x, k in counts.items() for _ in range(k)]
    rest = list(a)
    for x in b:
        if x in rest:
            rest.remove(x)
    if len(rest) > 1:
        rest.sort(key=a.index)  # group repeats at their name's first appearance (stable)
    return rest


def call_names(calls: Sequence[Any] | None) -> list[str]:
    return [c.tool_name for c in calls or ()]
