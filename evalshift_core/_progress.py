"""Progress bars for the long steps (load, score, analyse, render): tqdm on stderr.

A bar appears only once its step has run for ``PROGRESS_DELAY_S``, so a small run stays quiet
and a 100k-example one shows where its seconds go. Off when stderr is not a terminal.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")

PROGRESS_DELAY_S = 2.0
"""Seconds a step runs before its bar is drawn."""


def progress_enabled() -> bool:
    """Bars go to a person at a terminal; a log file or a pipe gets none."""
    return sys.stderr.isatty()


@cache
def bar_class() -> Any:
    """tqdm without its monitor thread (it only retunes how often a slow bar redraws): with no
    thread of ours running, a large evaluate may fork to use both cores."""
    from tqdm import tqdm

    class Bar(tqdm):  # type: ignore[misc]
        monitor_interval = 0

    return Bar


def progress_bar(total: int | None, desc: str, *, unit: str = "row", enabled: bool | None = None) -> Any:
    """A tqdm bar on stderr, drawn after ``PROGRESS_DELAY_S`` and removed when done."""
    on = progress_enabled() if enabled is None else enabled
    return bar_class()(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not on, delay=PROGRESS_DELAY_S,
                leave=False, dynamic_ncols=True)


def counted(items: Iterable[T], bar: Any) -> Iterable[T]:
    """``items`` counted on ``bar``; handed back untouched when the bar is off."""
    if bar.disable:
        return items
    return _counting(items, bar)


def _counting(items: Iterable[T], bar: Any) -> Iterator[T]:
    for item in items:
        bar.update()
        yield item


def tracked(items: Iterable[T], total: int | None, desc: str, *, unit: str = "row",
            enabled: bool | None = None) -> Iterator[T]:
    """``items`` with a bar of their own, closed when they run out."""
    with progress_bar(total, desc, unit=unit, enabled=enabled) as bar:
        yield from counted(items, bar)


def count_lines(path: Any) -> int:
    """Lines of a file, counted in 1 MiB blocks (a bar's total; ~0.1 s per 100 MB)."""
    n = 0
    with open(path, "rb") as fh:
        while block := fh.read(1 << 20):
            n += block.count(b"\n")
    return n
