"""The span queue between the host's threads and the export thread."""

from __future__ import annotations

import logging
import threading

from evalshift_sdk._spans import SpanQueue


class _Recorder:
    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.shut = False

    def export(self, batch):
        self.batches.append(list(batch))

    def shutdown(self):
        self.shut = True


def test_spans_from_many_threads_are_exported_once_each_in_batches():
    recorder = _Recorder()
    queue = SpanQueue(recorder, max_batch=8, delay_s=0.05)
    threads = [threading.Thread(target=lambda base=t: [queue.on_end(base * 1000 + i) for i in range(250)]) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert queue.force_flush()
    queue.shutdown()
    exported = [span for batch in recorder.batches for span in batch]
    assert sorted(exported) == sorted(t * 1000 + i for t in range(4) for i in range(250))
    assert max(len(batch) for batch in recorder.batches) <= 8
    assert recorder.shut


def test_a_full_queue_drops_new_spans_and_says_so_once(caplog):
    recorder = _Recorder()
    queue = SpanQueue(recorder, max_batch=1000, delay_s=60, max_queue=5)  # the export thread sleeps on
    with caplog.at_level(logging.WARNING, logger="evalshift_sdk"):
        for i in range(8):
            queue.on_end(i)
    queue.shutdown()
    assert [span for batch in recorder.batches for span in batch] == [0, 1, 2, 3, 4]
    assert queue.dropped == 3
    assert sum("span queue full" in r.message for r in caplog.records) == 1


def test_after_shutdown_spans_are_ignored_and_shutdown_is_idempotent():
    recorder = _Recorder()
    queue = SpanQueue(recorder, delay_s=60)
    queue.on_end("kept")
    queue.shutdown()
    queue.on_end("late")
    queue.shutdown()
    assert recorder.batches == [["kept"]]


def test_a_host_that_keeps_the_export_thread_from_running_exports_batches_itself(caplog):
    """An export thread stuck mid-export (as behind a GIL it never gets back) holds the export
    lock; from high_water spans waiting, the host's thread exports a batch instead of dropping."""
    release = threading.Event()

    class Stalled(_Recorder):
        def export(self, batch):
            if threading.current_thread().name == "evalshift-export":
                release.wait(10)
            super().export(batch)

    recorder = Stalled()
    queue = SpanQueue(recorder, max_batch=8, delay_s=60, max_queue=64, high_water=32)
    waiting = []
    with caplog.at_level(logging.INFO, logger="evalshift_sdk"):
        for i in range(500):
            queue.on_end(i)
            waiting.append(len(queue._queue))
    release.set()
    queue.shutdown()
    assert sorted(span for batch in recorder.batches for span in batch) == list(range(500))
    assert queue.dropped == 0 and max(waiting) < 32
    assert queue.exported_by_host >= (500 - 32 - 8) // 8
    assert sum("export thread is kept from running" in r.message for r in caplog.records) == 1
