"""Lazy registry of provider instrumentations, keyed by the name users pass to ``init``.

A provider that is not installed is skipped with one debug line; one the user asked for by
name must patch, or ``init`` raises.
"""

from __future__ import annotations

import importlib
import logging
import threading
from collections.abc import Iterable

logger = logging.getLogger("evalshift_sdk")

# name -> (module of ours, the provider package that must be importable)
REGISTRY: dict[str, tuple[str, str]] = {
    "openai": ("evalshift_sdk.instrumentation.openai", "openai"),
    "anthropic": ("evalshift_sdk.instrumentation.anthropic", "anthropic"),
    "google-genai": ("evalshift_sdk.instrumentation.google_genai", "google.genai"),
}


class DidNotEnable(Exception):
    """A provider SDK is missing or of a version we do not support."""


_installed: set[str] = set()
_lock = threading.Lock()


def instrument(names: Iterable[str] | None = None) -> list[str]:
    """Patch the named providers (default: every installed one); return what got patched."""
    explicit = names is not None
    wanted = list(names) if names is not None else list(REGISTRY)
    done = []
    with _lock:
        for name in wanted:
            if name not in REGISTRY:
                raise ValueError(f"unknown provider {name!r}; known: {', '.join(sorted(REGISTRY))}")
            if name in _installed:
                done.append(name)
                continue
            module_name, package = REGISTRY[name]
            try:
                importlib.import_module(package)
                module = importlib.import_module(module_name)
                module.instrument()
            except (ImportError, DidNotEnable) as exc:
                if explicit:
                    raise DidNotEnable(f"cannot instrument {name}: {exc}") from exc
                logger.debug("evalshift_sdk: skipping %s: %s", name, exc)
                continue
            _installed.add(name)
            done.append(name)
    return done


def uninstrument() -> None:
    """Restore every patched provider; a no-op for providers never patched."""
    with _lock:
        for name in list(_installed):
            module = importlib.import_module(REGISTRY[name][0])
            module.uninstrument()
            _installed.discard(name)
