"""The SDK's own spans: built into a ``ReadableSpan`` when they end and handed straight to our
batch processor.

The OpenTelemetry SDK's ``Span`` (sampler, locks, attribute cleaning on every set, a context
per span) cost more than everything else a turn or a model call does on the host's thread;
every value the SDK sets is already a valid attribute value, and the turn decides sampling.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_UNSET = Status(StatusCode.UNSET)


def nonzero_bits(n: int) -> int:
    # The global generator is reseeded in a forked child, so a worker's ids never repeat ours.
    value = random.getrandbits(n)
    while value == 0:
        value = random.getrandbits(n)
    return value


class CaptureSpan:
    """One span in flight: a turn, a model call or a tool execution.

    Without ``parent`` it starts a new trace: a turn is always a root, never a child of the
    host's own spans (ingest groups by trace, and two turns in one host request stay two).
    """

    __slots__ = ("rt", "name", "kind", "context", "parent", "attributes", "status", "start_time")

    def __init__(
        self,
        rt: Any,
        name: str,
        parent: SpanContext | None,
        attributes: dict[str, Any],
        kind: SpanKind = SpanKind.INTERNAL,
    ) -> None:
        trace_id = parent.trace_id if parent is not None else nonzero_bits(128)
        self.rt = rt
        self.name = name
        self.kind = kind
        self.context = SpanContext(trace_id, nonzero_bits(64), is_remote=False, trace_flags=_SAMPLED)
        self.parent = parent
        self.attributes = attributes
        self.status = _UNSET
        self.start_time = time.time_ns()

    def get_span_context(self) -> SpanContext:
        return self.context

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self.attributes.update(attributes)

    def set_status(self, status: Status) -> None:
        self.status = status

    def end(self) -> None:
        self.rt.processor.on_end(
            ReadableSpan(
                name=self.name,
                context=self.context,
                parent=self.parent,
                resource=self.rt.resource,
                attributes=self.attributes,
                kind=self.kind,
                status=self.status,
                start_time=self.start_time,
                end_time=time.time_ns(),
                instrumentation_scope=self.rt.scope,
            )
        )
