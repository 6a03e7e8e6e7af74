"""EvalShift capture SDK: record what an agent offered, what the model requested, what ran.

``import evalshift_sdk`` loads only wrapt, OpenTelemetry and orjson; provider SDKs are patched
lazily by :func:`init`.
"""

from __future__ import annotations

import atexit
import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from ._guard import capture_internal_exceptions
from ._runtime import current_turn, record_tool, run_in_turn, tool, turn

__all__ = ["init", "shutdown", "turn", "tool", "record_tool", "run_in_turn", "is_enabled"]
__version__ = "0.1.0"

logger = logging.getLogger("evalshift_sdk")

DEFAULT_CAPTURE_DIR = ".evalshift/captures"
_atexit_registered = False


def _env_enabled() -> bool:
    return os.environ.get("EVALSHIFT_CAPTURE", "").strip().lower() in {"1", "true", "yes", "on"}


def is_enabled() -> bool:
    """True while capture is on (between :func:`init` and :func:`shutdown`)."""
    from ._runtime import get_runtime

    return get_runtime() is not None


def init(
    capture_dir: str | os.PathLike[str] | None = None,
    *,
    enabled: bool | None = None,
    providers: Iterable[str] | None = None,
    sample_rate: float = 1.0,
    redact: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    max_file_bytes: int | None = None,
    service_name: str | None = None,
    otlp_endpoint: str | None = None,
    otlp_headers: dict[str, str] | None = None,
    record_exception_text: bool = True,
) -> bool:
    """Start capturing; patch the installed provider SDKs. Idempotent; returns whether capture is on.

    ``enabled=None`` reads ``EVALSHIFT_CAPTURE``; ``capture_dir=None`` reads
    ``EVALSHIFT_CAPTURE_DIR``, else ``.evalshift/captures``. ``providers`` names the SDKs to
    patch (``"openai"``, ``"anthropic"``, ``"google-genai"``; default: every installed one); a
    provider named here that cannot be patched raises.

    ``sample_rate`` keeps that fraction of turns (whole turns, never parts of one).
    ``redact(attributes) -> attributes | None`` runs on the export thread before anything is
    written or sent, on every attribute set that leaves the SDK: each span's attributes plus
    ``otel.status_description`` (its status message: an exception's text, a provider's error)
    when it has one (None drops the span), each span event's attributes (None drops the
    event) and the resource attributes. Whatever it returns, credentials (``sk-...`` keys,
    bearer tokens, key headers, ``key=``) are stripped from every text. ``record_exception_text
    =False`` records an error as its exception type only. ``max_file_bytes`` rotates capture
    files by size. ``otlp_endpoint`` (e.g. ``http://collector:4318``, needs
    ``evalshift[otlp]``) also sends every span to an OpenTelemetry Collector over OTLP/HTTP.
    """
    from . import _runtime as rt_mod
    from .instrumentation import instrument, uninstrument

    if enabled is None:
        enabled = _env_enabled()
    if not enabled:
        return False
    with rt_mod.runtime_lock:
        if rt_mod.get_runtime() is not None:
            return True
        directory = os.fspath(capture_dir or os.environ.get("EVALSHIFT_CAPTURE_DIR") or DEFAULT_CAPTURE_DIR)
        rt = _build_runtime(
            directory, sample_rate, redact, max_file_bytes, service_name, otlp_endpoint, otlp_headers
        )
        rt.record_exception_text = bool(record_exception_text)
        rt_mod.set_runtime(rt)
        try:
            instrument(providers)
        except BaseException:
            # A provider the user named cannot be patched: leave nothing half-started.
            rt_mod.set_runtime(None)
            with capture_internal_exceptions("init.rollback"):
                uninstrument()
                rt.processor.shutdown()
            raise
        global _atexit_registered
        if not _atexit_registered:
            atexit.register(shutdown)
            _atexit_registered = True
    return True


def _build_runtime(
    directory: str,
    sample_rate: float,
    redact: Callable[[dict[str, Any]], dict[str, Any] | None] | None,
    max_file_bytes: int | None,
    service_name: str | None,
    otlp_endpoint: str | None = None,
    otlp_headers: dict[str, str] | None = None,
) -> Any:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope

    from . import schema as A
    from ._exporter import (
        DEFAULT_MAX_BYTES,
        CaptureExporter,
        JsonLinesSpanExporter,
        ToolsetStore,
        otlp_http_exporter,
    )
    from ._runtime import Runtime
    from ._spans import CaptureSpan, SpanQueue

    toolsets = ToolsetStore()
    files = JsonLinesSpanExporter(directory, toolsets, max_bytes=max_file_bytes or DEFAULT_MAX_BYTES)
    otlp = otlp_http_exporter(otlp_endpoint, otlp_headers) if otlp_endpoint else None
    exporter = CaptureExporter(files, otlp=otlp, redact=redact)
    resource = Resource.create({"service.name": service_name or "evalshift-captured-agent"})
    # No tracer provider: our spans never pass through the host's OpenTelemetry setup. A queue
    # deep enough that bursts from many threads are not dropped before the export thread (which
    # does all the file I/O) catches up, and small batches: a span waiting in the queue keeps
    # its request's objects alive, and at 1,024 spans a batch they lived long enough to reach
    # the oldest GC generation and made full collections about 3x as frequent (GC time across
    # threads: 77 µs a call at 1,024, 22 µs at 64; benchmarks/sdk_overhead.py).
    processor = SpanQueue(exporter, max_batch=64, delay_s=1.0, max_queue=16384)
    return Runtime(
        exporter=exporter,
        toolsets=toolsets,
        capture_dir=directory,
        sample_rate=max(0.0, min(1.0, float(sample_rate))),
        processor=processor,
        resource=resource,
        scope=InstrumentationScope(A.SCOPE_NAME, __version__),
        span_type=CaptureSpan,
    )


def flush(timeout_millis: int = 30000) -> bool:
    """Write every finished span now (blocks up to ``timeout_millis``)."""
    from ._runtime import get_runtime

    rt = get_runtime()
    if rt is None:
        return True
    ok = False
    with capture_internal_exceptions("flush"):
        ok = bool(rt.processor.force_flush(timeout_millis))
    return ok


def shutdown() -> None:
    """Flush captures and restore the provider SDKs. Safe to call twice; also runs at exit."""
    from . import _runtime as rt_mod
    from .instrumentation import uninstrument

    with rt_mod.runtime_lock:
        rt = rt_mod.get_runtime()
        with capture_internal_exceptions("shutdown.uninstrument"):
            uninstrument()
        if rt is None:
            return
        rt_mod.set_runtime(None)
        with capture_internal_exceptions("shutdown.flush"):
            rt.processor.shutdown()


__all__ += ["flush", "current_turn"]
