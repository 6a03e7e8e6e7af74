"""Shared pieces of the text evaluators: which text a side answered, and the honest skip rules.

A turn that ends in tool calls has no text; both-empty pairs are skipped, never scored as a tie.
"""

from __future__ import annotations

from typing import Any

from .._models import ToolTrace

TEXT_DRIFT = "TEXT_DRIFT"
EMPTY_RESPONSE = "EMPTY_RESPONSE"
BOTH_EMPTY_REASON = "both sides answered with tool calls and no text"


def answer_text(trace: ToolTrace) -> str:
    """The text a side answered with (its last round), or "" when it had none."""
    return trace.final_text or ""


def is_empty(text: str) -> bool:
    return not text.strip()


def empty_labels(source_text: str, target_text: str) -> list[str]:
    """EMPTY_RESPONSE when the target went silent where the source answered in prose."""
    return [EMPTY_RESPONSE] if is_empty(target_text) and not is_empty(source_text) else []


def skipped_metadata(**extra: Any) -> dict[str, Any]:
    return {"skipped": True, "reason": BOTH_EMPTY_REASON, **extra}
