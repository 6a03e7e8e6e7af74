"""``llm_judge``: a judge model grades both answers against criteria, through the replay clients.

Both-empty pairs are skipped at 0.5/0.5 without spending a judge call (seed 000): comparing two
empty strings only ever returns a meaningless tie.
"""

from __future__ import annotations

import os
import re
import threading
from typing import Any

from ._base import Pair, ScoreRecord, TextEvaluator
from ._text import TEXT_DRIFT, answer_text, empty_labels

DEFAULT_CRITERIA = "correctness and helpfulness of the answer to the user's request"

JUDGE_PROMPT = """You are grading two answers to the same request.

Criteria: {criteria}

Request:
{request}

Answer A:
{source}

Answer B:
{target}

Score each answer from 0 (fails the criteria) to 10 (fully meets them). Reply with JSON only:
{{"source_score": <score of A>, "target_score": <score of B>, "reason": "<one sentence>"}}"""

_JSON_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_verdict(text: str | None) -> tuple[float, float, str] | None:
    """``(source, target, reason)`` in [0, 1] from the judge's reply, or None if unusable."""
    import orjson

    found = _JSON_OBJECT.search(text or "")
    if found is None:
        return None
    try:
        data = orjson.loads(found.group(0))
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, dict):
        return None
    try:
        s, t = float(data["source_score"]), float(data["target_score"])
    except (KeyError, TypeError, ValueError):
        return None
    if not (0.0 <= s <= 10.0 and 0.0 <= t <= 10.0):
        return None
    return s / 10.0, t / 10.0, str(data.get("reason") or "")


def _make_client(provider: str, settings: dict[str, Any]) -> Any:
    # Imported here: the judge is the only evaluator that talks to a model.
    try:
        from ..replay.clients import make_client  # type: ignore[attr-defined]
    except ImportError:
        from .._clients import make_client  # type: ignore[no-redef]
    return make_client(provider, settings)


class LLMJudge(TextEvaluator):
    """Both answers graded by a judge model on ``criteria``; scores are the judge's 0-10 / 10."""

    type_name = "llm_judge"
    options = frozenset({"model", "criteria", "base_url", "api_key_env", "temperature"})
    # Seed 000: a both-empty pair is skipped at 0.5/0.5 without spending a judge call.
    skipped_score = 0.5
    skipped_details = ("model",)

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        if not config.get("model"):
            raise ValueError("llm_judge needs a judge model (model: provider:name)")
        self.model = str(config["model"])
        self.criteria = str(config.get("criteria") or DEFAULT_CRITERIA)
        self.temperature = config.get("temperature", 0)
        self._settings: dict[str, Any] = {}
        if config.get("base_url"):
            self._settings["base_url"] = str(config["base_url"])
        if config.get("api_key_env"):
            key = os.environ.get(str(config["api_key_env"]))
            if key:
                self._settings["api_key"] = key
        self._client: Any = None
        self._lock = threading.Lock()
        self.calls_made = 0
        """Judge requests sent by this instance (the skip rule promises none on empty pairs)."""

    def configure_provider(self, settings: dict[str, Any] | None) -> None:
        """Provider settings from evalshift.yaml's ``providers:``; the evaluator's own win."""
        self._settings = {**dict(settings or {}), **self._settings}

    def _judge(self, prompt: str) -> str | None:
        from ..replay._routing import route

        ref = route(self.model)
        with self._lock:
            if self._client is None:
                self._client = _make_client(ref.provider, self._settings)
            self.calls_made += 1
        messages = [{"role": "user", "parts": [{"type": "text", "content": prompt}]}]
        response = self._client.complete(ref, messages, [], {"temperature": self.temperature})
        return response.text

    def score_pair(self, pair: Pair) -> list[ScoreRecord]:
        example = pair.example
        src, tgt = answer_text(pair.source), answer_text(pair.target)
        request = "\n".join(f"{k}: {v}" for k, v in example.inputs.items()) or "(not recorded)"
        prompt = JUDGE_PROMPT.format(criteria=self.criteria, request=request,
                                     source=src or "(no text)", target=tgt or "(no text)")
        try:
            reply = self._judge(prompt)
        except Exception as exc:  # noqa: BLE001 - a failed judge call leaves the row unmeasured
            from .._exceptions import EvalShiftError

            if isinstance(exc, EvalShiftError):
                raise
            return [self.record(example, source_score=0.5, target_score=0.5, skipped=True,
                                metadata={"skipped": True, "model": self.model,
                                          "reason": f"judge call failed: {type(exc).__name__}: {exc}"})]
        verdict = parse_verdict(reply)
        if verdict is None:
            return [self.record(example, source_score=0.5, target_score=0.5, skipped=True,
                                metadata={"skipped": True, "model": self.model,
                                          "reason": "judge reply was not the JSON verdict asked for",
                                          "reply": (reply or "")[:500]})]
        s, t, reason = verdict
        labels = empty_labels(src, tgt)
        if not labels and t < s:
            labels.append(TEXT_DRIFT)
        return [self.record(example, source_score=s, target_score=t, labels=labels,
                            metadata={"model": self.model, "criteria": self.criteria, "reason": reason})]
