"""Replay throughput: 1,000 examples x 2 models against the simulator at 100 ms a call.

Prints the wall time of ``run()`` and its ratio to the ideal (calls x latency / concurrency), and
to a bare asyncio loop over the same SDK measured in the same run. Target: <= 1.25x the ideal.

    .venv/bin/python benchmarks/replay.py [--examples 1000] [--latency 0.1] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from evalshift_core import Example, run  # noqa: E402
from evalshift_core.simulator import Simulator, load_scripts  # noqa: E402

SCRIPTS: dict = {
    "sim-baseline": [
        {"when": {"user_matches": r"order (?P<id>\d+)"}, "reply": {"tool_calls": [
            {"name": "lookup_order", "arguments": {"order_id": "{id}"}}]}},
    ],
    "sim-candidate": [
        {"when": {"user_matches": r"order (?P<id>\d+)"}, "reply": {"tool_calls": [
            {"name": "issue_refund", "arguments": {"order_id": "{id}", "amount_usd": 10}}]}},
    ],
}
SCRIPTS |= {f"gemini-{k}": v for k, v in SCRIPTS.items()}
TOOLS = [
    {"name": "lookup_order", "description": "Look an order up.",
     "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"}}, "required": ["order_id"]}},
    {"name": "issue_refund", "description": "Refund an order.",
     "input_schema": {"type": "object", "properties": {"order_id": {"type": "string"},
                                                       "amount_usd": {"type": "number"}}}},
]


def _serve(latency: float, port_out: multiprocessing.Queue) -> None:
    # The simulator runs in its own process so the server's threads do not share a GIL with the
    # replay being measured (a real provider is another machine).
    with Simulator(load_scripts(SCRIPTS), latency_s=latency) as sim:
        port_out.put(sim.openai_base_url)
        while True:
            time.sleep(3600)


async def _bare(url: str, prompts: list[str], concurrency: int) -> None:
    """The floor: the same requests through AsyncOpenAI with a semaphore, nothing else."""
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key="k", max_retries=0)
    gate = asyncio.Semaphore(concurrency)
    tools = [{"type": "function", "function": {"name": t["name"], "parameters": t["input_schema"]}} for t in TOOLS]

    async def one(model: str, prompt: str) -> None:
        async with gate:
            await client.chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}],
                                                 tools=tools)

    await asyncio.gather(*(one(m, p) for p in prompts for m in ("sim-baseline", "sim-candidate")))
    await client.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--repeat", type=int, default=3,
                        help="Alternate bare and run() this many times; report the best of each (noisy hosts).")
    parser.add_argument("--provider", choices=["openai", "anthropic", "gemini"], default="openai",
                        help="Which SDK run() replays through (the bare baseline is always AsyncOpenAI).")
    parser.add_argument("--in-process", action="store_true",
                        help="Serve the simulator from this process (shares the GIL with the replay).")
    args = parser.parse_args()

    ports: multiprocessing.Queue = multiprocessing.Queue()
    if args.in_process:
        local = Simulator(load_scripts(SCRIPTS), latency_s=args.latency).start()
        url, stop = local.base_url + "/v1", local.stop
    else:
        server = multiprocessing.Process(target=_serve, args=(args.latency, ports), daemon=True)
        server.start()
        url, stop = ports.get(timeout=30), server.kill
    try:
        prompts = [f"Where is order {i}?" for i in range(args.examples)]
        examples = [Example(id=f"ex{i:05d}", inputs={"input": p}, tools=TOOLS) for i, p in enumerate(prompts)]
        calls = 2 * args.examples
        ideal = calls * args.latency / args.concurrency

        root = url[: -len("/v1")]
        prefix = "gemini-" if args.provider == "gemini" else ""
        source, target = (f"{args.provider}:{prefix}sim-baseline", f"{args.provider}:{prefix}sim-candidate")
        providers = {"openai": {"base_url": url, "api_key": "k"}, "anthropic": {"base_url": root, "api_key": "k"},
                     "gemini": {"base_url": root, "api_key": "k"}}
        bares, walls, reruns = [], [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            asyncio.run(_bare(url, prompts, args.concurrency))
            bares.append(time.perf_counter() - t0)
            with tempfile.TemporaryDirectory() as base:
                t0 = time.perf_counter()
                result = run(examples, source=source, target=target, base=base, providers=providers,
                             concurrency=args.concurrency, progress=False)
                walls.append(time.perf_counter() - t0)
                assert len(result.calls) == calls and not any(c.error for c in result.calls), "replay failed"
                t0 = time.perf_counter()
                cached = run(examples, source=source, target=target, base=base, providers=providers,
                             concurrency=args.concurrency, progress=False)
                reruns.append(time.perf_counter() - t0)
                assert cached.requests == 0
        bare, wall, rerun = min(bares), min(walls), min(reruns)
    finally:
        stop()

    where = "in this process" if args.in_process else "in its own process"
    print(f"replay: {args.examples} examples x 2 models = {calls} calls, {args.latency * 1000:.0f} ms each, "
          f"concurrency {args.concurrency}, {args.provider} SDK, simulator {where}, best of {args.repeat}")
    print(f"  ideal (calls x latency / concurrency) {ideal:8.2f} s")
    print(f"  bare AsyncOpenAI + semaphore          {bare:8.2f} s   {bare / ideal:5.2f}x ideal")
    print(f"  evalshift run() ({args.provider:9s})          {wall:8.2f} s   {wall / ideal:5.2f}x ideal   "
          f"{wall / bare:5.2f}x bare   (target <= 1.25x ideal)")
    print(f"  cached re-run (0 requests)            {rerun:8.2f} s   {rerun / wall:5.2f}x the first run")


if __name__ == "__main__":
    main()
