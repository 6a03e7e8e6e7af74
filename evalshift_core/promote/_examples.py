"""Promotion: captures become golden-suite examples with rounds, ground truth and fixtures.

Seed 001, "Offered, requested, executed" and "Agent rounds", rule by rule; the rules the seeds
leave open are written down in ``promote_example``'s docstring.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from .._models import Example
from ..ingest._captures import Capture

RoundsMode = Literal["first", "all"]
ToolsetLookup = Callable[[str], "list[dict[str, Any]] | None"]

_MISSING = object()


@dataclass
class Promotion:
    """One promoted example and the warnings its capture raised."""

    example: Example
    warnings: list[str] = field(default_factory=list)


def _text_of(message: dict[str, Any]) -> str:
    return "\n".join(
        str(p.get("content", "")) for p in message.get("parts", []) if p.get("type") == "text"
    )


def _failed(result: Any, error: Any) -> bool:
    if error:
        return True
    if isinstance(result, str) and result[:1] == "{":
        try:
            result = orjson.loads(result)
        except orjson.JSONDecodeError:
            return False
    return isinstance(result, Mapping) and result.get("success") is False


def _expected(call: Mapping[str, Any], names_only: bool) -> dict[str, Any]:
    # Key order and defaults exactly as ExpectedToolCall.model_dump(exclude_none=True) writes them.
    out: dict[str, Any] = {"tool_name": call["tool_name"]}
    args = call.get("arguments")
    if not names_only and isinstance(args, dict):
        out["arguments"] = args
    out["match_strategy"] = "exact"
    if call.get("call_id") is not None:
        out["call_id"] = call["call_id"]
    return out


def _fixture(name: str, result: Any, error: Any, call_id: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"tool_name": name}
    if result is not None:
        out["result"] = result
    if error is not None:
        out["error"] = str(error)
    if call_id is not None:
        out["call_id"] = call_id
    return out


LATER_ROUNDS_NOT_REPLAYED = "--rounds first replays round 1 only; later calls not replayed: "
"""How the warning on a multi-round capture promoted single-shot begins, after the example id
(``capture sync`` sums these up into one line)."""


def _names(calls: list[dict[str, Any]]) -> str:
    return ", ".join(c["tool_name"] for c in calls)


def _unwrap_arguments(
    example_id: str, tool_rounds: list[list[dict[str, Any]]], schemas: Mapping[str, Any], warnings: list[str]
) -> None:
    """Seed 001 Troubleshooting: unwrap a wrapper function's parameters when the schema confirms it."""
    for calls in tool_rounds:
        for call in calls:
            args = call.get("arguments")
            schema = schemas.get(call["tool_name"])
            if not isinstance(args, dict) or not isinstance(schema, Mapping):
                continue
            props = schema.get("properties")
            if not isinstance(props, Mapping):
                continue
            absent = [k for k in args if k not in props]
            if not absent:
                continue
            if len(args) == 1:
                (key, inner), = args.items()
                if isinstance(inner, dict) and inner and all(k in props for k in inner):
                    call["arguments"] = inner
                    warnings.append(
                        f"{example_id}: expected_tools arguments use keys absent from the tool schema "
                        f"({call['tool_name']}: {key}); unwrapped {key!r}, whose keys the recorded "
                        f"toolset schema confirms are the tool's parameters"
                    )
                    continue
            warnings.append(
                f"{example_id}: expected_tools arguments use keys absent from the tool schema "
                f"({call['tool_name']}: {', '.join(absent)}); kept as recorded"
            )



def _history_and_inputs(
    first: Mapping[str, Any], turn_inputs: Mapping[str, Any] | None
) -> tuple[list[dict[str, Any]], dict[str, Any], bool]:
    """Round 1's input split into the history prefix and the rendered prompt's ``input``.

    ``turn()`` inputs are kept as given; ``input`` (what a capture-first ``{input}`` prompt
    renders) is the last user message. The flag says messages followed that user message.
    """
    messages = list(first.get("messages") or [])
    system = first.get("system_instructions")
    if system and not any(m.get("role") == "system" for m in messages):
        messages.insert(0, {"role": "system", "parts": system})
    inputs = dict(turn_inputs or {})
    last_user = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].get("role") == "user"), None)
    if last_user is None:
        return messages, inputs, False
    inputs.setdefault("input", _text_of(messages[last_user]))
    return messages[:last_user], inputs, last_user < len(messages) - 1


def _retried(
    recorded: list[list[dict[str, Any]]], results_by_round: list[list[dict[str, Any]]], failed_ids: set[int]
) -> list[str]:
    """Tools the turn called again: after a failed result, or with the same arguments twice."""
    retried: list[str] = []
    seen_calls: set[bytes] = set()
    failed_tools: set[str] = set()
    for k, calls in enumerate(recorded):
        for call in calls:
            key = orjson.dumps([call["tool_name"], call.get("arguments")], option=orjson.OPT_SORT_KEYS)
            if (key in seen_calls or call["tool_name"] in failed_tools) and call["tool_name"] not in retried:
                retried.append(call["tool_name"])
            seen_calls.add(key)
        for res in results_by_round[k] if k < len(results_by_round) else ():
            if id(res) in failed_ids:
                failed_tools.add(str(res.get("tool_name")))
    return retried


def _fixtures(
    example_id: str,
    recorded: list[list[dict[str, Any]]],
    result_for: Callable[[int, dict[str, Any], set[int]], Any],
    warnings: list[str],
) -> list[list[dict[str, Any]]] | None:
    """``tool_result_fixtures`` for ``--rounds all`` (seed 001, "Agent rounds")."""
    n = len(recorded)
    if n < 2 or not recorded[0]:
        return None
    fixtures: list[list[dict[str, Any]]] = []
    stop_reason = None
    for k in range(n - 1):  # never the last recorded round: the replay's extra round is recorded
        if not recorded[k]:
            stop_reason = f"round {k + 1} called no tool but the turn went on"
            break
        entries = []
        used: set[int] = set()
        for call in recorded[k]:
            found = result_for(k, call, used)
            if found is _MISSING:
                stop_reason = f"round {k + 1} call {call['tool_name']} has no recorded result"
                break
            entries.append(_fixture(call["tool_name"], found[0], found[1], call.get("call_id")))
        if stop_reason:
            break
        fixtures.append(entries)
    if not fixtures:
        warnings.append(f"{example_id}: --rounds all: {stop_reason}; replay stays single-shot (round 1 only)")
        return None
    if stop_reason:
        covered = len(fixtures)
        later = [f"round {j + 1}: {_names(recorded[j])}" for j in range(covered + 1, n) if recorded[j]]
        warnings.append(
            f"{example_id}: --rounds all: {stop_reason}; tool_result_fixtures cover rounds 1-{covered}, "
            f"so the replay covers rounds 1-{covered + 1} of {n}"
            + (f"; not replayed: {'; '.join(later)}" if later else "")
        )
    return fixtures


@dataclass
class _Turn:
    """A capture's events as promotion reads them: the model calls it keeps, and per round (the
    events after each model call) the executed tool calls and their recorded results."""

    capture: Capture
    example_id: str
    calls: list[dict[str, Any]]
    """Model calls, less those that failed without a response (a transport retry, not a round)."""
    executed: list[list[dict[str, Any]]] = field(default_factory=list)
    results_by_round: list[list[dict[str, Any]]] = field(default_factory=list)
    results_by_id: dict[str, dict[str, Any]] = field(default_factory=dict)
    failed_ids: set[int] = field(default_factory=set)
    """``id()`` of the results that failed (an error, or ``success: false``)."""
    _message_results: dict[str, Any] | None = None

    @classmethod
    def of(cls, capture: Capture) -> _Turn:
        suffix = "" if capture.root_is_trace_root else f"-{capture.root_span_id[:8]}"
        events = [
            e for e in capture.events
            if not (e["type"] == "model_call" and e.get("error") and e.get("requested_tool_calls") is None
                    and not e.get("text"))
        ]
        turn = cls(capture, f"{capture.prompt_id or 'turn'}-{capture.trace_id[:16]}{suffix}",
                   [e for e in events if e["type"] == "model_call"])
        # Executed calls per round, and recorded results.
        for e in events:
            if e["type"] == "model_call":
                turn.executed.append([])
                turn.results_by_round.append([])
            elif not turn.executed:
                continue
            elif e["type"] == "tool_call":
                turn.executed[-1].append(e)
            elif e["type"] == "tool_result":
                turn.results_by_round[-1].append(e)
                if _failed(e.get("result"), e.get("error")):
                    turn.failed_ids.add(id(e))
                if e.get("call_id") is not None:
                    turn.results_by_id[str(e["call_id"])] = e
        return turn

    def message_result(self, call_id: str) -> Any:
        """A result the application sent back to the model, as recorded in later calls' messages;
        read only when an executed result is missing (later rounds repeat the whole conversation)."""
        if self._message_results is None:
            self._message_results = {}
            for c in self.calls[1:]:
                for m in self.capture.messages_of(c):
                    for p in m.get("parts") or ():
                        if p.get("type") == "tool_call_response" and p.get("id") is not None:
                            self._message_results.setdefault(str(p["id"]), p.get("response"))
        return self._message_results.get(call_id, _MISSING)

    def result_for(self, k: int, call: dict[str, Any], used: set[int]) -> Any:
        """A recorded call's ``(result, error)``: by call id, else by name within round ``k``,
        else from a later call's messages; ``_MISSING`` when none was recorded."""
        cid = call.get("call_id")
        if cid is not None and str(cid) in self.results_by_id:
            r = self.results_by_id[str(cid)]
            return r.get("result"), r.get("error")
        if k < len(self.results_by_round):
            for r in self.results_by_round[k]:
                if id(r) not in used and r.get("tool_name") == call["tool_name"] and (cid is None or r.get("call_id") is None):
                    used.add(id(r))
                    return r.get("result"), r.get("error")
        if cid is not None:
            found = self.message_result(str(cid))
            if found is not _MISSING:
                return found, None
        return _MISSING


def _ground_truth(
    turn: _Turn, warnings: list[str]
) -> tuple[Literal["requested", "executed"], list[list[dict[str, Any]]], list[str]]:
    """Per round, the calls the example expects (requested, else executed), and the tools whose
    failed executed calls were retried identically (collapsed into their last attempt)."""
    example_id, calls = turn.example_id, turn.calls
    retried: list[str] = []
    incomplete = [c.get("round_index") for c in calls if c.get("stream_incomplete")]
    if incomplete:
        warnings.append(f"{example_id}: round {incomplete[0]}'s stream was not read to its end, so its "
                        "requested calls may be cut short; ground truth falls back to executed calls")
    if not incomplete and all(c.get("requested_tool_calls") is not None for c in calls):
        return "requested", [c["requested_tool_calls"] for c in calls], retried
    recorded = []
    for k, round_calls in enumerate(turn.executed):
        kept: list[dict[str, Any]] = []
        failed_prev = False
        for call in round_calls:
            entry = {"call_id": call.get("call_id"), "tool_name": call["tool_name"], "arguments": call.get("arguments")}
            if kept and failed_prev and kept[-1]["tool_name"] == entry["tool_name"] \
                    and kept[-1]["arguments"] == entry["arguments"]:
                warnings.append(
                    f"{example_id}: round {k + 1}: {entry['tool_name']} failed and was retried by the "
                    f"application; the retries are collapsed into one expected call"
                )
                kept[-1] = entry
                if entry["tool_name"] not in retried:
                    retried.append(entry["tool_name"])
            else:
                kept.append(entry)
            res = turn.results_by_id.get(str(call.get("call_id"))) if call.get("call_id") else None
            if res is None:
                res = next((r for r in turn.results_by_round[k] if r.get("tool_name") == call["tool_name"]
                            and r.get("call_id") == call.get("call_id")), None)
            failed_prev = res is not None and id(res) in turn.failed_ids
        recorded.append(kept)
    if not any(recorded) and any("no model response recorded" in n for n in turn.capture.notes):
        warnings.append(f"{example_id}: neither requested nor executed calls were recorded; "
                        "the example carries no tool ground truth")
        recorded = []
    return "executed", recorded, retried


def _tool_schemas(turn: _Turn, toolsets: ToolsetLookup | None, warnings: list[str]) -> dict[str, Any] | None:
    """Round 1's tool schemas by name, when its toolset resolves; a later round offering another
    toolset is said (every replayed round offers round 1's)."""
    ref = turn.calls[0].get("toolset_ref")
    schemas: dict[str, Any] | None = None
    if ref and toolsets is not None:
        tools = toolsets(ref)
        if tools is not None:
            schemas = {str(t.get("name")): t.get("input_schema") for t in tools if isinstance(t, Mapping)}
    for c in turn.calls[1:]:
        if c.get("toolset_ref") != ref:
            warnings.append(f"{turn.example_id}: round {c.get('round_index')} offered a different toolset than "
                            "round 1; every replayed round offers round 1's")
            break
    return schemas


def _warn_failed_results(turn: _Turn, warnings: list[str]) -> None:
    """Failed results anywhere in the promoted turn (seed 000, "What does not belong")."""
    for k, round_results in enumerate(turn.results_by_round):
        for r in round_results:
            if id(r) in turn.failed_ids:
                why = r.get("error") or "success: false"
                warnings.append(
                    f"{turn.example_id}: round {k + 1}: tool {r.get('tool_name')} returned a failed result ({why}); "
                    "the model's next move reacted to a broken tool, not a decision worth reproducing"
                )


def _tool_count(turn: _Turn, round1: list[dict[str, Any]], retried: list[str], warnings: list[str]) -> int | None:
    """``expected_tool_count``: round 1's length, unpinned when the turn shows a retry loop."""
    if retried and round1:
        warnings.append(
            f"{turn.example_id}: expected_tool_count not pinned: {', '.join(retried)} was retried in the recorded "
            "turn, and a retry loop is circumstance, not behaviour"
        )
        return None
    return len(round1) if round1 else None


# The on-disk key order of an example: Example's fields, as save_suite (model_dump) writes them.
_EXAMPLE_KEYS = tuple(info.serialization_alias or info.alias or name for name, info in Example.model_fields.items())


def promote_example(
    capture: Capture,
    *,
    rounds: RoundsMode = "first",
    names_only: bool = False,
    toolsets: ToolsetLookup | None = None,
) -> tuple[dict[str, Any] | None, list[str]]:
    """Promote one capture into an example in its on-disk shape, plus its warnings.

    Rules (seed 001 where it speaks; ours where it is silent):

    - One round per recorded model call; a model call that failed without a response is a
      retry of the transport, not a round, and is dropped. The answer round is ``[]``.
    - Requested calls are the ground truth when every kept model call recorded them in full (a
      stream the host stopped reading is not in full); else the executed calls, each assigned to
      the round of the model call before it.
    - ``expected_tools`` is round 1; ``expected_tool_count`` is its length, except when the turn
      shows a retry (a tool called again after a failed result, or the same call with the same
      arguments twice): then it is left unpinned and a warning says why. On executed ground
      truth, a failed call repeated identically is collapsed into its last attempt.
    - ``expected_parallel`` is true when round 1 asked for more than one call, false for one,
      unset for none; ``expected_no_tools`` is true when no round called anything.
    - ``--rounds all`` fixtures cover leading tool rounds whose every call has a recorded result
      (an executed ``tool_result``, else the ``tool_call_response`` the next model call was
      sent), and never the last recorded round, so the replay's extra round is a recorded one.
    """
    turn = _Turn.of(capture)
    example_id, calls = turn.example_id, turn.calls
    if not calls:
        return None, [f"{example_id}: every model call of the turn failed; nothing to promote"]
    warnings = [f"{example_id}: {note}" for note in capture.notes]

    # Ground truth: requested calls, else executed ones, per round.
    source, recorded, retried = _ground_truth(turn, warnings)
    schemas = _tool_schemas(turn, toolsets, warnings)
    tool_rounds = [[_expected(c, names_only) for c in r] for r in recorded]
    if schemas is not None and not names_only:
        _unwrap_arguments(example_id, tool_rounds, schemas, warnings)
    _warn_failed_results(turn, warnings)

    # How many calls round 1 pins: unpinned when a tool was retried.
    for name in _retried(recorded, turn.results_by_round, turn.failed_ids):
        if name not in retried:
            retried.append(name)
    round1 = tool_rounds[0] if tool_rounds else []
    expected_tool_count = _tool_count(turn, round1, retried, warnings)

    # The prompt: round 1's history and inputs.
    first = calls[0]
    history, inputs, trailing = _history_and_inputs(first, capture.inputs)
    if trailing:
        warnings.append(f"{example_id}: round 1's input continues after its last user message; "
                        "those messages are not replayed")

    # Rounds replayed: fixtures for --rounds all, else round 1 only.
    fixtures = None
    if rounds == "all":
        fixtures = _fixtures(example_id, recorded, turn.result_for, warnings)
    else:
        later = [f"round {j + 1}: {_names(recorded[j])}" for j in range(1, len(recorded)) if recorded[j]]
        if later:
            warnings.append(
                f"{example_id}: {LATER_ROUNDS_NOT_REPLAYED}{'; '.join(later)}"
            )

    # The example: the fields it sets, in Example's field order (what save_suite writes).
    ref = first.get("toolset_ref")
    fields: dict[str, Any] = {
        "id": example_id, "inputs": inputs, "tags": list(capture.tags), "prompt_id": capture.prompt_id,
        "history": history, "toolset_ref": ref or None, "tools": None if ref else [],
        "generation_config": dict(first.get("generation_config") or {}),
        "expected_tools": round1 if tool_rounds else None,
        "expected_tool_rounds": tool_rounds or None,
        "tool_result_fixtures": fixtures,
        "expected_tool_count": expected_tool_count,
        "expected_no_tools": True if tool_rounds and not any(tool_rounds) else None,
        "expected_parallel": len(round1) > 1 if round1 else None,
        "promotion_source": source,
        "cluster": capture.trace_id,
        "recording": _recording(calls, len(fixtures) + 1 if fixtures else 1),
    }
    return {key: fields[key] for key in _EXAMPLE_KEYS if fields.get(key) is not None}, warnings


def _recording(calls: list[dict[str, Any]], replayed: int) -> dict[str, Any]:
    """The recorded model, and the text and refusal of the rounds a replay covers (1..replayed).

    Like a replayed trace: the text of the last covered round, and its refusal or an earlier one's.
    """
    covered = calls[:replayed]
    last = covered[-1]
    refusal = last.get("refusal")
    if refusal is None:
        refusal = next((c["refusal"] for c in covered if c.get("refusal") is not None), None)
    recording: dict[str, Any] = {"model": calls[0].get("request_model") or calls[0].get("model")}
    if last.get("text") is not None:
        recording["text"] = last["text"]
    elif last.get("requested_tool_calls") is not None:
        recording["text"] = ""  # a response recorded in full that said nothing besides its calls
    if refusal is not None:
        recording["refusal"] = str(refusal)
    return recording


def promote_capture(
    capture: Capture,
    *,
    rounds: RoundsMode = "first",
    names_only: bool = False,
    toolsets: ToolsetLookup | Mapping[str, list[dict[str, Any]]] | None = None,
) -> Promotion:
    """Promote one capture (seed 001, "Agent rounds"); ``toolsets`` resolves a ref to its tools."""
    lookup: ToolsetLookup | None = toolsets.get if isinstance(toolsets, Mapping) else toolsets
    if lookup is None and capture.toolsets:
        lookup = capture.toolsets.get
    record, warnings = promote_example(capture, rounds=rounds, names_only=names_only, toolsets=lookup)
    if record is None:
        from .._exceptions import InputError

        raise InputError(warnings[0], file=capture.source)
    return Promotion(example=Example.model_validate(record), warnings=warnings)


def promote(
    captures: list[Capture], *, rounds: RoundsMode = "first", names_only: bool = False
) -> list[Promotion]:
    """Promote every capture that holds a usable model call."""
    out = []
    for c in captures:
        record, warnings = promote_example(
            c, rounds=rounds, names_only=names_only, toolsets=c.toolsets.get if c.toolsets else None
        )
        if record is not None:
            out.append(Promotion(example=Example.model_validate(record), warnings=warnings))
    return out
