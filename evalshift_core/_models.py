"""The records EvalShift reads and writes: tool calls, traces, toolsets, examples, Call rows.

pydantic v2 models with a docstring per field; every on-disk record round-trips through JSON.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from evalshift_sdk.schema import ToolShapeError, normalise_tool, toolset_ref

from ._shapes import check_generation_config, check_messages, toolset_ref_problem

SCHEMA_VERSION = 1

AS_WRITTEN: dict[str, Any] = {"as_written": True}
"""Validation context for rows read back from a run file EvalShift wrote and vouches for
(``written.json``): the shape checks they passed when first read are not run again."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class ToolCall(_Record):
    """One tool call a model requested, provider-agnostic."""

    tool_name: str
    """The tool's name as offered."""
    arguments: Any = Field(default_factory=dict)
    """Parsed arguments (a dict, or the raw text when the model emitted invalid JSON)."""
    call_id: str | None = None
    """The provider's call id, when it gave one."""
    parent_call_id: str | None = None
    """The call whose result led to this one, when known."""
    sequence_index: int = 0
    """Position of the call in the whole trace (0-based)."""
    round_index: int | None = None
    """1-based model round on a multi-round replay; absent on single-shot."""


class ToolTrace(_Record):
    """What a model did on one example: ordered calls plus its text and refusal info."""

    calls: list[ToolCall] = Field(default_factory=list)
    """Every requested call, in order."""
    final_text: str | None = None
    """Text of the last round."""
    refusal: str | None = None
    """The refusal text or reason when the model refused, else None."""
    round_count: int | None = None
    """Model rounds replayed; absent on single-shot pairs."""

    @property
    def refused(self) -> bool:
        return self.refusal is not None

    def names(self) -> list[str]:
        return [c.tool_name for c in self.calls]

    def round(self, k: int) -> list[ToolCall]:
        """Calls of round ``k`` (1-based); every call is round 1 on a single-shot trace."""
        if self.round_count is None:
            return list(self.calls) if k == 1 else []
        return [c for c in self.calls if c.round_index == k]


class Tool(_Record):
    """One tool in the canonical shape (either provider shape is accepted on input)."""

    name: str
    """Tool name."""
    description: str | None = None
    """What the tool does, as the model sees it."""
    input_schema: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    """JSON schema of the arguments."""
    strict: bool | None = None
    """Strict schema adherence, only when set."""

    @model_validator(mode="before")
    @classmethod
    def _accept_provider_shapes(cls, value: Any) -> Any:
        if isinstance(value, dict):
            try:
                return normalise_tool(value)
            except ToolShapeError as exc:
                raise ValueError(str(exc)) from exc
        return value

    def canonical(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class Toolset(BaseModel):
    """An ordered list of tools; identity is the sha256 of its canonical JSON."""

    tools: list[Tool] = Field(default_factory=list)
    """The tools, in the order the application offered them."""

    @model_validator(mode="before")
    @classmethod
    def _accept_list(cls, value: Any) -> Any:
        if isinstance(value, list):
            return {"tools": value}
        return value

    def canonical(self) -> list[dict[str, Any]]:
        return [t.canonical() for t in self.tools]

    @property
    def ref(self) -> str:
        return toolset_ref(self.canonical())


class ExpectedToolCall(_Record):
    """One ground-truth call of an example."""

    tool_name: str
    """The tool the agent should call."""
    arguments: dict[str, Any] | None = None
    """Expected arguments; absent under ``--names-only``."""
    match_strategy: Literal["exact", "subset", "contains_per_field"] = "exact"
    """Which keys `tool_arguments` compares: exact = union of keys, subset/contains_per_field = recorded keys."""
    call_id: str | None = None
    """The recorded call id, when the capture had one."""


class FixtureResult(_Record):
    """A recorded tool result replayed to the model in teacher-forced rounds."""

    tool_name: str
    """The tool that produced it."""
    result: Any = None
    """The recorded result (a string is replayed verbatim, anything else as JSON)."""
    error: str | None = None
    """A recorded tool error, replayed as ``{"error": "..."}``."""
    call_id: str | None = None
    """The recorded call id."""


class Recording(_Record):
    """What the recorded model itself did on an example promoted from a capture.

    With ``expected_tool_rounds`` (the recorded calls) it is the A/A baseline of the drift
    comparisons: the source replay and the target are both scored against the recording, the
    same way, when the recording's model is the configured source model.
    """

    model: str | None = None
    """The model the capture asked for (``gen_ai.request.model``)."""
    text: str | None = None
    """The recorded text of the last round a replay covers."""
    refusal: str | None = None
    """The recorded refusal of those rounds, when the model refused."""


class Example(_Record):
    """One golden-suite example: inputs, offered tools and ground truth."""

    id: str
    """Stable example id."""
    inputs: dict[str, Any] = Field(default_factory=dict)
    """Prompt variables; the capture-first prompt renders ``input``."""
    tags: list[str] = Field(default_factory=list)
    """Free-form tags (slices in the report)."""
    prompt_id: str | None = None
    """The prompt this example belongs to."""
    history: list[dict[str, Any]] = Field(default_factory=list)
    """Messages (semconv shape) sent before the rendered prompt."""
    toolset_ref: str | None = None
    """Pointer to a ``toolsets/<hex>.json`` sidecar."""
    tools: list[Tool] | None = None
    """Inline toolset; ``[]`` means no tools offered."""
    generation_config: dict[str, Any] = Field(default_factory=dict)
    """Recorded generation settings, including tool_choice and parallel_tool_calls."""
    expected_tools: list[ExpectedToolCall] | None = None
    """Ground truth of round 1 (``expected_tool_rounds[0]``)."""
    expected_tool_rounds: list[list[ExpectedToolCall]] | None = None
    """Ground truth of every recorded round."""
    tool_result_fixtures: list[list[FixtureResult]] | None = None
    """Recorded results per covered round, aligned with ``expected_tool_rounds``."""
    expected_tool_count: int | None = None
    """Expected number of calls."""
    expected_no_tools: bool | None = None
    """The example should be answered without calling any tool."""
    expected_parallel: bool | None = None
    """Round 1 should issue its calls in parallel."""
    promotion_source: Literal["requested", "executed"] | None = None
    """Whether ground truth came from the model's requested calls or the app's executed ones."""
    cluster: str | None = None
    """The source trace this example was promoted from (clusters for the statistics)."""
    recording: Recording | None = None
    """The recorded model, text and refusal of a promoted example (the drift comparisons' baseline)."""

    @model_validator(mode="after")
    def _one_toolset(self) -> Example:
        if self.toolset_ref is not None and self.tools is not None:
            raise ValueError("an example carries exactly one of toolset_ref or tools, not both")
        return self

    @field_validator("history")
    @classmethod
    def _history_shape(cls, value: list[dict[str, Any]], info: ValidationInfo) -> list[dict[str, Any]]:
        if info.context is not AS_WRITTEN:
            check_messages(value)  # a part that is a string would fail mid-replay
        return value

    @field_validator("generation_config")
    @classmethod
    def _generation_config_shape(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        if info.context is not AS_WRITTEN:
            check_generation_config(value)  # e.g. stop: 1.5
        return value

    @field_validator("toolset_ref")
    @classmethod
    def _ref_shape(cls, value: str | None, info: ValidationInfo) -> str | None:
        problem = toolset_ref_problem(value) if value is not None and info.context is not AS_WRITTEN else None
        if problem is not None:
            raise ValueError(f"toolset_ref {problem}")
        return value

    @property
    def replay_rounds(self) -> int:
        """Rounds a teacher-forced replay covers: every fixture round plus the one after it."""
        if not self.tool_result_fixtures:
            return 1
        return len(self.tool_result_fixtures) + 1

    def expected_round(self, k: int) -> list[ExpectedToolCall] | None:
        if self.expected_tool_rounds is not None:
            return self.expected_tool_rounds[k - 1] if k <= len(self.expected_tool_rounds) else []
        if k == 1:
            return self.expected_tools
        return None


class Usage(_Record):
    """Token counts summed over rounds."""

    input_tokens: int = 0
    output_tokens: int = 0


class Call(_Record):
    """One raw.jsonl row: one model's replay of one example."""

    example_id: str
    """The example replayed."""
    role: Literal["source", "target"]
    """Which side of the comparison."""
    model: str
    """The routed model name (``provider:name``)."""
    trace: ToolTrace | None = None
    """Parsed tool trace; None when the call failed."""
    text: str | None = None
    """Text of the last round."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens summed over rounds."""
    cost_usd: float = 0.0
    """Estimated cost summed over rounds."""
    latency_ms: float = 0.0
    """Latency summed over rounds."""
    rounds: int = 1
    """Model calls made."""
    error: str | None = None
    """``round k/n: ...`` when a model call failed; the example is then unmeasured."""
    dropped_params: list[str] = Field(default_factory=list)
    """Request settings the provider could not honour (e.g. ``tools.strict`` on Gemini)."""
    cached: bool = False
    """Served from the response cache."""
    repeat: int | None = None
    """1, 2, ... on the extra source replays of ``source_repeats``; absent on the first replay and
    on the target."""
