"""Batch replay against online replay: 1,000 examples x 2 models on the simulator.

The same examples through ``run(batch=True)`` (one OpenAI batch per model: JSONL upload, create,
poll, output file) and through ``run()`` online, both measured in the same run. Prints requests,
wall time (batch / online), the client's CPU per request, and the pre-flight's estimated cost
online vs through the batch APIs for the models the simulator plays (priced as gpt-4.1 and
gpt-4.1-mini). The simulator's batches end as soon as they are polled (``--delay`` waits longer):
what is measured is EvalShift's own overhead, never the provider's queue.

    .venv/bin/python benchmarks/batch_replay.py [--examples 1000] [--latency 0.1] [--provider openai]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalshift_core import Example, run  # noqa: E402
from evalshift_core.replay._batch import BatchPolicy  # noqa: E402
from evalshift_core.simulator import Simulator, load_scripts  # noqa: E402

# Named as priced models so the pre-flight has prices to show.
SCRIPTS: dict = {
    "gpt-4.1": [{"when": {"user_matches": r"order (?P<id>\d+)"}, "reply": {"tool_calls": [
        {"name": "lookup_order", "arguments": {"order_id": "{id}"}}]}}],
    "gpt-4.1-mini": [{"when": {"user_matches": r"order (?P<id>\d+)"}, "reply": {"tool_calls": [
        {"name": "issue_refund", "arguments": {"order_id": "{id}", "amount_usd": 10}}]}}],
}
TOOLS = [
    {"name": "lookup_order", "description": "Look an order up.",
     "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
    {"name": "issue_refund", "description": "Refund an order.",
     "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"},
                                                       "amount_usd": {"type": "number"}}}},
]


def _serve(latency: float, delay: float, port_out: multiprocessing.Queue) -> None:
    # Its own process: the server's threads do not share a GIL with the replay being measured.
    with Simulator(load_scripts(SCRIPTS), latency_s=latency, batch_delay_s=delay) as sim:
        port_out.put(sim.base_url)
        while True:
            time.sleep(3600)


def _timed(fn) -> tuple[float, float, object]:
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.1, help="Seconds the simulator takes per online call.")
    parser.add_argument("--delay", type=float, default=0.0, help="Seconds a simulated batch takes to end.")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--provider", choices=["openai", "anthropic", "gemini"], default="openai")
    args = parser.parse_args()

    ports: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve, args=(args.latency, args.delay, ports), daemon=True)
    server.start()
    root = ports.get(timeout=30)
    try:
        examples = [Example(id=f"ex{i:05d}", inputs={"input": f"Where is order {i}?"}, tools=TOOLS)
                    for i in range(args.examples)]
        providers = {"openai": {"base_url": root + "/v1", "api_key": "k"},
                     "anthropic": {"base_url": root, "api_key": "k"}, "gemini": {"base_url": root, "api_key": "k"}}
        models = {"source": f"{args.provider}:gpt-4.1", "target": f"{args.provider}:gpt-4.1-mini"}
        # priced as OpenAI's gpt-4.1 / gpt-4.1-mini whichever SDK carries them
        prices = {m: p for m, p in (("gpt-4.1", {"input": 2.0, "output": 8.0}),
                                    ("gpt-4.1-mini", {"input": 0.4, "output": 1.6}))
                  for m in [f"{args.provider}:{m}"]}
        with tempfile.TemporaryDirectory() as base:
            online_wall, online_cpu, online = _timed(lambda: run(
                examples, **models, base=Path(base) / "online", providers=providers, prices=prices,
                concurrency=args.concurrency, progress=False))
            batch_wall, batch_cpu, batched = _timed(lambda: run(
                examples, **models, base=Path(base) / "batch", providers=providers, prices=prices, batch=True,
                batch_policy=BatchPolicy(poll_s=0.05, max_poll_s=0.5), progress=False))
        for result in (online, batched):
            assert not any(c.error for c in result.calls), "replay failed"  # type: ignore[attr-defined]
    finally:
        server.kill()

    m_on, m_b = online.manifest, batched.manifest  # type: ignore[attr-defined]
    calls = 2 * args.examples
    batches = m_b["batches"]
    print(f"batch replay: {args.examples} examples x 2 models = {calls} requests, {args.provider} SDK, "
          f"online at {args.latency * 1000:.0f} ms a call (concurrency {args.concurrency}), "
          f"{len(batches)} batches ({', '.join(str(b['requests']) for b in batches)} requests)")
    print(f"  online run()             {online_wall:7.2f} s wall  {online_cpu / calls * 1000:6.2f} ms CPU a request")
    print(f"  run(batch=True)          {batch_wall:7.2f} s wall  {batch_cpu / calls * 1000:6.2f} ms CPU a request"
          f"   {batch_wall / online_wall:5.2f}x online wall   {batch_cpu / online_cpu:5.2f}x online CPU")
    print(f"  estimated cost           ${m_on['estimated_online_cost_usd']:.4f} online   "
          f"${m_b['estimated_batch_cost_usd']:.4f} through batch APIs   "
          f"({m_b['estimated_batch_cost_usd'] / m_on['estimated_online_cost_usd']:.2f}x)")
    print(f"  cost of the responses    ${m_on['cost_usd']:.4f} online   ${m_b['cost_usd']:.4f} batch   "
          f"({m_b['cost_usd'] / m_on['cost_usd']:.2f}x)")


if __name__ == "__main__":
    main()
