"""report.html in a real browser: Debian's headless Chromium (installed by `make test`).

Model and tool content carrying script payloads must render as text and run nothing; the first
screen is saved as test-artifacts/report-first-screen.png for a human to judge the design.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evalshift_core._models import Call, Example, FixtureResult, ToolCall, ToolTrace
from evalshift_core.report._data import build_report
from evalshift_core.report._report import write_report

REPO = Path(__file__).resolve().parents[3]
ARTIFACTS = REPO / "test-artifacts"

# Each payload would change the page title if it ever ran as script or markup.
SCRIPT = "<script>document.title='PWNED-script'</script>"
IMG = "\"><img src=x onerror=\"document.title='PWNED-img'\">"
IMG_SQ = "'><img src=x onerror=document.title='PWNED-sq'>"
PAYLOADS = (SCRIPT, IMG, IMG_SQ)


def chromium(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None:
        pytest.fail("chromium is not installed: run `make test` (it installs Debian's chromium)")
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:  # chromium helpers may still be exiting
        cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage", f"--user-data-dir={profile}", *args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=True)


class _DomSummary(HTMLParser):
    """Element names, attributes, the document title and the visible text of a dumped DOM."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.title: str | None = None
        self._raw: str | None = None  # inside <script>, <style> or the head's <title>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in ("script", "style") or (tag == "title" and self.title is None):
            self._raw = tag

    def handle_endtag(self, tag: str) -> None:
        if tag == self._raw:
            self._raw = None

    def handle_data(self, data: str) -> None:
        if self._raw == "title":
            self.title = (self.title or "") + data
        elif self._raw is None:
            self.text.append(data)


def _dom(url: str) -> _DomSummary:
    summary = _DomSummary()
    summary.feed(chromium("--dump-dom", url).stdout)
    return summary


def _payload_run() -> tuple[list[Example], list[Call], dict, list[dict]]:
    """A run whose every model- or tool-controlled string carries a payload."""
    examples = [
        Example(id=f"ex-{SCRIPT}", inputs={"input": f"I was hacked {IMG}"}, tags=["security", IMG_SQ]),
        Example(id="ex-refund", inputs={"input": SCRIPT}, tags=["refund"],
                expected_tool_rounds=[[{"tool_name": "lookup_order"}], [{"tool_name": "issue_refund"}]],
                tool_result_fixtures=[[FixtureResult(tool_name="lookup_order", result=IMG)],
                                      [FixtureResult(tool_name="issue_refund", result={"note": SCRIPT})]]),
        Example(id="ex-text", inputs={"input": "policy?"}, tags=["text_only"]),
    ] + [Example(id=f"ex-{i:03d}", inputs={"input": f"status of order A{i}"}, tags=["status"]) for i in range(20)]

    def call(ex: str, role: str, calls: list[ToolCall], text: str | None = None, rounds: int | None = None,
             dropped: list[str] | None = None) -> Call:
        return Call(example_id=ex, role=role, model=f"gemini:{role}-<b>model</b>", text=text,
                    trace=ToolTrace(calls=calls, final_text=text, round_count=rounds), dropped_params=dropped or [])

    calls = [
        call(examples[0].id, "source", [ToolCall(tool_name="notify_security_team", arguments={"signal": SCRIPT})]),
        call(examples[0].id, "target", [ToolCall(tool_name="lookup_order", arguments={"order_id": IMG})], text=IMG_SQ,
             dropped=["tools.strict"]),
        call("ex-refund", "source", [ToolCall(tool_name="lookup_order", arguments={"order_id": "A1"}, round_index=1),
                                     ToolCall(tool_name="issue_refund", arguments={"amount_usd": 12.0, IMG: SCRIPT},
                                              round_index=2, sequence_index=1)], text="refunded", rounds=3),
        call("ex-refund", "target", [ToolCall(tool_name="issue_refund", arguments={"amount_usd": "12"}, round_index=1),
                                     ToolCall(tool_name="lookup_order", arguments=SCRIPT, round_index=2,
                                              sequence_index=1)], text=SCRIPT, rounds=3),
        call("ex-text", "source", [], text=f"Returns are free {SCRIPT}"),
        call("ex-text", "target", [], text=f"Returns cost {IMG}"),
    ]
    for i in range(20):
        for role in ("source", "target"):
            calls.append(call(f"ex-{i:03d}", role, [ToolCall(tool_name="lookup_order", arguments={"order_id": f"A{i}"})],
                              text="It shipped."))
    regressions = [
        {"example_id": examples[0].id, "evaluator": "tool_selection", "name": "routing", "side": "conformance",
         "source_score": 1.0, "target_score": 0.0, "labels": ["TOOL_SELECTION_DRIFT"],
         "tools": ["notify_security_team"],
         "metadata": {"expected": ["notify_security_team"], "source": ["notify_security_team"], "target": ["lookup_order"]}},
        {"example_id": "ex-refund", "evaluator": "tool_arguments", "name": "args", "side": None,
         "source_score": 1.0, "target_score": 0.25, "labels": ["ARGUMENT_VALUE_DRIFT"], "tools": ["issue_refund"],
         "metadata": {"against": "source", "tools": ["issue_refund"], "fields": [
             {"tool": "issue_refund", "field": "amount_usd", "source": 12.0, "target": "12", "score": 0.0,
              "label": "ARGUMENT_VALUE_DRIFT", "round": 1},
             {"tool": "issue_refund", "field": IMG, "source": SCRIPT, "target": None, "missing": "target",
              "score": 0.5, "round": 2},
         ], "rounds": [{"round": 1, "source_score": 1.0, "target_score": 0.0},
                       {"round": 2, "source_score": 1.0, "target_score": 0.5, "reason": IMG_SQ}]}},
        {"example_id": "ex-text", "evaluator": "semantic", "name": "quality", "side": None,
         "source_score": 0.9, "target_score": 0.4, "labels": [], "tools": [], "metadata": {}},
    ]
    analysis = {
        "verdict": "fail",
        "reasons": [f"tool_selection.routing (conformance): target 0.900 vs source 1.000 {SCRIPT}",
                    "1 TOOL_SELECTION_DRIFT on notify_security_team", "1 ARGUMENT_VALUE_DRIFT on issue_refund"],
        "comparisons": [
            {"evaluator": "tool_selection", "name": "routing", "side": "conformance", "n": 23, "source_mean": 1.0,
             "target_mean": 0.957, "difference": -0.043, "ci": [-0.13, 0.0], "test": "wilcoxon", "p_value": 0.3173,
             "p_adjusted": 0.3173, "severity": "high", "status": "measured"},
            {"evaluator": "tool_arguments", "name": "args", "side": None, "n": 23, "source_mean": 1.0,
             "target_mean": 0.967, "difference": -0.033, "ci": [-0.1, 0.0], "test": "wilcoxon", "p_value": 0.3173,
             "p_adjusted": 0.3173, "severity": "medium", "status": "measured"},
            {"evaluator": "semantic", "name": "quality", "side": None, "n": 0, "status": "unknown"},
        ],
        "labels": {
            "TOOL_SELECTION_DRIFT": {"count": 1, "by_tool": {"notify_security_team": 1}, "by_field": {}},
            "ARGUMENT_VALUE_DRIFT": {"count": 1, "by_tool": {"issue_refund": 1},
                                     "by_field": {"issue_refund.amount_usd": 1, f"issue_refund.{IMG}": 1}},
        },
        "failure_categories": {"TOOL_GROUND_TRUTH_MISS": 0},
        "recommendations": [f"Check the harness {IMG_SQ}"],
        "banners": ["broken eval harness"],
        "regressions": regressions,
    }
    scores = [
        {"example_id": e.id, "evaluator": "tool_selection", "name": "routing", "side": "conformance",
         "source_score": 1.0, "target_score": 0.0 if e.id == examples[0].id else 1.0}
        for e in examples
    ]
    return examples, calls, analysis, scores


@pytest.fixture(scope="module")
def payload_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    examples, calls, analysis, scores = _payload_run()
    manifest = {"run_id": "run-xss", "suite": f"suite-{SCRIPT}", "source_model": f"gemini:src{IMG}",
                "target_model": "gemini:tgt", "created": "2026-11-30T00:00:00Z"}
    return write_report(tmp_path_factory.mktemp("report"), build_report(analysis, examples, calls, manifest, scores))


def _assert_nothing_ran_and_payloads_are_text(dom: _DomSummary) -> None:
    assert dom.title == "EvalShift report run-xss", dom.title
    html_attrs = dom.tags[0][1]
    assert "data-rendered-ms" in html_attrs, "the report's own script did not run"
    assert [t for t, _ in dom.tags if t == "img"] == []
    assert [t for t, _ in dom.tags if t == "script"] == ["script", "script"]  # the data block and ours
    assert not [a for _, attrs in dom.tags for a in attrs if a.startswith("on")]
    text = "".join(dom.text)
    for payload in PAYLOADS:
        assert payload in text, payload
    # tool arguments, field names and tool results are shown JSON-rendered
    assert 'notify_security_team({"signal":"<script>document.title=\'PWNED-script\'</script>"})' in text
    assert 'Round 1: issue_refund.amount_usd: 12.0 → "12" [ARGUMENT_VALUE_DRIFT]' in text
    assert "Round 1: lookup_order → " + IMG in text
    assert "Round 2: issue_refund → " in text and '{"note":"<script>' in text


def test_payloads_in_tool_arguments_results_and_text_show_as_text_and_never_run(payload_report):
    """Issue 8, done when: every piece of model or tool content is escaped; no script ran."""
    dom = _dom(payload_report.as_uri())
    _assert_nothing_ran_and_payloads_are_text(dom)
    text = "".join(dom.text)
    for expected in ("Constraints not honoured", "broken eval harness", "Nothing measured",
                     "Tools called (source → target)", "Round 1: lookup_order → issue_refund"):
        assert expected in text


def test_escaping_holds_without_the_content_security_policy(payload_report, tmp_path):
    """The CSP is a second wall: with it removed, the escaping alone still runs nothing."""
    page = payload_report.read_text()
    stripped = re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", page, count=1)
    assert stripped != page
    bare = tmp_path / "report.html"
    bare.write_text(stripped)
    _assert_nothing_ran_and_payloads_are_text(_dom(bare.as_uri()))


def test_filters_read_from_the_fragment_narrow_the_rows(payload_report):
    dom = _dom(payload_report.as_uri() + "#label=ARGUMENT_VALUE_DRIFT")
    text = "".join(dom.text)
    assert "Showing 1–1 of 1 examples (23 in the run)" in text
    assert "ex-refund" in text and "ex-005" not in text
    dom = _dom(payload_report.as_uri() + "#round=2")
    assert "Showing 1–1 of 1 examples" in "".join(dom.text)
    dom = _dom(payload_report.as_uri() + "#tag=status&severity=high")
    assert "No example matches these filters." in "".join(dom.text)


def test_first_screen_screenshot_is_saved_as_a_test_artifact(payload_report):
    ARTIFACTS.mkdir(exist_ok=True)
    for name, extra in (("report-first-screen.png", []), ("report-first-screen-dark.png", ["--force-dark-mode"])):
        shot = ARTIFACTS / name
        shot.unlink(missing_ok=True)
        chromium(f"--screenshot={shot}", "--window-size=1280,900", "--hide-scrollbars", *extra, payload_report.as_uri())
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


class _Page:
    """The Chrome DevTools Protocol over a websocket: just enough to press keys and read the page."""

    def __init__(self, ws: object) -> None:
        self._ws = ws
        self._id = 0

    def send(self, method: str, **params: object) -> dict:
        import json

        self._id += 1
        self._ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        while True:
            reply = json.loads(self._ws.recv(timeout=30))
            if reply.get("id") == self._id:
                assert "error" not in reply, reply
                return reply.get("result", {})

    def js(self, expression: str) -> object:
        return self.send("Runtime.evaluate", expression=expression, returnByValue=True)["result"].get("value")

    def press(self, key: str, code: str, key_code: int, text: str | None = None) -> None:
        for kind in ("keyDown", "keyUp"):
            params: dict[str, object] = {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": key_code}
            if text and kind == "keyDown":
                params["text"] = text
            self.send("Input.dispatchKeyEvent", **params)

    def tab_to(self, selector_js: str, limit: int = 60) -> int:
        for presses in range(1, limit + 1):
            self.press("Tab", "Tab", 9)
            if self.js(f"document.activeElement === {selector_js}"):
                return presses
        raise AssertionError(f"{selector_js} is not reachable with Tab")


@contextlib.contextmanager
def _open_page(url: str, window_size: str = "1280,900"):
    """Headless Chromium on ``url`` with its DevTools port, once the report's script has drawn."""
    import json
    import time
    import urllib.request

    from websockets.sync.client import connect

    exe = shutil.which("chromium")
    if exe is None:
        pytest.fail("chromium is not installed: run `make test` (it installs Debian's chromium)")
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:  # chromium helpers may still be exiting
        proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             f"--user-data-dir={profile}", f"--window-size={window_size}", "--hide-scrollbars", url],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        try:
            port_file = Path(profile) / "DevToolsActivePort"
            deadline = time.monotonic() + 30
            while not (port_file.exists() and port_file.read_text().strip()):
                assert time.monotonic() < deadline, "chromium did not open its DevTools port"
                time.sleep(0.05)
            port = port_file.read_text().split()[0]
            while True:
                targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10))
                pages = [t for t in targets if t.get("type") == "page" and t["url"].startswith("file:")]
                if pages:
                    break
                assert time.monotonic() < deadline, targets
                time.sleep(0.05)
            with connect(pages[0]["webSocketDebuggerUrl"], max_size=None) as ws:
                p = _Page(ws)
                while p.js("document.documentElement.getAttribute('data-rendered-ms')") is None:
                    assert time.monotonic() < deadline, "the report's script never finished"
                    time.sleep(0.05)
                yield p
        finally:
            proc.terminate()
            proc.wait(timeout=30)


@pytest.fixture
def page(payload_report: Path):
    with _open_page(payload_report.as_uri()) as p:
        yield p


def test_filters_and_evidence_work_from_the_keyboard(page):
    """Issue 8: filters keyboard-usable — reach them with Tab, change them with keys, see focus."""
    page.tab_to("document.getElementById('f-label')")
    assert page.js("getComputedStyle(document.activeElement).outlineStyle") == "solid"
    page.press("ArrowDown", "ArrowDown", 40)
    assert page.js("document.getElementById('f-label').value") == "ARGUMENT_VALUE_DRIFT"
    assert page.js("document.getElementById('count').textContent").startswith("Showing 1–1 of 1 examples")
    assert page.js("location.hash") == "#label=ARGUMENT_VALUE_DRIFT"
    page.tab_to("document.querySelector('#rows summary')")
    page.press("Enter", "Enter", 13, "\r")
    assert page.js("document.querySelector('#rows details').open") is True
    assert "issue_refund.amount_usd: 12.0 → \"12\"" in page.js("document.querySelector('#rows details').textContent")


def test_the_layout_holds_on_a_390_px_phone_screen(page):
    """Issue: at 390 px the "By tool" chips wrapped one letter per line; nothing may overflow the page."""
    page.send("Emulation.setDeviceMetricsOverride", width=390, height=844, deviceScaleFactor=2, mobile=True)
    assert page.js("window.innerWidth") == 390
    assert page.js("document.documentElement.scrollWidth") <= 390  # no sideways scrolling of the page
    chips = page.js("Array.from(document.querySelectorAll('table.labels .chip'))"
                    ".map(c => Math.round(c.getBoundingClientRect().width))")
    assert chips and min(chips) > 60, chips  # whole words per line, not one letter
    charts = page.js("Array.from(document.querySelectorAll('svg.chart')).map(s => s.getBoundingClientRect().right)")
    assert charts and max(charts) <= 390, charts
    ARTIFACTS.mkdir(exist_ok=True)
    shot = page.send("Page.captureScreenshot", format="png")["data"]
    (ARTIFACTS / "report-390px.png").write_bytes(__import__("base64").b64decode(shot))


def test_the_first_screen_of_a_real_comparison_shows_the_headline_and_the_per_tool_chart(demo_simulator, tmp_path):
    """At 1400 × 900 a reviewer reads what changed before scrolling: the headline and the per-tool chart."""
    import base64

    from evalshift_core import compare
    from evalshift_core.cli._demo import DEMO_CONFIG

    tools = [{"name": n, "input_schema": {"type": "object", "properties": {}}}
             for n in ("lookup_order", "issue_refund", "notify_security_team")]
    tickets = ([(f"Order A{1000 + i} arrived broken. Please refund the ${10 + i}.50 I paid.", ["refund"], "lookup_order")
                for i in range(10)]
               + [(f"URGENT: refund order D{4000 + i} (${80 + i}.90) immediately.", ["refund", "urgent"], "lookup_order")
                  for i in range(3)]
               + [(f"Somebody logged in to my account {i} days ago, I think I was hacked.", ["security"],
                   "notify_security_team") for i in range(7)]
               + [(f"Where is my order L{1100 + i}? It has not arrived.", ["status"], "lookup_order") for i in range(12)])
    suite = [Example(id=f"t{i:02d}", inputs={"input": text}, tags=tags, tools=tools, expected_tools=[{"tool_name": name}])
             for i, (text, tags, name) in enumerate(tickets)]
    result = compare(suite, source="openai:sim-baseline", target="openai:sim-candidate", config=DEMO_CONFIG,
                     out_dir=tmp_path, providers={"openai": {"base_url": demo_simulator.openai_base_url, "api_key": "sim"}},
                     run_options={"progress": False})
    with _open_page(result.report_path.as_uri(), "1400,900") as p:
        p.send("Emulation.setDeviceMetricsOverride", width=1400, height=900, deviceScaleFactor=1, mobile=False)
        assert (p.js("window.innerWidth"), p.js("window.innerHeight")) == (1400, 900)
        headline = p.js("document.getElementById('headline').textContent")
        assert headline.startswith("FAIL — the candidate stopped calling notify_security_team on 7 of 32 examples")
        for selector in ("#headline", "#tool-chart"):
            box = p.js(f"JSON.stringify(document.querySelector('{selector}').getBoundingClientRect())")
            assert __import__("json").loads(box)["bottom"] <= 900, (selector, box)
        chart = p.js("document.querySelector('#tool-chart').textContent")
        assert "notify_security_team: 22% → 0%" in chart
        ARTIFACTS.mkdir(exist_ok=True)
        shot = p.send("Page.captureScreenshot", format="png")["data"]
        (ARTIFACTS / "report-first-screen-1400.png").write_bytes(base64.b64decode(shot))
