"""Benchmark: ``capture sync`` of ~100k spans (~24k agent turns) against orjson parsing the files.

Turns are real SDK captures (examples/support_agent.py on the simulator), replicated with fresh
trace ids into BatchSpanProcessor-sized lines. Prints spans/s, the ratio to orjson merely parsing
the same files in the same run (target >= 1/3), and the peak RSS of a sync over 1x and 4x input,
each in its own subprocess (memory should track the largest turn, not the input size).

    .venv/bin/python benchmarks/ingest.py [--turns 24000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BATCH = 512  # spans per line, as the SDK's BatchSpanProcessor exports them


def record_template(workdir: Path) -> tuple[list[dict], Path]:
    """Spans of one real run of the support agent (32 turns), in the order they were exported."""
    from evalshift_core.cli._demo import DEMO_SCRIPTS, find_example_agent
    from evalshift_core.simulator import Simulator, load_scripts

    captures = workdir / "template"
    with Simulator(load_scripts(DEMO_SCRIPTS)) as sim:
        env = dict(os.environ, EVALSHIFT_CAPTURE="1", EVALSHIFT_CAPTURE_DIR=str(captures),
                   OPENAI_BASE_URL=sim.openai_base_url, OPENAI_API_KEY="sk-bench")
        subprocess.run([sys.executable, str(find_example_agent()), "--quiet"], env=env, check=True)
    spans = []
    for f in sorted(captures.glob("*.jsonl")):
        for line in f.read_bytes().splitlines():
            for rs in orjson.loads(line)["resourceSpans"]:
                for ss in rs["scopeSpans"]:
                    spans.extend(ss["spans"])
    return spans, captures / "toolsets"


def write_input(directory: Path, template: list[dict], toolsets: Path, turns: int, files: int = 4) -> int:
    """Replicate the template to about ``turns`` turns over ``files`` capture files; returns spans."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "toolsets").mkdir(exist_ok=True)
    for sidecar in toolsets.glob("*.json"):
        (directory / "toolsets" / sidecar.name).write_bytes(sidecar.read_bytes())
    per_template = sum(1 for s in template if "parentSpanId" not in s)
    copies = max(1, round(turns / per_template))
    scope = {"name": "evalshift_sdk", "version": "0.1.0"}
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": "bench"}}]}
    total = 0
    per_file = -(-copies // files)
    for f in range(files):
        lines = []
        batch: list[dict] = []
        for c in range(f * per_file, min(copies, (f + 1) * per_file)):
            prefix = f"{c:08x}"
            for span in template:
                s = dict(span)
                s["traceId"] = prefix + span["traceId"][8:]
                batch.append(s)
                if len(batch) == BATCH:
                    lines.append(orjson.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": batch}]}]}))
                    total += len(batch)
                    batch = []
        if batch:
            lines.append(orjson.dumps({"resourceSpans": [{"resource": resource, "scopeSpans": [{"scope": scope, "spans": batch}]}]}))
            total += len(batch)
        (directory / f"spans-bench-{f}.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    return total


def parse_only(directory: Path) -> float:
    t0 = time.process_time()
    for f in sorted(directory.glob("*.jsonl")):
        with open(f, "rb") as fh:
            for line in fh:
                orjson.loads(line)
    return time.process_time() - t0


def timed_sync(directory: Path, base: Path) -> tuple[float, int, int]:
    from evalshift_core.promote._sync import sync

    t0 = time.process_time()
    result = sync(directory, base=base, suite_name="bench", progress=False)
    return time.process_time() - t0, result.spans, result.added


_RSS_CHILD = """
import sys
sys.path.insert(0, {repo!r})
from evalshift_core.promote._sync import sync
import evalshift_core.promote._examples, tqdm  # imports counted in the floor, not the sync

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1])

floor = status("VmRSS")
with open("/proc/self/clear_refs", "w") as fh:  # reset the high-water mark to the current RSS
    fh.write("5")
r = sync({directory!r}, base={base!r}, suite_name="bench", progress=False)
print(floor, status("VmHWM"), r.spans)
"""


def peak_rss(directory: Path, base: Path) -> tuple[int, int, int]:
    """(RSS after imports, peak RSS during the sync, spans) in KiB, in a fresh interpreter.

    Linux's VmHWM (reset after the imports through /proc/self/clear_refs), because ru_maxrss
    survives exec and would report the parent's peak.
    """
    code = _RSS_CHILD.format(repo=str(REPO), directory=str(directory), base=str(base))
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    floor, peak, spans = (int(x) for x in out.split())
    return floor, peak, spans


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=24000, help="about 4 spans a turn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        template, toolsets = record_template(work)
        n = write_input(work / "x1", template, toolsets, args.turns)
        size = sum(f.stat().st_size for f in (work / "x1").glob("*.jsonl"))
        parse_s = min(parse_only(work / "x1") for _ in range(3))
        sync_s, spans, added = timed_sync(work / "x1", work / "base1")
        assert spans == n, (spans, n)
        print(f"input: {n} spans, {added} turns, {size / 1e6:.1f} MB in 4 files")
        print(f"orjson parse only: {n / parse_s:,.0f} spans/s ({parse_s:.2f} s)")
        print(f"capture sync:      {n / sync_s:,.0f} spans/s ({sync_s:.2f} s)")
        print(f"ratio sync/parse:  {parse_s / sync_s:.2f} (target >= 0.33)")
        write_input(work / "x4", template, toolsets, args.turns * 4)
        f1, p1, s1 = peak_rss(work / "x1", work / "rss1")
        f4, p4, s4 = peak_rss(work / "x4", work / "rss4")
        print(f"peak RSS 1x ({s1} spans): {p1 / 1024:.0f} MiB (after imports {f1 / 1024:.0f} MiB, sync adds {(p1 - f1) / 1024:.0f} MiB)")
        print(f"peak RSS 4x ({s4} spans): {p4 / 1024:.0f} MiB (after imports {f4 / 1024:.0f} MiB, sync adds {(p4 - f4) / 1024:.0f} MiB)")
        print(f"RSS growth 4x/1x of the sync's share: {(p4 - f4) / max(1, p1 - f1):.2f} (input grew 4.00x)")


if __name__ == "__main__":
    main()
