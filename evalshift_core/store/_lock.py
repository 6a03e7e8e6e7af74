"""Advisory file locks: two ``capture sync`` runs on one suite base never interleave, and two
processes never replay one run at once.

``filelock.FileLock``: ``flock`` on POSIX (Linux, macOS), ``msvcrt.locking`` on Windows. Both are
held by the open file, so the operating system releases a lock when its holder dies, however it
dies: a lock file left behind by a killed process never blocks the next one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from filelock import FileLock

logger = logging.getLogger("evalshift_core")


def _lock(target: Path) -> FileLock:
    from filelock import FileLock

    # A fresh lock object per holder, not filelock's per-path singleton: two threads of one
    # process exclude each other the way two processes do.
    return FileLock(target, is_singleton=False, thread_local=False)


@contextmanager
def file_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing); waits while another holder has it."""
    from filelock import Timeout

    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    lock = _lock(target)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        logger.warning("evalshift: waiting for another sync holding %s", target)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


@contextmanager
def run_lock(run_dir: str | os.PathLike[str], run_id: str) -> Iterator[None]:
    """Hold a run folder for one replay: a second process replaying the same run (a ``--resume``
    while the first still waits on its batches) would write every row twice. Released when the
    holder exits, however it exits, so a killed run resumes at once."""
    from filelock import Timeout

    from .._exceptions import ReplayError

    lock = _lock(Path(run_dir) / ".replay.lock")
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise ReplayError(f"run {run_id} is being replayed by another process; wait for it "
                          f"(`evalshift run --status {run_id}`) or stop it, then resume") from None
    try:
        yield
    finally:
        lock.release()
