"""Work that splits by example, on both cores: the second half in a forked process.

Scoring a large run and building its report rows split by example; each half writes what it
makes to files of its own and hands back what the parent joins, in range order, so the result
is the same as one process would make.
"""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from ._exceptions import EvalShiftError

PARALLEL_MIN_EXAMPLES = 20_000
"""Runs from this many examples up use two processes (below it, forking costs more than it saves)."""

T = TypeVar("T")


def _parallel(n: int) -> bool:
    """Whether splitting work over ``n`` examples between two processes pays and is safe: a
    large run, two cores, fork available, and no other thread that a fork could catch holding a lock."""
    return (n >= PARALLEL_MIN_EXAMPLES and (os.cpu_count() or 1) >= 2 and sys.platform != "win32"
            and "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1)


def _child(work: Callable[[range], T], part: range, conn: Any) -> None:
    try:
        conn.send((True, work(part)))
    except BaseException as exc:  # handed to the parent, which raises it
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:  # an exception that does not travel: its words do
            exc = EvalShiftError(f"{type(exc).__name__}: {exc}")
        conn.send((False, exc))
    finally:
        conn.close()


def half(part: range) -> int:
    """Which half ``part`` is: 0 for the parent's (the one starting at 0), 1 for the forked one's."""
    return 0 if part.start == 0 else 1


def in_halves(work: Callable[[range], T], n: int, *, meanwhile: Callable[[], object] | None = None,
              share: float = 0.5) -> list[T]:
    """``work`` over examples ``[0, n)``: as one range, or as two halves with the second in a
    forked process when :func:`_parallel` says so and both halves hold examples. Results come in
    range order; the parent's part is the one starting at 0.

    ``meanwhile`` is work of the parent's own for after its half, while the forked half still
    runs; on one process it runs after the whole range. ``share`` is the parent's part of the
    range, less than half when it has more to do besides (``meanwhile``, receiving results).
    """
    half = int(n * share)
    if not _parallel(n) or not 0 < half < n:
        done = [work(range(n))]
        if meanwhile is not None:
            meanwhile()
        return done
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(work, range(half, n), send), daemon=True)
    child.start()
    send.close()
    try:
        mine = work(range(half))
        if meanwhile is not None:
            meanwhile()
        try:
            ok, theirs = receive.recv()
        except EOFError:
            child.join()
            raise EvalShiftError(f"the process scoring the second half of the run ended without a result "
                                 f"(exit code {child.exitcode})") from None
    finally:
        receive.close()
        child.join()
    if not ok:
        raise theirs
    return [mine, theirs]


