"""Model names: ``provider:NAME`` or a bare name inferred from its prefix."""

from __future__ import annotations

from dataclasses import dataclass

from ._exceptions import ReplayError

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
