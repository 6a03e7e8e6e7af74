"""Advisory file locks: two ``capture sync`` runs on one suite base never interleave, and two
processes never replay one run at once.

POSIX ``flock``; where it does not exist the lock is a no-op (documented, not silent elsewhere).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("evalshift_core")


@contextmanager
def file_lock(path: str | os.PathLike[str]) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing); waits while another holder has it."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                logger.warning("evalshift: waiting for another sync holding %s", target)
                fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


@contextmanager
def run_lock(run_dir: str | os.PathLike[str], run_id: str) -> Iterator[None]:
    """Hold a run folder for one replay: a second process replaying the same run (a ``--resume``
    while the first still waits on its batches) would write every row twice. Released when the
    holder exits, however it exits, so a killed run resumes at once."""
    from .._exceptions import ReplayError

    target = Path(run_dir) / ".replay.lock"
    fd = os.open(target, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise ReplayError(f"run {run_id} is being replayed by another process; wait for it "
                                  f"(`evalshift run --status {run_id}`) or stop it, then resume") from None
        yield
    finally:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
