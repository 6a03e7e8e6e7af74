"""Scripted model behaviour: which tool calls or text to return for which request.

A script is an ordered list of rules; the first rule whose ``when`` matches the request
decides the reply. Rules are plain data, so a script can live in YAML or JSON:

    - when: {user_matches: "refund .*order (?P<order_id>[A-Z]\\d+)", after: []}
      reply: {tool_calls: [{name: lookup_order, arguments: {order_id: "{order_id}"}}]}
    - when: {after: [lookup_order]}
      reply: {text: "Done."}
    - when: {}
      reply: {error: {status: 400, message: "context too long"}}   # an HTTP error instead

``after`` is the list of tool names the conversation already called (recorded or the model's),
so a rule can answer round k of a teacher-forced replay.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass
class SimRequest:
    """A provider request reduced to what rules look at (semconv-shaped messages)."""

    model: str
    messages: list[dict[str, Any]]
    tool_names: list[str] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)

    def last_user_text(self) -> str:
        for msg in reversed(self.messages):
            if msg.get("role") == "user":
                texts = [p.get("content", "") for p in msg.get("parts", []) if p.get("type") == "text"]
                if texts:
                    return "\n".join(str(t) for t in texts)
        return ""

    def called(self) -> list[str]:
        """Tool names the conversation already called, in order."""
        return [
            p.get("name", "")
            for msg in self.messages
            if msg.get("role") == "assistant"
            for p in msg.get("parts", [])
            if p.get("type") == "tool_call"
        ]


@dataclass
class Reply:
    """What the simulated model answers: text, tool calls (parallel when several) or a refusal."""

    text: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    refusal: str | None = None
    error: dict[str, Any] | None = None
    """``{status, message}``: answer with an HTTP error in the provider's shape instead."""


@dataclass
class Rule:
    when: dict[str, Any]
    reply: dict[str, Any]

    def match(self, request: SimRequest) -> dict[str, str] | None:
        """Template variables when the rule applies, else None."""
        variables: dict[str, str] = {}
        pattern = self.when.get("user_matches")
        if pattern is not None:
            found = re.search(pattern, request.last_user_text(), re.IGNORECASE | re.DOTALL)
            if found is None:
                return None
            variables.update({k: v for k, v in found.groupdict().items() if v is not None})
        after = self.when.get("after")
        if after is not None and request.called() != list(after):
            return None
        if self.when.get("tools_offered") is True and not request.tool_names:
            return None
        if self.when.get("tools_offered") is False and request.tool_names:
            return None
        return variables

    def render(self, variables: Mapping[str, str]) -> Reply:
        def fill(value: Any) -> Any:
            if isinstance(value, str):
                whole = re.fullmatch(r"\{(\w+)(?::(number))?\}", value)
                if whole and whole.group(1) in variables:
                    raw = variables[whole.group(1)]
                    return float(raw) if whole.group(2) == "number" else raw
                return value.format_map(_Defaulting(variables))
            if isinstance(value, list):
                return [fill(v) for v in value]
            if isinstance(value, dict):
                return {k: fill(v) for k, v in value.items()}
            return value

        reply = self.reply
        return Reply(
            text=fill(reply.get("text")),
            tool_calls=[
                {"name": c["name"], "arguments": fill(c.get("arguments", {}))}
                for c in reply.get("tool_calls", [])
            ],
            refusal=fill(reply.get("refusal")),
            error=dict(reply["error"]) if reply.get("error") else None,
        )


class _Defaulting(dict):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


@dataclass
class ModelScript:
    """The rules of one simulated model."""

    name: str
    rules: list[Rule]
    fallback: str = "I can help with that."

    def respond(self, request: SimRequest) -> Reply:
        for rule in self.rules:
            variables = rule.match(request)
            if variables is not None:
                return rule.render(variables)
        return Reply(text=self.fallback)


def load_scripts(spec: Mapping[str, Any]) -> dict[str, ModelScript]:
    """Build scripts from ``{model_name: [rule, ...]}`` data."""
    scripts = {}
    for name, rules in spec.items():
        scripts[name] = ModelScript(
            name=name, rules=[Rule(when=dict(r.get("when", {})), reply=dict(r["reply"])) for r in rules]
        )
    return scripts
