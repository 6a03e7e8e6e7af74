"""Planning and cost: every request of a run prepared before the first call, then priced.

Bad input fails while planning, before anything is sent; the pre-flight prices the plan online
and through the batch APIs, and ``max_cost`` refuses to start above its cap.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._exceptions import ReplayError
from .._models import Example, Tool
from ..store._suites import resolve_tools
from ._cache import ResponseCache
from ._messages import round_messages
from ._pricing import PriceTable, price_hint
from ._routing import ModelRef, settings_for
from .clients import BaseClient, PreparedRequest, make_client

ESTIMATED_OUTPUT_TOKENS = 256
"""Output tokens the pre-flight assumes per call (capped by the example's max tokens)."""

Sample = tuple[str, int]
"""``(role, repeat)``: one draw of one side on one example."""


@dataclass
class Unit:
    """One model's replay of one example: a request per round, all known before any call."""

    example: Example
    role: str
    model: ModelRef
    client: BaseClient
    gate_key: str
    requests: list[PreparedRequest]
    multi_round: bool
    repeat: int = 0
    """Which replay of the source this is (``source_repeats``); 0 for the target."""

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.example.id, self.role, self.repeat)

    @property
    def sample(self) -> str:
        """The response cache's name for this draw: each repeat and each side is a fresh sample."""
        return "" if (self.role, self.repeat) == ("source", 0) else f"{self.role}:{self.repeat}"


@dataclass
class Plan:
    """Every request of a run, with the admission limits of each client it goes through."""

    units: list[Unit] = field(default_factory=list)
    limits: dict[str, tuple[float | None, int | None]] = field(default_factory=dict)
    """Per client key: requests per minute and the concurrency cap, when set."""


def plan(
    examples: Iterable[Example],
    refs: Mapping[str, ModelRef],
    samples: list[Sample],
    *,
    base: str | os.PathLike[str],
    template: str,
    providers: Mapping[str, Mapping[str, Any]] | None,
    rate_limits: Mapping[str, float] | None,
    done: set[tuple[str, str, int]],
) -> Plan:
    """A unit per (example, sample) not in ``done``; one client per provider settings key."""
    out = Plan()
    clients: dict[str, BaseClient] = {}
    tool_cache: dict[str, list[Tool]] = {}
    limits = rate_limits or {}
    for example in examples:
        rounds = round_messages(example, template)
        ref_key = example.toolset_ref or ""
        if example.tools is None and ref_key in tool_cache:
            tools = tool_cache[ref_key]
        else:
            tools = resolve_tools(example, base)
            if example.tools is None:
                tool_cache[ref_key] = tools
        for role, repeat in samples:
            if (example.id, role, repeat) in done:
                continue
            ref = refs[role]
            key, settings = settings_for(ref, providers)
            if key not in clients:
                clients[key] = make_client(ref.provider, settings)
                rpm = limits.get(key, limits.get(ref.provider, settings.get("rpm")))
                out.limits[key] = (rpm, settings.get("concurrency", settings.get("max_concurrency")))
            client = clients[key]
            requests = [client.prepare(ref, msgs, tools, example.generation_config) for msgs in rounds]
            out.units.append(Unit(example, role, ref, client, key, requests, multi_round=len(rounds) > 1,
                                  repeat=repeat))
    return out


def _max_tokens(config: Mapping[str, Any]) -> int | None:
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens", "maxOutputTokens"):
        if isinstance(config.get(key), int):
            return int(config[key])
    return None


@dataclass
class ModelEstimate:
    """The pre-flight of one side: its model, the calls to make and what they are estimated at."""

    role: str
    model: str
    calls: int = 0
    """Model calls to send (cache hits excluded)."""
    cached_calls: int = 0
    """Requests the response cache would serve (free, nothing sent)."""
    input_tokens: int = 0
    """Estimated input tokens of the calls to send (a token per 4 characters of the request)."""
    output_tokens: int = 0
    """Estimated output tokens of the calls to send (``ESTIMATED_OUTPUT_TOKENS`` each, capped by max tokens)."""
    online_usd: float | None = 0.0
    """USD at list prices; None when the price table has no price for the model."""
    batch_usd: float | None = 0.0
    """USD through the provider's batch API; None when unpriced."""

    @property
    def priced(self) -> bool:
        return self.online_usd is not None

    def as_dict(self) -> dict[str, Any]:
        return {"role": self.role, "model": self.model, "calls": self.calls, "cached_calls": self.cached_calls,
                "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "online_usd": None if self.online_usd is None else round(self.online_usd, 6),
                "batch_usd": None if self.batch_usd is None else round(self.batch_usd, 6)}


@dataclass(frozen=True)
class Estimate:
    """The pre-flight: model calls to make (cache hits excluded) and their cost both ways."""

    online_usd: float
    batch_usd: float
    calls: int
    unpriced: frozenset[str]
    """Models the price table has no price for (their calls are not in the sums)."""
    sides: tuple[ModelEstimate, ...] = ()
    """Per side (source, then target), the same figures for its model alone."""

    @property
    def cached_calls(self) -> int:
        """Requests the response cache would serve."""
        return sum(side.cached_calls for side in self.sides)

    @classmethod
    def of(cls, units: list[Unit], prices: PriceTable, cache: ResponseCache | None) -> Estimate:
        online, batch, calls, unpriced = 0.0, 0.0, 0, set()
        sides: dict[str, ModelEstimate] = {}
        for unit in units:
            cap = _max_tokens(unit.example.generation_config)
            out_tokens = min(ESTIMATED_OUTPUT_TOKENS, cap) if cap else ESTIMATED_OUTPUT_TOKENS
            model = str(unit.model)
            side = sides.setdefault(unit.role, ModelEstimate(unit.role, model))
            for request in unit.requests:
                if cache is not None and cache.has(request, unit.sample):
                    side.cached_calls += 1
                    continue
                calls += 1
                in_tokens = request.size_chars() // 4
                side.calls += 1
                side.input_tokens += in_tokens
                side.output_tokens += out_tokens
                cost = prices.cost(model, in_tokens, out_tokens)
                if cost is None:
                    unpriced.add(model)
                    side.online_usd = side.batch_usd = None
                else:
                    batch_cost = prices.cost(model, in_tokens, out_tokens, batch=True) or 0.0
                    online += cost
                    batch += batch_cost
                    if side.online_usd is not None and side.batch_usd is not None:
                        side.online_usd += cost
                        side.batch_usd += batch_cost
        ordered = tuple(sorted(sides.values(), key=lambda s: s.role != "source"))
        return cls(online, batch, calls, frozenset(unpriced), ordered)

    def usd(self, *, batch: bool) -> float:
        """The estimate in the replay's own mode."""
        return self.batch_usd if batch else self.online_usd

    def check(self, max_cost: float | None, *, batch: bool, base: str | os.PathLike[str],
              allow_unpriced: bool = False) -> None:
        """ReplayError when ``max_cost`` is exceeded, or cannot be checked because a model has no
        price (its cost is unknown) and ``allow_unpriced`` does not say to hold only the priced
        models to the cap."""
        if max_cost is None:
            return
        if self.unpriced and not allow_unpriced:
            raise ReplayError(f"cannot check --max-cost: the cost of {', '.join(sorted(self.unpriced))} is unknown "
                              f"(no price); pass --allow-unpriced to start anyway with only the priced calls "
                              f"held to the cap, or {price_hint(self.unpriced, base)}; nothing was sent")
        estimate = self.usd(batch=batch)
        if estimate > max_cost:
            how = " through batch APIs" if batch else ""
            unknown = (f" (not counting {', '.join(sorted(self.unpriced))}, whose cost is unknown)"
                       if self.unpriced else "")
            raise ReplayError(f"estimated cost {usd(estimate)}{how} for {self.calls} model calls{unknown} is above "
                              f"--max-cost {usd(max_cost)}; nothing was sent")

    def line(self, *, batch: bool) -> str:
        """``pre-flight: 120 model calls, about $0.84 online ($0.42 through batch APIs with --batch)``."""
        return preflight_line(self.calls, self.online_usd, self.batch_usd, set(self.unpriced), batch_mode=batch)


def usd(value: float) -> str:
    """Dollars to the cent, or to 3 significant figures below a cent (so $0.0001 is not $0.00)."""
    return f"${value:.2f}" if value == 0 or value >= 0.01 else f"${value:.3g}"


def side_line(side: ModelEstimate) -> str:
    """``source openai:gpt-4o: 4 calls, about 1,200 input + 1,024 output tokens, about $0.0133 online
    ($0.00665 through batch APIs); 0 from the cache``."""
    if side.online_usd is None or side.batch_usd is None:
        cost = "cost unknown (no price)"
    else:
        cost = f"about {usd(side.online_usd)} online ({usd(side.batch_usd)} through batch APIs)"
    return (f"{side.role} {side.model}: {side.calls} calls, about {side.input_tokens:,} input + "
            f"{side.output_tokens:,} output tokens, {cost}; {side.cached_calls} from the cache")


def preflight_line(calls: int, online: float, batch: float, unpriced: set[str], *, batch_mode: bool) -> str:
    """``pre-flight: 120 model calls, about $0.84 online or $0.42 through batch APIs``."""
    if batch_mode:
        cost = f"about {usd(batch)} through batch APIs ({usd(online)} online)"
    else:
        cost = f"about {usd(online)} online ({usd(batch)} through batch APIs with --batch)"
    line = f"pre-flight: {calls} model calls, {cost}"
    if unpriced:
        line += f"; no price for {', '.join(sorted(unpriced))}"
    return line
