"""The store's locks across processes: a held run is refused to a second process, and a holder
that dies (SIGKILL: no cleanup runs) leaves nothing that blocks the next one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from evalshift_core import ReplayError
from evalshift_core.store._lock import file_lock, run_lock

HOLD = """
import sys, time
from evalshift_core.store._lock import {fn}
with {fn}(*sys.argv[1:]):
    print("held", flush=True)
    time.sleep(600)
"""


def _holder(fn: str, *args: str) -> subprocess.Popen[str]:
    child = subprocess.Popen([sys.executable, "-c", HOLD.format(fn=fn), *args], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    return child


def _kill(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)


def test_a_run_held_by_another_process_is_refused_then_free_once_it_dies(tmp_path):
    child = _holder("run_lock", str(tmp_path), "r1")
    try:
        with pytest.raises(ReplayError, match="run r1 is being replayed by another process"), run_lock(tmp_path, "r1"):
            pass
    finally:
        _kill(child)
    assert (tmp_path / ".replay.lock").exists()  # the dead holder's file is still there ...
    with run_lock(tmp_path, "r1"):  # ... and blocks nothing
        pass
    with run_lock(tmp_path, "r1"):  # released on exit: taken again at once
        pass


def test_a_run_lock_excludes_a_second_holder_in_the_same_process(tmp_path):
    with run_lock(tmp_path, "r1"), pytest.raises(ReplayError), run_lock(tmp_path, "r1"):
        pass


def test_a_file_lock_waits_for_a_live_holder_and_not_for_a_dead_one(tmp_path):
    path = tmp_path / "base" / "sync.lock"
    child = _holder("file_lock", str(path))
    acquired = threading.Event()

    def take() -> None:
        with file_lock(path):
            acquired.set()

    t = threading.Thread(target=take)
    t.start()
    time.sleep(0.3)
    assert not acquired.is_set()  # waiting on the live holder
    _kill(child)
    t.join(timeout=30)
    assert acquired.is_set()
