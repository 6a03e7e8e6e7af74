"""The editable price table behind the cost pre-flight and the per-call cost in raw.jsonl.

Shipped defaults (``data/prices.json``) < ``<base>/prices.json|yaml`` < ``$EVALSHIFT_PRICES`` < ``run(prices=)``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

from ._exceptions import ConfigError

PRICES_ENV = "EVALSHIFT_PRICES"


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

    def __init__(self, entries: Mapping[str, Price]) -> None:
        self.entries = dict(entries)

    def lookup(self, model: str) -> Price | None:
        if model in self.entries:
            return self.entries[model]
        best = None
        for key in self.entries:
            if model.startswith(key + "-") and (best is None or len(key) > len(best)):
                best = key
        return self.entries[best] if best is not None else None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float | None:
        price = self.lookup(model)
        return None if price is None else price.cost(input_tokens, output_tokens)

    def updated(self, raw: Mapping[str, Any], *, source: str) -> PriceTable:
        return PriceTable({**self.entries, **_parse(raw, source)})


def _parse(raw: Mapping[str, Any], source: str) -> dict[str, Price]:
    if not isinstance(raw, Mapping):
        raise ConfigError("a price table is a mapping of model -> {input, output}", file=source)
    out: dict[str, Price] = {}
    for model, entry in raw.items():
        if str(model).startswith("_"):
            continue  # comments
        if ":" not in str(model):
            raise ConfigError("price keys are provider:model (e.g. openai:gpt-4o)", file=source, field=str(model))
        try:
            out[str(model)] = Price(input=float(entry["input"]), output=float(entry["output"]))
        except (TypeError, KeyError, ValueError) as exc:
            raise ConfigError("needs numeric 'input' and 'output' (USD per 1M tokens)",
                              file=source, field=str(model)) from exc
    return out


def _read(path: Path) -> Mapping[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read price table: {exc.strerror}", file=str(path)) from exc
    from ._limits import load_json, load_yaml

    if path.suffix in (".yaml", ".yml"):
        return load_yaml(text, file=str(path), compose=False)[0] or {}
    return load_json(text, file=str(path), error=ConfigError)


def default_prices() -> PriceTable:
    raw = orjson.loads(resources.files("evalshift_core").joinpath("data/prices.json").read_bytes())
    return PriceTable(_parse(raw, "evalshift_core/data/prices.json"))


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
