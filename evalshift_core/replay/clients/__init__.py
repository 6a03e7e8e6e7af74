"""Model clients over the official provider SDKs, speaking the semconv message model.

One module per provider; ``make_client`` picks one by provider name and ``providers:`` settings.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._exceptions import ReplayError
from ._anthropic import AnthropicClient
from ._base import (
    BaseClient,
    ClientSettings,
    ModelCallError,
    ModelResponse,
    PreparedRequest,
    classify_error,
)
from ._gemini import GeminiClient
from ._openai import OpenAIChatClient, OpenAIResponsesClient, to_openai_messages, to_openai_tools

CLIENTS: dict[str, type[BaseClient]] = {
    "openai": OpenAIChatClient,
    "openai/responses": OpenAIResponsesClient,
    "anthropic": AnthropicClient,
    "gemini": GeminiClient,
}


def make_client(provider: str, settings: Mapping[str, Any] | None = None) -> BaseClient:
    """The replay client for ``provider``; ``settings`` is its ``providers:`` entry.

    Keys: ``api_key`` or ``api_key_env``, ``base_url``, ``timeout`` (s), ``api`` (OpenAI:
    ``chat`` or ``responses``); anything else goes to the SDK client's constructor. Without
    them the SDKs' own environment variables apply (``OPENAI_API_KEY``/``OPENAI_BASE_URL``,
    ``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL``, ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``/
    ``GOOGLE_GEMINI_BASE_URL``).
    """
    parsed = ClientSettings.from_mapping(settings)
    key = provider
    if provider == "openai" and parsed.api not in (None, "chat"):
        if parsed.api != "responses":
            raise ReplayError(f"providers.openai.api must be 'chat' or 'responses', not {parsed.api!r}")
        key = "openai/responses"
    cls = CLIENTS.get(key)
    if cls is None:
        raise ReplayError(f"no replay client for provider {provider!r}")
    return cls(parsed)


__all__ = [
    "CLIENTS",
    "AnthropicClient",
    "BaseClient",
    "ClientSettings",
    "GeminiClient",
    "ModelCallError",
    "ModelResponse",
    "OpenAIChatClient",
    "OpenAIResponsesClient",
    "PreparedRequest",
    "classify_error",
    "make_client",
    "to_openai_messages",
    "to_openai_tools",
]
