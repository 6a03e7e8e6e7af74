"""Memory over 100k model calls through the real ``openai`` client, captured vs bare.

10,000 turns of ten tool-call completions and one recorded tool execution each, through the real
client over an in-process transport (no sockets), with the SDK writing every span to capture
files; then the same calls with the bare client, in the same process. Prints the resident set
and the Python heap (allocated blocks) every 10k calls: flat means no per-turn state outlives
its turn. The test suite checks the same over the SDK's wrapper alone (tests/sdk/test_memory.py)
because 100k calls through the real client take minutes.

    .venv/bin/python benchmarks/sdk_memory.py [--calls 100000]
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sdk_overhead import MESSAGES, TOOLS, _client  # noqa: E402 - the same client and request

import evalshift_sdk  # noqa: E402


def _rss_mib() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _run(calls: int, captured: bool) -> list[tuple[int, float, int]]:
    client = _client()
    samples = []
    done = 0

    def turn() -> None:
        for _ in range(10):
            client.chat.completions.create(model="gpt-4o-mini", messages=MESSAGES, tools=TOOLS, tool_choice="auto")
        evalshift_sdk.record_tool("lookup_order", {"order_id": "A1"}, result={"status": "shipped"})

    while done < calls:
        for _ in range(1_000):  # 10k calls per sample
            if captured:
                with evalshift_sdk.turn(prompt_id="memory"):
                    turn()
            else:
                turn()
        done += 10_000
        if captured:
            evalshift_sdk.flush()
        gc.collect()
        samples.append((done, _rss_mib(), sys.getallocatedblocks()))
        print(f"  {'captured' if captured else 'bare':8s} {done:7d} calls  RSS {samples[-1][1]:7.1f} MiB  "
              f"heap blocks {samples[-1][2]:9d}", flush=True)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=100_000)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="evalshift-memory-")
    try:
        evalshift_sdk.init(directory, enabled=True, providers=["openai"], max_file_bytes=64 * 2**20)
        t0 = time.perf_counter()
        captured = _run(args.calls, True)
        evalshift_sdk.shutdown()
        took = time.perf_counter() - t0
        written = sum(p.stat().st_size for p in Path(directory).rglob("*.jsonl"))
        bare = _run(args.calls, False)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    def growth(samples: list[tuple[int, float, int]]) -> tuple[float, int]:
        # From the first sample (warm) to the last: what the remaining calls left behind.
        return samples[-1][1] - samples[0][1], samples[-1][2] - samples[0][2]

    (c_rss, c_blocks), (b_rss, b_blocks) = growth(captured), growth(bare)
    span = captured[-1][0] - captured[0][0]
    print(f"\nsdk_memory: {args.calls} calls each ({took:.0f} s captured; {written / 2**20:.0f} MiB of captures written)")
    print(f"growth over the last {span} calls: captured RSS {c_rss:+.1f} MiB, heap blocks {c_blocks:+d}; "
          f"bare RSS {b_rss:+.1f} MiB, heap blocks {b_blocks:+d}")
    print(f"heap blocks left behind per captured call beyond bare: {(c_blocks - b_blocks) / span:.3f}; peak RSS {peak:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
