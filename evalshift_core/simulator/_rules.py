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

A model's value may instead be ``{rules: [...], noise: ...}``: a seeded noise profile (see
``_noise.py``) varies its replies between replays as a real agent's vary. With a profile, ``after``
also matches the history such a model produces (a re-check round, another call order within a
response, a skipped optional tool) when no rule matches the history literally.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import InputError
from ._noise import Call, NoiseProfile, after_matches, apply_noise, request_key, resolve_noise


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

    def called_rounds(self) -> list[list[Call]]:
        """Tool calls the conversation already made, one list per model response: (name, arguments)."""
        rounds = []
        for msg in self.messages:
            if msg.get("role") == "assistant":
                calls = [(p.get("name", ""), p.get("arguments")) for p in msg.get("parts", [])
                         if p.get("type") == "tool_call"]
                if calls:
                    rounds.append(calls)
        return rounds


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

    def match(self, request: SimRequest, noise: NoiseProfile | None = None) -> dict[str, str] | None:
        """Template variables when the rule applies, else None.

        With ``noise``, ``after`` also matches a history that profile's noise could have made.
        """
        variables: dict[str, str] = {}
        pattern = self.when.get("user_matches")
        if pattern is not None:
            found = re.search(pattern, request.last_user_text(), re.IGNORECASE | re.DOTALL)
            if found is None:
                return None
            variables.update({k: v for k, v in found.groupdict().items() if v is not None})
        after = self.when.get("after")
        if after is not None and request.called() != list(after) and (
                noise is None or not after_matches(list(after), request.called_rounds(), noise)):
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
    """The rules of one simulated model, and how its replies vary between replays."""

    name: str
    rules: list[Rule]
    fallback: str = "I can help with that."
    noise: NoiseProfile | None = None
    """None: the same request always gets the same reply."""

    def respond(self, request: SimRequest, *, repeat: int = 0) -> Reply:
        """The reply to ``request`` the ``repeat``-th time this model answers it (0: the first)."""
        return self.answer(request, repeat=repeat)[0]

    def answer(self, request: SimRequest, *, repeat: int = 0) -> tuple[Reply, list[str]]:
        """The reply and the kinds of noise that changed it."""
        reply = self._scripted(request)
        if self.noise is None:
            return reply, []
        return apply_noise(reply, request.called_rounds(), self.noise, request_key(request), repeat)

    def _scripted(self, request: SimRequest) -> Reply:
        found = self._first_match(request, None)
        if self.noise is not None and (found is None or "after" not in found[0].when):
            # no rule reads the history literally: read it as this model's noise could have made it
            found = self._first_match(request, self.noise) or found
        if found is None:
            return Reply(text=self.fallback)
        rule, variables = found
        return rule.render(variables)

    def _first_match(self, request: SimRequest, noise: NoiseProfile | None) -> tuple[Rule, dict[str, str]] | None:
        for rule in self.rules:
            variables = rule.match(request, noise)
            if variables is not None:
                return rule, variables
        return None


def load_scripts(spec: Mapping[str, Any], *, noise: Any = None, noise_seed: int | None = None
                 ) -> dict[str, ModelScript]:
    """Build scripts from ``{model_name: [rule, ...] | {rules: [...], noise: ..., fallback: ...}}`` data.

    ``noise`` (a preset name, a mapping or a :class:`NoiseProfile`) applies to every model on top
    of its own profile, keeping its tool lists; ``noise_seed`` replaces every profile's seed. Bad
    data raises :class:`InputError` naming the field.
    """
    scripts = {}
    for name, value in spec.items():
        scripts[name] = _script(str(name), value)
    return with_noise(scripts, noise=noise, noise_seed=noise_seed)


def with_noise(scripts: Mapping[str, ModelScript], *, noise: Any = None, noise_seed: int | None = None
               ) -> dict[str, ModelScript]:
    """``scripts`` with ``noise`` applied over each model's profile and ``noise_seed`` as every seed."""
    out = {}
    for name, script in scripts.items():
        profile = resolve_noise(noise, script.noise)
        if profile is not None and noise_seed is not None:
            profile = dataclasses.replace(profile, seed=noise_seed)
        out[name] = script if profile is script.noise else dataclasses.replace(script, noise=profile)
    return out


def _script(name: str, value: Any) -> ModelScript:
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"rules", "noise", "fallback"})
        if unknown:
            raise InputError(f"unknown key {unknown[0]!r}; a model has rules, noise and fallback", field=name)
        rules, noise, fallback = value.get("rules", []), value.get("noise"), value.get("fallback")
        where = f"{name}.rules"
    else:
        rules, noise, fallback, where = value, None, None, name
    if not isinstance(rules, list):
        raise InputError("a list of rules", field=where)
    parsed = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, Mapping) or not isinstance(rule.get("reply"), Mapping):
            raise InputError("each rule needs a reply", field=f"{where}[{i}]")
        when = rule.get("when")
        when = {} if when is None else when
        if not isinstance(when, Mapping):
            raise InputError("when is a mapping", field=f"{where}[{i}].when")
        parsed.append(Rule(when=dict(when), reply=dict(rule["reply"])))
    if fallback is not None and not isinstance(fallback, str):
        raise InputError("the fallback is a text", field=f"{name}.fallback")
    script = ModelScript(name=name, rules=parsed, noise=resolve_noise(noise, field=f"{name}.noise"))
    if fallback is not None:
        script.fallback = fallback
    return script
