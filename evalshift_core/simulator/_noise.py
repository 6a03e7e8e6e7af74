"""Seeded noise for scripted models: two replays of one model differ the way real agents do.

A :class:`NoiseProfile` perturbs a :class:`~._rules.Reply` after its rule matched, so every wire
format carries it. Each kind has its own rate and its own random stream, drawn from
``(seed, request, repeat, kind)``: a fresh simulator answers the same requests the same way, and
the n-th identical request to one model (``repeat``) gets a fresh sample.

    noise:
      preset: mild                        # none | mild | realistic; the fields below override it
      seed: 7
      read_only_tools: [lookup_order]     # extra_lookup re-calls these
      optional_tools: [think]             # skip_optional drops these
      free_text_fields: [reason, signal]  # reword_arguments rewords these
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import random
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from .._exceptions import InputError

if TYPE_CHECKING:
    from ._rules import Reply, SimRequest

Call = tuple[str, Any]
"""A call of the history: (tool name, arguments)."""

KINDS = ("extra_lookup", "skip_optional", "swap_calls", "reword_arguments", "number_format", "reword_text")
"""The noise kinds, in the order they apply to a reply."""

DEFAULT_FREE_TEXT = ("reason", "summary", "thought", "signal")


@dataclass(frozen=True)
class NoiseProfile:
    """How a scripted model's replies vary between replays; every rate is a probability in [0, 1]."""

    seed: int = 0
    """Seeds every draw together with the request and its repeat."""
    extra_lookup: float = 0.0
    """Per reply that acts or answers right after a read-only call: re-call one of that round's
    read-only tools with the same arguments instead; the scripted reply follows one round later."""
    skip_optional: float = 0.0
    """Per optional call in a response that has other calls: leave it out."""
    swap_calls: float = 0.0
    """Per response with several calls: list them in another order."""
    reword_arguments: float = 0.0
    """Per free-text argument (a string under a ``free_text_fields`` key): another wording."""
    number_format: float = 0.0
    """Per numeric argument: another spelling of the same number (``12`` / ``12.0`` / ``"12"``)."""
    reword_text: float = 0.0
    """Per reply with answer text: another wording of it."""
    read_only_tools: tuple[str, ...] = ()
    """Tools that only read (lookups): re-calling one changes nothing."""
    optional_tools: tuple[str, ...] = ()
    """Tools a model may leave out (a ``think`` step)."""
    free_text_fields: tuple[str, ...] = DEFAULT_FREE_TEXT
    """Argument names whose string values are free text."""

    def rate(self, kind: str) -> float:
        return float(getattr(self, kind))


_ZERO = dict.fromkeys(KINDS, 0.0)
PRESETS: dict[str, dict[str, float]] = {
    "none": _ZERO,
    # Differences a careful reviewer sees in a handful of replays of one model at temperature 0.
    "mild": {"extra_lookup": 0.05, "skip_optional": 0.1, "swap_calls": 0.25, "reword_arguments": 0.3,
             "number_format": 0.05, "reword_text": 0.3},
    # What two runs of one agent on multi-step tickets look like: free text almost never repeats,
    # parallel calls come in either order, a re-check before acting is common.
    "realistic": {"extra_lookup": 0.15, "skip_optional": 0.25, "swap_calls": 0.5, "reword_arguments": 0.8,
                  "number_format": 0.15, "reword_text": 0.8},
}
"""Named rate sets; a preset sets the rates only, a profile's tool and field lists stay its own."""

_LISTS = ("read_only_tools", "optional_tools", "free_text_fields")
_KEYS = ("preset", "seed", *KINDS, *_LISTS)


def resolve_noise(spec: Any, base: NoiseProfile | None = None, *, field: str = "noise") -> NoiseProfile | None:
    """A profile from a preset name, a mapping or a :class:`NoiseProfile`, on top of ``base``.

    ``None`` keeps ``base`` (which may be None: no noise). A preset replaces the rates and keeps
    ``base``'s seed and lists; a mapping's fields override both. Bad input raises
    :class:`InputError` naming ``field``.
    """
    if spec is None or isinstance(spec, NoiseProfile):
        return spec if spec is not None else base
    profile = base or NoiseProfile()
    if isinstance(spec, str):
        return dataclasses.replace(profile, **_preset(spec, field))
    if not isinstance(spec, Mapping):
        raise InputError(f"a preset name ({', '.join(PRESETS)}) or a mapping, not {type(spec).__name__}",
                         field=field)
    for key in spec:
        if key not in _KEYS:
            close = difflib.get_close_matches(str(key), _KEYS, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise InputError(f"unknown noise setting {key!r}{hint}", field=f"{field}.{key}")
    changes: dict[str, Any] = {}
    if "preset" in spec:
        changes.update(_preset(spec["preset"], f"{field}.preset"))
    if "seed" in spec:
        seed = spec["seed"]
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise InputError("the seed is an integer", field=f"{field}.seed")
        changes["seed"] = seed
    for kind in KINDS:
        if kind in spec:
            rate = spec[kind]
            if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
                raise InputError(f"a rate is a number from 0 to 1, not {rate!r}", field=f"{field}.{kind}")
            changes[kind] = float(rate)
    for name in _LISTS:
        if name in spec:
            values = spec[name]
            if not isinstance(values, Sequence) or isinstance(values, str) or not all(
                    isinstance(v, str) for v in values):
                raise InputError("a list of names", field=f"{field}.{name}")
            changes[name] = tuple(values)
    return dataclasses.replace(profile, **changes)


def _preset(name: Any, field: str) -> dict[str, float]:
    if not isinstance(name, str) or name not in PRESETS:
        raise InputError(f"unknown noise preset {name!r}; choose one of {', '.join(PRESETS)}", field=field)
    return PRESETS[name]


# -- drawing ------------------------------------------------------------------------------------


def request_key(request: SimRequest) -> str:
    """The request as a rule sees it: model, tools offered, texts and tool calls so far.

    Call ids and tool results are left out: ids are numbered by arrival, and a tool that returns
    a timestamp must not reshuffle the noise.
    """
    messages = []
    for msg in request.messages:
        parts = []
        for part in msg.get("parts", []):
            kind = part.get("type")
            if kind == "text":
                parts.append(["text", part.get("content")])
            elif kind == "tool_call":
                parts.append(["call", part.get("name"), part.get("arguments")])
            else:
                parts.append([kind])
        messages.append([msg.get("role"), parts])
    view = [request.model, list(request.tool_names), messages]
    return hashlib.sha256(orjson.dumps(view, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)).hexdigest()


def apply_noise(reply: Reply, rounds: list[list[Call]], profile: NoiseProfile, key: str,
                repeat: int) -> tuple[Reply, list[str]]:
    """The reply as this draw of the model gives it, and the kinds of noise that changed it."""
    if reply.error is not None or reply.refusal is not None:
        return reply, []

    def stream(kind: str) -> random.Random:
        # one stream per kind: changing one rate leaves every other kind's draws where they were
        return random.Random(f"{profile.seed}:{key}:{repeat}:{kind}")

    applied: list[str] = []
    calls = [{"name": c["name"], "arguments": c["arguments"]} for c in reply.tool_calls]
    text = reply.text

    rechecks = _recheck_candidates(rounds, calls, text, profile)
    if rechecks and profile.extra_lookup > 0:
        rng = stream("extra_lookup")
        if rng.random() < profile.extra_lookup:
            name, arguments = rng.choice(rechecks)
            # a re-check is the same call again: nothing else of the reply is said yet
            return dataclasses.replace(reply, text=None, tool_calls=[{"name": name, "arguments": arguments}]), \
                ["extra_lookup"]

    if profile.skip_optional > 0 and any(c["name"] not in profile.optional_tools for c in calls):
        rng = stream("skip_optional")
        kept = [c for c in calls if c["name"] not in profile.optional_tools or rng.random() >= profile.skip_optional]
        if len(kept) < len(calls):
            calls = kept
            applied.append("skip_optional")

    if profile.swap_calls > 0 and len(calls) >= 2:
        rng = stream("swap_calls")
        if rng.random() < profile.swap_calls:
            order = list(range(len(calls)))
            while order == sorted(order):
                rng.shuffle(order)
            calls = [calls[i] for i in order]
            applied.append("swap_calls")

    if profile.reword_arguments > 0 and calls:
        rng = stream("reword_arguments")
        fields = set(profile.free_text_fields)

        def reword_field(name: str | None, value: Any) -> Any:
            if name in fields and isinstance(value, str) and value and rng.random() < profile.reword_arguments:
                return reword(value, rng, _ARGUMENT_FRAMES)
            return value

        calls, changed = _map_arguments(calls, reword_field)
        if changed:
            applied.append("reword_arguments")

    if profile.number_format > 0 and calls:
        rng = stream("number_format")

        def respell(name: str | None, value: Any) -> Any:
            if _is_number(value) and rng.random() < profile.number_format:
                return rng.choice(_spellings(value))
            return value

        calls, changed = _map_arguments(calls, respell)
        if changed:
            applied.append("number_format")

    if profile.reword_text > 0 and text:
        rng = stream("reword_text")
        if rng.random() < profile.reword_text:
            text = reword(text, rng, _TEXT_FRAMES)
            applied.append("reword_text")

    if not applied:
        return reply, []
    return dataclasses.replace(reply, text=text, tool_calls=calls), applied


def _recheck_candidates(rounds: list[list[Call]], calls: list[dict[str, Any]], text: str | None,
                        profile: NoiseProfile) -> list[Call]:
    """Read-only calls of the last round a model could re-check before this reply, if any."""
    if not rounds or not profile.read_only_tools:
        return []
    acts = any(c["name"] not in profile.read_only_tools for c in calls)
    if not acts and not (text and not calls):
        return []  # the reply is itself a lookup (or empty): nothing to re-check before
    if len(rounds) >= 2 and _is_recheck(rounds[-1], rounds[-2], profile):
        return []  # one re-check is realistic; a chain of them is not
    return [c for c in rounds[-1] if c[0] in profile.read_only_tools]


def _is_recheck(this: list[Call], previous: list[Call], profile: NoiseProfile) -> bool:
    """Whether ``this`` round only repeats read-only calls ``previous`` made (same arguments)."""
    seen = {(name, _canonical(args)) for name, args in previous}
    return bool(this) and all(
        name in profile.read_only_tools and (name, _canonical(args)) in seen for name, args in this)


def _canonical(value: Any) -> Any:
    """A hashable form in which ``12``, ``12.0`` and ``"12"`` are one value."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_canonical(v) for v in value)
    return repr(value)


# -- matching a history the noise produced ------------------------------------------------------


def after_matches(after: Sequence[str], rounds: list[list[Call]], profile: NoiseProfile) -> bool:
    """Whether the history ``rounds`` is the scripted ``after`` as a noisy model would have made it.

    A round that only re-checks the round before it is left out (extra_lookup), the calls of one
    round may come in any order (swap_calls), and optional tools of ``after`` may be missing
    (skip_optional).
    """
    kept: list[list[Call]] = []
    for round_ in rounds:
        if kept and _is_recheck(round_, kept[-1], profile):
            continue
        kept.append(round_)
    i = 0
    for round_ in kept:
        needed = Counter(name for name, _ in round_)
        while needed:
            if i == len(after):
                return False
            name = after[i]
            i += 1
            if needed[name] > 0:
                needed[name] -= 1
                if not needed[name]:
                    del needed[name]
            elif name not in profile.optional_tools:
                return False
    rest = after[i:]
    return not rest or (bool(kept) and all(name in profile.optional_tools for name in rest))


# -- rewording and respelling -------------------------------------------------------------------

_SWAPS = (
    ("I've", "I have"), ("you'll", "you will"), ("they will", "they'll"), ("shortly", "soon"),
    ("contact you", "reach out to you"), ("Happy to help", "Glad to help"), ("business days", "working days"),
    ("on its way", "in transit"), ("Please", "Kindly"), ("expect it", "you should see it"),
    ("hacked", "compromised"), ("suspicious", "unusual"), ("unauthorized", "unauthorised"),
    ("logged in", "signed in"), ("password reset", "password-reset"), ("customer", "user"),
    ("refund", "reimbursement"), ("verify", "confirm"), ("check", "look up"), ("order", "purchase"),
)
"""Phrase pairs either side of which reads the same; each is swapped with probability 1/2."""



def _toggle_period(text: str) -> str:
    if text.endswith("."):
        return text[:-1]
    return text + "." if text[-1:].isalnum() else text


def _toggle_case(text: str) -> str:
    head = text[:1]
    return (head.lower() if head.isupper() else head.upper()) + text[1:]


_ARGUMENT_FRAMES: tuple[Callable[[str], str], ...] = (
    lambda t: t, _toggle_period, _toggle_case, "Customer says: {}".format, "Per the ticket: {}".format,
    lambda t: f"{t} (as reported)",
)
_TEXT_FRAMES: tuple[Callable[[str], str], ...] = (
    lambda t: t, "Sure! {}".format, "{} Let me know if there is anything else.".format,
    "Thanks for reaching out. {}".format, "{} Is there anything else I can do for you?".format,
)
"""Ways to say the same thing: the first frame leaves the text as it is."""


def reword(text: str, rng: random.Random, frames: Sequence[Callable[[str], str]]) -> str:
    """Another wording of ``text``: some phrases swapped and perhaps a frame around it; never ``text``."""
    out = text
    for a, b in _SWAPS:
        for old, new in ((a, b), (b, a)):
            pattern = r"(?<!\w)" + re.escape(old) + r"(?!\w)"
            if re.search(pattern, out) and rng.random() < 0.5:
                out = re.sub(pattern, new, out)
                break
    order = list(range(len(frames)))
    rng.shuffle(order)
    for i in order:
        framed = frames[i](out)
        if framed != text:
            return framed
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def _spellings(value: float) -> list[Any]:
    """The other spellings of ``value``: int, float, string."""
    short = str(int(value)) if float(value).is_integer() else repr(float(value))
    options: list[Any] = [float(value), short]
    if float(value).is_integer():
        options.insert(0, int(value))
    return [o for o in options if not (type(o) is type(value) and o == value)]


def _map_arguments(calls: list[dict[str, Any]], fn: Callable[[str | None, Any], Any]
                   ) -> tuple[list[dict[str, Any]], bool]:
    """``calls`` with ``fn(key, value)`` applied to every leaf of their arguments; whether any changed."""
    changed = False

    def walk(key: str | None, value: Any) -> Any:
        nonlocal changed
        if isinstance(value, dict):
            return {k: walk(k, v) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(key, v) for v in value]
        new = fn(key, value)
        if new is not value:
            changed = True
        return new

    out = [{"name": c["name"], "arguments": walk(None, c["arguments"])} for c in calls]
    return (out, True) if changed else (calls, False)
