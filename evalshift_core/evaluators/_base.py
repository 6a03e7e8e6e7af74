"""What every evaluator produces: score records in the ``scores.jsonl`` shape."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, Field

from .._models import Example, ToolTrace


class ScoreRecord(BaseModel):
    """One row of ``scores.jsonl``: one example, one evaluator (one side where it has two)."""

    example_id: str
    """The example scored."""
    evaluator: str
    """Evaluator type name (``tool_selection``, ...)."""
    name: str
    """The configured instance's name."""
    side: str | None = None
    """``conformance`` or ``divergence`` where the evaluator has two sides."""
    source_score: float
    """Score of the source model in [0, 1]."""
    target_score: float
    """Score of the target model in [0, 1]."""
    skipped: bool = False
    """True when the pair could not be measured; it then leaves every rate."""
    labels: list[str] = Field(default_factory=list)
    """Regression labels (TOOL_SELECTION_DRIFT, ...)."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Evaluator-specific detail; ``rounds`` on multi-round pairs."""


class Evaluator:
    """Base class: one configured instance of an evaluator type."""

    type_name: ClassVar[str] = ""
    needs_traces: ClassVar[bool] = True

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = dict(config)
        self.name = str(config.get("name") or self.type_name)
        self.severity_floor: str | None = config.get("severity_floor")

    def score(self, example: Example, source: ToolTrace, target: ToolTrace) -> list[ScoreRecord]:
        raise NotImplementedError

    def record(self, example: Example, **fields: Any) -> ScoreRecord:
        return ScoreRecord(example_id=example.id, evaluator=self.type_name, name=self.name, **fields)
