"""Which tools each side called, counted in examples from a run's Call rows.

What a reviewer reads first ("notify_security_team: 22% → 0%", "on 3 it called issue_refund where
the source called lookup_order") and what the headline, the report and the notebook chart share.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._models import Call, Example
from ._records import ComparisonResult
from ._severity import severity_of


@dataclass(frozen=True)
class ToolShare:
    """One tool across the paired examples: how many called it on each side, and what changed."""

    tool: str
    source: int
    """Examples in which the source called the tool (in any round)."""
    target: int
    """Examples in which the target called it."""
    dropped: int
    """Examples in which the source called it and the target did not."""
    added: int
    """Examples in which the target called it and the source did not."""
    dropped_tags: dict[str, int] = field(default_factory=dict)
    """Tags of the dropped examples, each counted once per example."""
    added_tags: dict[str, int] = field(default_factory=dict)
    """Tags of the added examples."""


@dataclass(frozen=True)
class Swap:
    """Examples in which the target called ``target_tool`` where the source called ``source_tool``."""

    source_tool: str
    target_tool: str
    examples: int
    tags: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolUse:
    """Per-tool call counts over the examples both sides answered (``examples``)."""

    examples: int
    tools: list[ToolShare] = field(default_factory=list)
    """Most changed first (``dropped + added``), then most called."""
    swaps: list[Swap] = field(default_factory=list)
    """Most frequent first."""
    tags: dict[str, int] = field(default_factory=dict)
    """Examples per tag among the paired ones (so "7 of 7 tagged security" can be said)."""

    def tool(self, name: str) -> ToolShare | None:
        return next((t for t in self.tools if t.tool == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "examples": self.examples,
            "tags": dict(self.tags),
            "tools": [t.__dict__ | {"dropped_tags": dict(t.dropped_tags), "added_tags": dict(t.added_tags)}
                      for t in self.tools],
            "swaps": [s.__dict__ | {"tags": dict(s.tags)} for s in self.swaps],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolUse:
        return cls(
            examples=int(data.get("examples") or 0),
            tags=dict(data.get("tags") or {}),
            tools=[ToolShare(**t) for t in data.get("tools") or []],
            swaps=[Swap(**s) for s in data.get("swaps") or []],
        )


def _sorted_counts(counter: Counter[str]) -> dict[str, int]:
    return dict(sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])))


class ToolUseTally:
    """Counts tool use example by example (:func:`tool_use` over a whole run at once)."""

    def __init__(self) -> None:
        self.called: dict[str, list[int]] = {}
        self.dropped: dict[str, Counter[str]] = {}
        self.added: dict[str, Counter[str]] = {}
        self.n_dropped: Counter[str] = Counter()
        self.n_added: Counter[str] = Counter()
        self.swaps: Counter[tuple[str, str]] = Counter()
        self.swap_tags: dict[tuple[str, str], Counter[str]] = {}
        self.tags: Counter[str] = Counter()
        self.paired = 0

    def add(self, example: Example, src: Call | None, tgt: Call | None) -> None:
        """Count one example's source and target rows (the source's first replay); only examples
        both sides answered count (a failed call leaves an example unmeasured)."""
        if src is None or tgt is None or src.error or tgt.error or src.trace is None or tgt.trace is None:
            return
        self.paired += 1
        ex_tags = list(dict.fromkeys(example.tags))
        self.tags.update(ex_tags)
        s_names, t_names = set(src.trace.names()), set(tgt.trace.names())
        for name in s_names | t_names:
            counts = self.called.setdefault(name, [0, 0])
            counts[0] += name in s_names
            counts[1] += name in t_names
        lost, gained = sorted(s_names - t_names), sorted(t_names - s_names)
        for name in lost:
            self.n_dropped[name] += 1
            self.dropped.setdefault(name, Counter()).update(ex_tags)
        for name in gained:
            self.n_added[name] += 1
            self.added.setdefault(name, Counter()).update(ex_tags)
        if len(lost) == 1 and len(gained) == 1:  # one tool called in place of another
            self.swaps[(lost[0], gained[0])] += 1
            self.swap_tags.setdefault((lost[0], gained[0]), Counter()).update(ex_tags)

    def merge(self, other: ToolUseTally) -> None:
        """Count ``other``'s examples too (the examples another process counted)."""
        for name, (s, t) in other.called.items():
            counts = self.called.setdefault(name, [0, 0])
            counts[0] += s
            counts[1] += t
        for mine, theirs in ((self.dropped, other.dropped), (self.added, other.added), (self.swap_tags, other.swap_tags)):
            for key, counter in theirs.items():
                mine.setdefault(key, Counter()).update(counter)
        self.n_dropped.update(other.n_dropped)
        self.n_added.update(other.n_added)
        self.swaps.update(other.swaps)
        self.tags.update(other.tags)
        self.paired += other.paired

    def result(self) -> ToolUse:
        shares = [
            ToolShare(tool=name, source=s, target=t, dropped=self.n_dropped[name], added=self.n_added[name],
                      dropped_tags=_sorted_counts(self.dropped.get(name, Counter())),
                      added_tags=_sorted_counts(self.added.get(name, Counter())))
            for name, (s, t) in self.called.items()
        ]
        shares.sort(key=lambda x: (-(x.dropped + x.added), -max(x.source, x.target), x.tool))
        swap_list = [Swap(source_tool=a, target_tool=b, examples=n, tags=_sorted_counts(self.swap_tags[(a, b)]))
                     for (a, b), n in sorted(self.swaps.items(), key=lambda kv: (-kv[1], kv[0]))]
        return ToolUse(examples=self.paired, tools=shares, swaps=swap_list, tags=_sorted_counts(self.tags))


def tool_use(examples: Iterable[Example], calls: Iterable[Call]) -> ToolUse:
    """Count, per tool, the examples in which each side called it; only examples both sides
    answered count (a failed call leaves an example unmeasured)."""
    from ..store._rows import pair_rows

    tally = ToolUseTally()
    for ex, src, tgt, _ in pair_rows(examples, calls):  # the source's first replay, not its repeats
        tally.add(ex, src, tgt)
    return tally.result()


def first_diverged_round(source: Call, target: Call) -> int | None:
    """The first round whose tool names differ between the two sides; None when none does."""
    if source.trace is None or target.trace is None:
        return None
    rounds = max(source.trace.round_count or 1, target.trace.round_count or 1)
    for k in range(1, rounds + 1):
        if [c.tool_name for c in source.trace.round(k)] != [c.tool_name for c in target.trace.round(k)]:
            return k
    return None


TOOL_CALLS = "tool_calls"
"""The comparisons of how often each side called each tool (``tool_calls.<tool>`` in analysis.json)."""


def call_rate_comparisons(use: ToolUse) -> list[ComparisonResult]:
    """Per tool, whether the target calls it as often as the source: the exact McNemar test.

    Only the examples where one side called the tool and the other did not carry evidence, so
    the test is the exact two-sided binomial test on those (``dropped`` against ``added``). It
    compares the source's replay with the target's directly, two samples of the same kind, so it
    needs no A/A baseline: under a no-op migration either side is as likely to be the one that
    called it. Averaged scores dilute one tool that stops being called on a tenth of the
    examples among the differences every run has; this test sees it.
    """
    from scipy.stats import binomtest

    n = use.examples
    out: list[ComparisonResult] = []
    if not n:
        return out
    for t in use.tools:
        discordant = t.dropped + t.added
        difference = (t.target - t.source) / n
        if discordant:
            pvalue = float(binomtest(t.added, discordant, 0.5).pvalue)
            test, reason = "mcnemar", (f"exact McNemar on the {discordant} examples where one side called "
                                       f"{t.tool} and the other did not ({t.dropped} dropped, {t.added} added)")
        else:
            pvalue, test, reason = 1.0, "none", f"both sides called {t.tool} on the same examples"
        out.append(ComparisonResult(
            evaluator=TOOL_CALLS, name=t.tool, n=n, source_mean=t.source / n, target_mean=t.target / n,
            difference=difference, test=test, test_reason=reason, statistic=float(t.added - t.dropped),
            p_value=pvalue, regressed=t.dropped, share_affected=discordant / n,
            severity=severity_of(abs(difference), discordant / n) if discordant else None,
        ))
    return out
