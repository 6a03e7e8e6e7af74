"""Turns stay separate under threads and asyncio tasks: no span lost, none in the wrong turn."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from sdk_support import in_process_openai

import evalshift_sdk

CALLS_PER_THREAD = 1000
THREADS = 8
TASKS = 1000
CALLS_PER_TURN = 10


def _check(spans, expected_turns: int, calls_per_turn: int) -> None:
    everything = spans()
    turns = {s["spanId"]: s for s in everything if s["attrs"].get("gen_ai.operation.name") == "invoke_agent"}
    chats = [s for s in everything if s["attrs"].get("gen_ai.operation.name") == "chat"]
    assert len(turns) == expected_turns
    assert len(chats) == expected_turns * calls_per_turn  # no span lost
    per_turn = Counter()
    for chat in chats:
        turn = turns[chat["parentSpanId"]]
        assert chat["traceId"] == turn["traceId"]
        sent = chat["attrs"]["gen_ai.input.messages"][-1]["parts"][0]["content"]
        # each request names its turn, and the response echoes it: both sides in the right turn
        assert sent == turn["attrs"]["evalshift.prompt_id"]
        assert chat["attrs"]["evalshift.requested_tool_calls"][0]["arguments"] == {"order_id": sent}
        per_turn[chat["parentSpanId"]] += 1
    assert set(per_turn.values()) == {calls_per_turn}


def test_eight_threads_thousand_calls_each(capture_dir, spans):
    client = in_process_openai(echo=True)
    barrier = threading.Barrier(THREADS)

    def worker(n: int) -> None:
        barrier.wait()
        for t in range(CALLS_PER_THREAD // CALLS_PER_TURN):
            name = f"thread{n}-turn{t}"
            with evalshift_sdk.turn(prompt_id=name):
                for _ in range(CALLS_PER_TURN):
                    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": name}])

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    _check(spans, THREADS * CALLS_PER_THREAD // CALLS_PER_TURN, CALLS_PER_TURN)


def test_thousand_concurrent_asyncio_tasks(capture_dir, spans):
    client = in_process_openai(aio=True, echo=True)

    async def one(n: int) -> None:
        name = f"task{n}"
        with evalshift_sdk.turn(prompt_id=name):
            await asyncio.sleep(0)  # interleave the tasks inside their turns
            await client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": name}])

    async def main() -> None:
        await asyncio.gather(*(one(n) for n in range(TASKS)))

    asyncio.run(main())
    _check(spans, TASKS, 1)


def test_thread_pool_inside_a_turn_stays_in_it_with_run_in_turn(capture_dir, spans):
    """A thread pool started inside a turn stays in it when the work is wrapped in run_in_turn."""
    client = in_process_openai(echo=True)

    def ask(_: int) -> None:
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "pooled"}])

    with evalshift_sdk.turn(prompt_id="pooled"), ThreadPoolExecutor(4) as pool:
        list(pool.map(evalshift_sdk.run_in_turn(ask), range(8)))
    _check(spans, 1, 8)


def test_calls_outside_any_turn_are_each_their_own_turn(capture_dir, spans):
    client = in_process_openai()
    for _ in range(3):
        client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}])
    chats = spans("chat")
    assert len({c["traceId"] for c in chats}) == 3
    assert all(c["attrs"]["evalshift.implicit_turn"] is True and "parentSpanId" not in c for c in chats)
