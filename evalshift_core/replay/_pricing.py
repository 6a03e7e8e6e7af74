"""The editable price table behind the cost pre-flight and the per-call cost in raw.jsonl.

Shipped defaults (``data/prices.json``) < ``<base>/prices.json|yaml`` < ``$EVALSHIFT_PRICES`` < ``run(prices=)``.
``batch_discount`` maps a provider to the fraction its batch API takes off the list price.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from .._exceptions import ConfigError

PRICES_ENV = "EVALSHIFT_PRICES"
BATCH_DISCOUNT_KEY = "batch_discount"


@dataclass(frozen=True)
class Price:
    """USD per one million tokens."""

    input: float
    output: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.input + output_tokens * self.output) / 1_000_000


class PriceTable:
    """Model → Price; a key matches a model exactly or as the longest ``-``-bounded prefix,
    so ``openai:gpt-4o`` prices ``openai:gpt-4o-2024-08-06`` but not ``openai:gpt-4o-mini``
    when that has its own entry."""

    def __init__(self, entries: Mapping[str, Price], batch_discounts: Mapping[str, float] | None = None) -> None:
        self.entries = dict(entries)
        self.batch_discounts = dict(batch_discounts or {})
        """Provider -> fraction off the list price through its batch API (0.5: half price)."""

    def lookup(self, model: str) -> Price | None:
        if model in self.entries:
            return self.entries[model]
        best = None
        for key in self.entries:
            if model.startswith(key + "-") and (best is None or len(key) > len(best)):
                best = key
        return self.entries[best] if best is not None else None

    def cost(self, model: str, input_tokens: int, output_tokens: int, *, batch: bool = False) -> float | None:
        """USD for one call; ``batch=True`` prices it through the provider's batch API."""
        price = self.lookup(model)
        if price is None:
            return None
        cost = price.cost(input_tokens, output_tokens)
        return cost * (1.0 - self.batch_discounts.get(model.partition(":")[0], 0.0)) if batch else cost

    def updated(self, raw: Mapping[str, Any], *, source: str) -> PriceTable:
        return PriceTable({**self.entries, **_parse(raw, source)},
                          {**self.batch_discounts, **_parse_discounts(raw, source)})


def _parse(raw: Mapping[str, Any], source: str) -> dict[str, Price]:
    if not isinstance(raw, Mapping):
        raise ConfigError("a price table is a mapping of model -> {input, output}", file=source)
    out: dict[str, Price] = {}
    for model, entry in raw.items():
        if str(model).startswith("_") or model == BATCH_DISCOUNT_KEY:
            continue  # comments; the batch discounts are read on their own
        if ":" not in str(model):
            raise ConfigError("price keys are provider:model (e.g. openai:gpt-4o)", file=source, field=str(model))
        try:
            out[str(model)] = Price(input=float(entry["input"]), output=float(entry["output"]))
        except (TypeError, KeyError, ValueError) as exc:
            raise ConfigError("needs numeric 'input' and 'output' (USD per 1M tokens)",
                              file=source, field=str(model)) from exc
    return out


def _parse_discounts(raw: Mapping[str, Any], source: str) -> dict[str, float]:
    """``batch_discount: {provider: fraction off}``, each a number in [0, 1)."""
    entry = raw.get(BATCH_DISCOUNT_KEY)
    if entry is None:
        return {}
    if not isinstance(entry, Mapping):
        raise ConfigError("batch_discount maps a provider to the fraction off (e.g. {\"openai\": 0.5})",
                          file=source, field=BATCH_DISCOUNT_KEY)
    out: dict[str, float] = {}
    for provider, value in entry.items():
        field = f"{BATCH_DISCOUNT_KEY}.{provider}"
        if str(provider).startswith("_"):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
            raise ConfigError("a batch discount is a fraction off the list price, at least 0 and below 1",
                              file=source, field=field)
        out[str(provider)] = float(value)
    return out


def _read(path: Path) -> Mapping[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read price table: {exc.strerror}", file=str(path)) from exc
    from .._limits import load_json, load_yaml

    if path.suffix in (".yaml", ".yml"):
        return load_yaml(text, file=str(path), compose=False)[0] or {}
    return load_json(text, file=str(path), error=ConfigError)


def price_hint(models: Iterable[str], base: str | os.PathLike[str]) -> str:
    """Where and how to price ``models``: the override file under ``base`` and its entry."""
    entries = ", ".join(f'"{m}": {{"input": USD, "output": USD}}' for m in sorted(models))
    return (f"add {{{entries}}} (USD per 1M tokens; 0 for a local server) to {Path(base) / 'prices.json'} "
            f"or to a file named by ${PRICES_ENV}")


def unpriced_warning(models: Iterable[str], base: str | os.PathLike[str]) -> str:
    """``warning: no price for openai:local: its cost is unknown and left out of the estimate; add ...``."""
    names = ", ".join(sorted(models))
    return f"warning: no price for {names}: its cost is unknown and left out of the estimate; {price_hint(models, base)}"


def default_prices() -> PriceTable:
    raw = orjson.loads(resources.files("evalshift_core.replay").joinpath("data/prices.json").read_bytes())
    source = "evalshift_core/replay/data/prices.json"
    return PriceTable(_parse(raw, source), _parse_discounts(raw, source))


def load_prices(base: str | os.PathLike[str] | None = None,
                override: Mapping[str, Any] | str | os.PathLike[str] | None = None) -> PriceTable:
    """The effective price table for a run under ``base``."""
    table = default_prices()
    candidates: list[Path] = []
    if base is not None:
        candidates += [Path(base) / "prices.json", Path(base) / "prices.yaml"]
    env = os.environ.get(PRICES_ENV)
    if env:
        candidates.append(Path(env))
    for path in candidates:
        if path.exists() or str(path) == env:
            table = table.updated(_read(path), source=str(path))
    if isinstance(override, Mapping):
        table = table.updated(override, source="prices=")
    elif override is not None:
        table = table.updated(_read(Path(override)), source=str(override))
    return table
