"""Turn assembly: spans arrive in the order they end, so a turn is complete when its root arrives.

Spans whose root has not arrived yet stay pending (across files, rotations and, through the sync
state, across syncs): memory is bounded by the open turns, not the file.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from evalshift_sdk import schema as A

from ._otlp import Span

# OTLP SpanFlags: bit 8 says whether the parent's remoteness is known, bit 9 that it is remote.
_REMOTE_PARENT = 0x300


def is_turn_root(span: Span) -> bool:
    """A span that closes an agent turn: a trace root, our ``invoke_agent``, or a remote child."""
    if span.parent_span_id is None:
        return True
    if span.scope == A.SCOPE_NAME and span.name.startswith(A.OP_INVOKE_AGENT):
        return True
    return (span.flags & _REMOTE_PARENT) == _REMOTE_PARENT


class TurnAssembler:
    """Collects spans by trace and releases a turn's spans when its root arrives."""

    RECENT = 4096
    """Closed traces remembered, to tell a span that ended after its root from a new turn."""

    def __init__(self, pending: Iterable[Span] = ()) -> None:
        self.pending: dict[str, list[Span]] = {}
        for span in pending:
            self.pending.setdefault(span.trace_id, []).append(span)
        self._closed: OrderedDict[str, None] = OrderedDict()
        self.late = 0
        """Spans that ended after their trace's root span and were left out of its turn."""
        self.late_source: str | None = None

    def add(self, span: Span) -> list[Span] | None:
        """Add one span; returns a complete turn's spans (root last) when ``span`` closes one."""
        if span.parent_span_id is not None and not is_turn_root(span):
            if span.trace_id in self._closed:
                # e.g. a stream consumed after the request span ended: too late for its turn.
                self.late += 1
                self.late_source = self.late_source or span.source
                return None
            pending = self.pending.get(span.trace_id)
            if pending is None:
                self.pending[span.trace_id] = [span]
            else:
                pending.append(span)
            return None
        if span.parent_span_id is None:
            self._closed[span.trace_id] = None
            if len(self._closed) > self.RECENT:
                self._closed.popitem(last=False)
        waiting = self.pending.pop(span.trace_id, None)
        if not waiting:
            return [span]
        if span.parent_span_id is None:
            waiting.append(span)
            return waiting
        # A turn inside a host's trace: take only the root's descendants; the rest keeps waiting.
        children: dict[str | None, list[Span]] = {}
        for s in waiting:
            children.setdefault(s.parent_span_id, []).append(s)
        turn: list[Span] = []
        stack = [span.span_id]
        while stack:
            for child in children.pop(stack.pop(), ()):
                turn.append(child)
                stack.append(child.span_id)
        taken = {id(s) for s in turn}
        rest = [s for s in waiting if id(s) not in taken]
        if rest:
            self.pending[span.trace_id] = rest
        turn.append(span)
        return turn

    def held_back(self) -> list[Span]:
        """Spans whose turn has not ended yet."""
        return [s for spans in self.pending.values() for s in spans]

    @property
    def held_back_turns(self) -> int:
        return len(self.pending)

    def late_warning(self) -> str | None:
        """What to tell the user about spans that ended after their turn's root, if any."""
        if not self.late:
            return None
        return (f"{self.late} span(s) ended after their turn's root span and were left out of it "
                f"(first at {self.late_source}): a model call or tool outliving the turn that made it")

