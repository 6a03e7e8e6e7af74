"""Model names: ``provider:NAME`` or a bare name inferred from its prefix.

Also picks a model's ``providers:`` settings: a ``provider:NAME`` entry overrides the provider's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .._exceptions import ReplayError

PROVIDERS = ("openai", "anthropic", "gemini")
_PREFIXES = (
    (("gpt-", "o1-", "o3-", "o4-", "o1", "o3", "o4", "chatgpt-"), "openai"),
    (("claude-",), "anthropic"),
    (("gemini-",), "gemini"),
)


@dataclass(frozen=True)
class ModelRef:
    provider: str
    name: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.name}"


def route(model: str) -> ModelRef:
    """``openai:gpt-4o`` → (openai, gpt-4o); ``claude-sonnet-4-6`` → (anthropic, ...)."""
    provider, sep, name = model.partition(":")
    if sep and provider in PROVIDERS:
        if not name:
            raise ReplayError(f"model {model!r} has a provider but no name")
        return ModelRef(provider, name)
    for prefixes, provider in _PREFIXES:
        if model.startswith(prefixes):
            return ModelRef(provider, model)
    raise ReplayError(
        f"cannot tell which provider serves {model!r}; write it as openai:NAME, anthropic:NAME or gemini:NAME"
    )


def settings_for(ref: ModelRef, providers: Mapping[str, Mapping[str, Any]] | None) -> tuple[str, dict[str, Any]]:
    """``(key, settings)`` for a model: ``providers[provider]`` merged with ``providers["provider:NAME"]``,
    so one OpenAI-compatible server can serve one model while the rest go to OpenAI."""
    providers = providers or {}
    merged = dict(providers.get(ref.provider) or {})
    specific = providers.get(str(ref))
    if specific:
        merged.update(specific)
        return str(ref), merged
    return ref.provider, merged
