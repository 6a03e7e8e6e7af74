"""Export: files rotate, flush at exit, forks write their own file, OTLP/HTTP, sampling, redact."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from sdk_support import (
    API_KEY,
    FIXTURES,
    CassetteServer,
    anthropic_client,
    genai_client,
    openai_client,
    read_spans,
    request_kwargs,
)

import evalshift_sdk


def _names(spans) -> list[str]:
    return sorted(s["name"] for s in spans)


def test_files_rotate_by_size_and_every_line_parses(tmp_path):
    evalshift_sdk.init(tmp_path, enabled=True, max_file_bytes=1_000)
    try:
        for i in range(12):
            evalshift_sdk.record_tool("lookup_order", {"order_id": f"A{i}"}, result={"status": "shipped"})
            evalshift_sdk.flush()
    finally:
        evalshift_sdk.shutdown()
    files = sorted(tmp_path.glob("*.jsonl"))
    assert len(files) > 3
    assert all(f.stat().st_size < 1_000 + 1_000 for f in files)  # rotated once past the limit
    assert len(read_spans(tmp_path)) == 12


def test_a_capture_directory_removed_while_the_host_runs_is_made_again(tmp_path):
    import shutil

    captures = tmp_path / "captures"
    evalshift_sdk.init(captures, enabled=True)
    try:
        evalshift_sdk.record_tool("lookup_order", {"order_id": "A1"}, result=1)
        evalshift_sdk.flush()
        shutil.rmtree(captures)
        evalshift_sdk.record_tool("lookup_order", {"order_id": "A2"}, result=2)
        evalshift_sdk.flush()
    finally:
        evalshift_sdk.shutdown()
    (span,) = read_spans(captures)
    assert span["attrs"]["gen_ai.tool.call.arguments"] == {"order_id": "A2"}


def test_flush_at_interpreter_exit(tmp_path):
    code = textwrap.dedent(
        f"""
        import evalshift_sdk
        evalshift_sdk.init({str(tmp_path)!r}, enabled=True)
        with evalshift_sdk.turn(prompt_id="exit"):
            evalshift_sdk.record_tool("t", {{}}, result=1)
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
    assert _names(read_spans(tmp_path)) == ["execute_tool t", "invoke_agent exit"]


def test_forked_worker_writes_its_own_file(tmp_path):
    evalshift_sdk.init(tmp_path, enabled=True)
    try:
        evalshift_sdk.record_tool("before_fork", {})
        evalshift_sdk.flush()
        pid = os.fork()
        if pid == 0:  # the worker: capture must keep working, into a file of its own
            status = 1
            try:
                evalshift_sdk.record_tool("in_worker", {})
                status = 0 if evalshift_sdk.flush(10_000) else 2
            finally:
                os._exit(status)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        evalshift_sdk.record_tool("after_fork", {})
    finally:
        evalshift_sdk.shutdown()
    by_file: dict[str, list[str]] = {}
    for span in read_spans(tmp_path):
        by_file.setdefault(span["file"], []).append(span["name"])
    assert sorted(by_file.values()) == [["execute_tool before_fork", "execute_tool after_fork"], ["execute_tool in_worker"]]
    worker_file = next(f for f, names in by_file.items() if names == ["execute_tool in_worker"])
    assert f"-{pid}." in worker_file


class _Collector:
    """A tiny OTLP/HTTP receiver on loopback: keeps every ExportTraceServiceRequest posted."""

    def __init__(self) -> None:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                return None

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.append((self.path, self.headers.get("Content-Type"), ExportTraceServiceRequest.FromString(body)))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def span_names(self) -> list[str]:
        return sorted(s.name for _, _, r in self.received for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans)


def test_otlp_http_export_to_a_collector_after_redaction(tmp_path):
    collector = _Collector()

    def redact(attributes: dict) -> dict:
        return {k: v for k, v in attributes.items() if k != "evalshift.inputs"}

    evalshift_sdk.init(tmp_path, enabled=True, otlp_endpoint=collector.endpoint, redact=redact)
    try:
        with evalshift_sdk.turn(prompt_id="otlp", inputs={"email": "jane@example.com"}):
            evalshift_sdk.record_tool("lookup_order", {"order_id": "A1"}, result={"ok": True})
    finally:
        evalshift_sdk.shutdown()
        collector.server.shutdown()
    assert collector.span_names() == ["execute_tool lookup_order", "invoke_agent otlp"]
    assert {(path, ctype) for path, ctype, _ in collector.received} == {("/v1/traces", "application/x-protobuf")}
    assert "jane@example.com" not in str([r for _, _, r in collector.received])
    assert _names(read_spans(tmp_path)) == collector.span_names()  # the files get the same spans
    assert "jane@example.com" not in "".join(p.read_text() for p in tmp_path.glob("*.jsonl"))


def test_redact_can_drop_spans(tmp_path):
    evalshift_sdk.init(tmp_path, enabled=True, redact=lambda a: None if a.get("gen_ai.tool.name") == "secret" else a)
    try:
        evalshift_sdk.record_tool("secret", {"pin": "1234"})
        evalshift_sdk.record_tool("public", {})
    finally:
        evalshift_sdk.shutdown()
    assert _names(read_spans(tmp_path)) == ["execute_tool public"]


def test_sampling_keeps_whole_turns(tmp_path, monkeypatch):
    monkeypatch.setattr(random, "random", random.Random(7).random)
    evalshift_sdk.init(tmp_path, enabled=True, sample_rate=0.3)
    try:
        for i in range(200):
            with evalshift_sdk.turn(prompt_id=f"t{i}"):
                evalshift_sdk.record_tool("a", {})
                evalshift_sdk.record_tool("b", {})
    finally:
        evalshift_sdk.shutdown()
    spans = read_spans(tmp_path)
    roots = [s for s in spans if s["name"].startswith("invoke_agent")]
    assert 30 <= len(roots) <= 90
    per_trace = {r["traceId"]: 0 for r in roots}
    for s in spans:
        if s["name"].startswith("execute_tool"):
            per_trace[s["traceId"]] += 1
    assert set(per_trace.values()) == {2}  # a kept turn is kept whole, a dropped one entirely


def test_api_key_never_reaches_the_captures(tmp_path):
    """A test greps the captures for the API key (and auth headers) and finds nothing."""
    evalshift_sdk.init(tmp_path, enabled=True)
    try:
        with CassetteServer.from_files(FIXTURES / "openai/chat_tool_call_single.yaml") as server:
            openai_client(server).chat.completions.create(
                **request_kwargs(server.interactions[0]), extra_headers={"Authorization": f"Bearer {API_KEY}"}
            )
        with CassetteServer.from_files(FIXTURES / "anthropic/messages_parallel_tool_use.yaml") as server:
            anthropic_client(server).messages.create(**request_kwargs(server.interactions[0]))
        with CassetteServer.from_files(FIXTURES / "gemini/generate_content_function_call.yaml") as server:
            client = genai_client(server)
            client.models.generate_content(model="gemini-2.0-flash", contents="weather?")
    finally:
        evalshift_sdk.shutdown()
    blob = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert len(read_spans(tmp_path)) == 3
    assert API_KEY not in blob and "SECRET-KEY" not in blob and "Bearer" not in blob


def test_host_opentelemetry_setup_is_untouched(tmp_path):
    """Our provider is private: the host's global provider keeps its spans (anthropic's own
    included) and never sees ours; our files hold only ours, in their own traces."""
    code = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        host_exporter = InMemorySpanExporter()
        host_provider = TracerProvider()
        host_provider.add_span_processor(SimpleSpanProcessor(host_exporter))
        trace.set_tracer_provider(host_provider)
        import evalshift_sdk
        from sdk_support import FIXTURES, CassetteServer, anthropic_client, request_kwargs
        evalshift_sdk.init({str(tmp_path)!r}, enabled=True)
        assert trace.get_tracer_provider() is host_provider
        with trace.get_tracer("host").start_as_current_span("host request") as host_span:
            with CassetteServer.from_files(FIXTURES / "anthropic/messages_parallel_tool_use.yaml") as server:
                with evalshift_sdk.turn(prompt_id="inside-host-span"):
                    anthropic_client(server).messages.create(**request_kwargs(server.interactions[0]))
        evalshift_sdk.shutdown()
        host = [(s.name, s.instrumentation_scope.name, format(s.context.trace_id, "032x")) for s in host_exporter.get_finished_spans()]
        print(json.dumps(host))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    host = json.loads(out.stdout.strip().splitlines()[-1])
    scopes = {scope for _, scope, _ in host}
    assert "evalshift_sdk" not in scopes
    assert ("host request", "host") in {(n, s) for n, s, _ in host}
    assert "com.anthropic.sdk.python" in scopes  # anthropic's own span went to the host
    ours = read_spans(tmp_path)
    assert _names(ours) == ["chat claude-3-5-sonnet-20240620", "invoke_agent inside-host-span"]
    host_traces = {t for _, _, t in host}
    assert not host_traces & {s["traceId"] for s in ours}


def test_init_is_idempotent_and_unknown_provider_fails_loudly(tmp_path):
    assert evalshift_sdk.init(tmp_path, enabled=False) is False
    try:
        assert evalshift_sdk.init(tmp_path, enabled=True) is True
        assert evalshift_sdk.init(tmp_path / "other", enabled=True) is True
        assert evalshift_sdk.is_enabled()
    finally:
        evalshift_sdk.shutdown()
    with pytest.raises(ValueError, match="unknown provider"):
        evalshift_sdk.init(tmp_path, enabled=True, providers=["cohere"])
    evalshift_sdk.shutdown()
    evalshift_sdk.shutdown()  # twice is fine


def test_enabled_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALSHIFT_CAPTURE", "1")
    monkeypatch.setenv("EVALSHIFT_CAPTURE_DIR", str(tmp_path / "env"))
    try:
        assert evalshift_sdk.init() is True
        evalshift_sdk.record_tool("t", {})
    finally:
        evalshift_sdk.shutdown()
    assert len(read_spans(tmp_path / "env")) == 1


def test_shutdown_restores_every_provider(tmp_path):
    """``uninstrument`` restores the originals of all three SDKs."""
    from anthropic.resources.messages import AsyncMessages, Messages
    from google.genai import models
    from openai.resources.chat.completions.completions import AsyncCompletions, Completions

    targets = [
        (Completions, "create"), (AsyncCompletions, "create"), (Messages, "create"), (Messages, "stream"),
        (AsyncMessages, "create"), (models.Models, "_generate_content"), (models.Models, "generate_content"),
        (models.AsyncModels, "_generate_content_stream"),
    ]
    before = [owner.__dict__[name] for owner, name in targets]
    evalshift_sdk.init(tmp_path, enabled=True)
    patched = [owner.__dict__[name] for owner, name in targets]
    evalshift_sdk.shutdown()
    after = [owner.__dict__[name] for owner, name in targets]
    assert all(p is not b for p, b in zip(patched, before))
    assert after == before


def test_turn_as_a_decorator_opens_a_turn_per_call(tmp_path):
    evalshift_sdk.init(tmp_path, enabled=True)
    try:

        @evalshift_sdk.turn(prompt_id="decorated")
        def handle(ticket: str) -> str:
            evalshift_sdk.record_tool("lookup", {"ticket": ticket})
            return ticket

        assert [handle("a"), handle("b")] == ["a", "b"]
        assert evalshift_sdk.current_turn() is None
    finally:
        evalshift_sdk.shutdown()
    spans = read_spans(tmp_path)
    turns = [s for s in spans if s["name"] == "invoke_agent decorated"]
    tools = [s for s in spans if s["name"] == "execute_tool lookup"]
    assert len(turns) == 2 and len(tools) == 2
    assert {t["traceId"] for t in turns} == {t["traceId"] for t in tools}
    assert len({t["traceId"] for t in turns}) == 2
