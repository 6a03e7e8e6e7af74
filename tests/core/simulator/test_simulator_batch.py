"""The simulator's batch APIs, driven by the official SDKs: wire shapes, validation, delay, failures."""

from __future__ import annotations

import json
import time

import anthropic
import openai
import pytest
from google import genai
from google.genai import types

from evalshift_core.simulator import Simulator, load_scripts

SCRIPTS = load_scripts({"m": [{"when": {"user_matches": "bad"}, "reply": {"error": {"status": 400,
                                                                                    "message": "nope"}}},
                              {"when": {}, "reply": {"text": "hi"}}]})


def _line(cid: str, text: str = "x", model: str = "m") -> bytes:
    body = {"model": model, "messages": [{"role": "user", "content": text}]}
    return json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body}).encode() + b"\n"


def test_openai_batch_reports_progress_then_splits_output_and_errors():
    with Simulator(SCRIPTS, batch_delay_s=0.4, batch_fail_first=1, batch_fail_status=500) as sim:
        client = openai.OpenAI(base_url=sim.openai_base_url, api_key="k", max_retries=0)
        upload = client.files.create(file=("in.jsonl", _line("a") + _line("b", "bad") + _line("c")), purpose="batch")
        batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                      completion_window="24h")
        assert batch.status == "in_progress" and batch.request_counts.total == 3
        time.sleep(0.45)
        batch = client.batches.retrieve(batch.id)
        assert batch.status == "completed"
        assert (batch.request_counts.completed, batch.request_counts.failed) == (1, 2)
        out = [json.loads(x) for x in client.files.content(batch.output_file_id).text.splitlines()]
        err = [json.loads(x) for x in client.files.content(batch.error_file_id).text.splitlines()]
    assert [(r["custom_id"], r["response"]["status_code"]) for r in out] == [("c", 200)]
    assert out[0]["response"]["body"]["choices"][0]["message"]["content"] == "hi"
    # the injected failure (first request) and the scripted 400, each in the provider's error shape
    assert [(r["custom_id"], r["response"]["status_code"], r["response"]["body"]["error"]["message"]) for r in err] == [
        ("a", 500, "simulated failure in a batch"), ("b", 400, "nope")]
    assert sim.batches_created == 1 and [r.get("batch") for r in sim.requests] == [batch.id] * 3


@pytest.mark.parametrize(("lines", "why"), [
    (_line("a") + _line("a"), "duplicate custom_id"),
    (_line("a") + _line("b", model="other"), "same model"),
    (b"{not json}\n", "not valid JSON"),
])
def test_an_openai_batch_with_a_bad_input_file_fails_whole(lines, why):
    with Simulator(SCRIPTS) as sim:
        client = openai.OpenAI(base_url=sim.openai_base_url, api_key="k", max_retries=0)
        upload = client.files.create(file=("in.jsonl", lines), purpose="batch")
        batch = client.batches.create(input_file_id=upload.id, endpoint="/v1/chat/completions",
                                      completion_window="24h")
        batch = client.batches.retrieve(batch.id)
    assert batch.status == "failed" and why in batch.errors.data[0].message
    assert batch.output_file_id is None and not sim.requests


def test_anthropic_refuses_custom_ids_outside_its_pattern():
    with Simulator(SCRIPTS) as sim:
        client = anthropic.Anthropic(base_url=sim.anthropic_base_url, api_key="k", max_retries=0)
        params = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]}
        with pytest.raises(anthropic.BadRequestError, match=r"a-zA-Z0-9_-"):
            client.messages.batches.create(requests=[{"custom_id": "orders/A1", "params": params}])
        assert sim.batches_created == 0
        batch = client.messages.batches.create(requests=[{"custom_id": "ok_1", "params": params},
                                                         {"custom_id": "ok-2", "params": params | {
                                                             "messages": [{"role": "user", "content": "bad"}]}}])
        batch = client.messages.batches.retrieve(batch.id)
        assert batch.processing_status == "ended" and batch.request_counts.errored == 1
        results = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    assert results["ok_1"].type == "succeeded" and results["ok_1"].message.content[0].text == "hi"
    assert results["ok-2"].type == "errored" and results["ok-2"].error.error.type == "invalid_request_error"


def test_gemini_batch_answers_inlined_requests_in_order():
    with Simulator(SCRIPTS, batch_delay_s=0.2) as sim:
        client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=sim.gemini_base_url))
        src = [{"contents": [{"role": "user", "parts": [{"text": t}]}], "metadata": {"key": k}}
               for k, t in (("k1", "x"), ("k2", "bad"), ("k3", "y"))]
        job = client.batches.create(model="m", src=src, config={"display_name": "t"})
        assert job.state.name == "JOB_STATE_RUNNING" and not job.done
        time.sleep(0.25)
        job = client.batches.get(name=job.name)
    assert job.state.name == "JOB_STATE_SUCCEEDED" and job.done
    answers = job.dest.inlined_responses
    assert [a.metadata["key"] for a in answers] == ["k1", "k2", "k3"]
    assert answers[0].response.text == "hi" and answers[2].response.text == "hi"
    assert answers[1].response is None and answers[1].error.code == 400 and answers[1].error.message == "nope"
    assert sim.batch.created == {"gemini": 1}
