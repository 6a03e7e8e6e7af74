"""The SDK's own spans, and the queue that takes them from the host's threads to the export
thread.

The OpenTelemetry SDK's ``Span`` (sampler, locks, attribute cleaning on every set, a context
per span) cost more than everything else a turn or a model call does on the host's thread;
every value the SDK sets is already a valid attribute value, and the turn decides sampling.
A finished span goes to the export thread as it is: no ``ReadableSpan`` and no ``SpanContext``
are built for it on the host's thread (each was two more objects a call for the garbage
collector to walk while the span waits in the queue), and the capture files are written from
its fields. ``to_readable()`` builds the OpenTelemetry form for an OTLP exporter.
"""

from __future__ import annotations

import collections
import logging
import os
import random
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, attach, detach, set_value
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

logger = logging.getLogger("evalshift_sdk")

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)


def nonzero_bits(n: int) -> int:
    # The global generator is reseeded in a forked child, so a worker's ids never repeat ours.
    value = random.getrandbits(n)
    while value == 0:
        value = random.getrandbits(n)
    return value


class CaptureSpan:
    """One span: a turn, a model call or a tool execution, in flight and then finished.

    Without ``parent`` (a ``CaptureSpan`` or a ``SpanContext``) it starts a new trace: a turn
    is always a root, never a child of the host's own spans (ingest groups by trace, and two
    turns in one host request stay two). Once ended it reads like a ``ReadableSpan``.
    """

    __slots__ = (
        "rt", "name", "kind", "trace_id", "span_id", "parent_id", "attributes", "status", "start_time", "end_time",
    )

    events: tuple[Any, ...] = ()
    links: tuple[Any, ...] = ()

    def __init__(
        self,
        rt: Any,
        name: str,
        parent: Any,
        attributes: dict[str, Any],
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> None:
        self.rt = rt
        self.name = name
        self.kind = kind
        if parent is None:
            self.trace_id = nonzero_bits(128)
            self.parent_id = None
        else:
            self.trace_id = parent.trace_id
            self.parent_id = parent.span_id
        self.span_id = nonzero_bits(64)
        self.attributes = attributes
        self.status = _UNSET
        self.start_time = time.time_ns()
        self.end_time: int | None = None

    @property
    def context(self) -> SpanContext:
        return SpanContext(self.trace_id, self.span_id, is_remote=False, trace_flags=_SAMPLED)

    def get_span_context(self) -> SpanContext:
        return self.context

    @property
    def parent(self) -> SpanContext | None:
        if self.parent_id is None:
            return None
        return SpanContext(self.trace_id, self.parent_id, is_remote=False, trace_flags=_SAMPLED)

    @property
    def resource(self) -> Any:
        return self.rt.resource

    @property
    def instrumentation_scope(self) -> Any:
        return self.rt.scope

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self.attributes.update(attributes)

    def set_status(self, status: Status) -> None:
        self.status = status

    def end(self) -> None:
        self.end_time = time.time_ns()
        self.rt.processor.on_end(self)

    def to_readable(self) -> ReadableSpan:
        return ReadableSpan(
            name=self.name,
            context=self.context,
            parent=self.parent,
            resource=self.resource,
            attributes=self.attributes,
            kind=self.kind,
            status=self.status,
            start_time=self.start_time,
            end_time=self.end_time,
            instrumentation_scope=self.instrumentation_scope,
        )


class SpanQueue:
    """Finished spans, queued by the host's threads and exported in batches by one daemon
    thread: when ``max_batch`` are waiting, else every ``delay_s``.

    ``on_end`` is the whole of the host's share: an append, and a wake-up once per batch.
    ``force_flush`` and ``shutdown`` export what is queued on the calling thread. A forked
    child starts with an empty queue and a thread of its own.

    A host thread can keep the export thread from running at all: one that is always busy and
    lets go of the GIL only for moments (an event loop with calls always in flight, a client
    that never waits on a socket) wins it back each time before the export thread wakes, and
    CPython then never forces a switch. The queue would fill and spans be dropped. So from
    ``high_water`` spans waiting, the thread that queues one exports a batch itself: the host
    pays for its own spans rather than lose them.
    """

    def __init__(
        self, exporter: Any, *, max_batch: int = 64, delay_s: float = 1.0, max_queue: int = 16384,
        high_water: int = 1024,
    ) -> None:
        self.exporter = exporter
        self.max_batch = max_batch
        self.delay_s = delay_s
        self.max_queue = max_queue
        self.high_water = high_water
        self.dropped = 0
        self.exported_by_host = 0
        """Batches a host thread exported because the export thread was kept from running."""
        self._shutdown = False
        self._start()
        if hasattr(os, "register_at_fork"):
            ref = weakref.ref(self)

            def reinit() -> None:
                queue = ref()
                if queue is not None and not queue._shutdown:
                    queue._start()

            os.register_at_fork(after_in_child=reinit)

    def _start(self) -> None:
        self._queue: collections.deque[Any] = collections.deque()
        self._wake = threading.Event()
        self._export_lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="evalshift-export", daemon=True)
        self._thread.start()

    def on_end(self, span: Any) -> None:
        queue = self._queue
        if self._shutdown:
            return
        if len(queue) >= self.max_queue:
            # The export thread is far behind: drop rather than grow without bound.
            self.dropped += 1
            if self.dropped == 1:
                logger.warning("evalshift_sdk: span queue full (%d spans), dropping spans", self.max_queue)
            return
        queue.append(span)
        waiting = len(queue)
        if waiting >= self.max_batch:
            if waiting >= self.high_water:
                self._export_one_batch()
            elif not self._wake.is_set():
                self._wake.set()

    def _run(self) -> None:
        while not self._shutdown:
            self._wake.wait(self.delay_s)
            self._wake.clear()
            if not self._shutdown:
                self._export_queued()

    def _take(self) -> list[Any]:
        """Up to ``max_batch`` spans off the queue, which host threads may be taking from too."""
        queue, batch = self._queue, []
        try:
            for _ in range(self.max_batch):
                batch.append(queue.popleft())
        except IndexError:
            pass
        return batch

    def _export_queued(self) -> None:
        with self._export_lock:
            while batch := self._take():
                self._export(batch)

    def _export_one_batch(self) -> None:
        """A batch exported on the host's thread, beside whatever the export thread is doing
        (it may be holding the export lock while it waits for the GIL)."""
        batch = self._take()
        if batch:
            self.exported_by_host += 1
            if self.exported_by_host == 1:
                logger.info("evalshift_sdk: the export thread is kept from running; exporting on the host's threads")
            self._export(batch)

    def _export(self, batch: list[Any]) -> None:
        # Whatever the exporters send over HTTP is not the host's traffic to trace.
        token = attach(set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        try:
            self.exporter.export(batch)
        except Exception:  # noqa: BLE001 - the export must survive anything
            logger.debug("evalshift_sdk: export failed", exc_info=True)
        finally:
            detach(token)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        self._export_queued()
        return True

    def shutdown(self) -> None:
        if self._shutdown:
            return
        self._shutdown = True
        self._wake.set()
        if self._thread is not threading.current_thread():
            self._thread.join(30)
        self._export_queued()
        self.exporter.shutdown()
