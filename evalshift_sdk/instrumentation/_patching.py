"""Patching provider methods with wrapt, and the version gate, shared by every instrumentation."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import wrapt

Patched = list[tuple[Any, str, Any]]


def require_version(package: str, version: str, minimum: tuple[int, ...]) -> None:
    """Refuse a release older than ``minimum`` (compared on major.minor)."""
    from . import DidNotEnable

    found = tuple(int(p) for p in version.split(".")[:2] if p.isdigit())
    if found < minimum:
        raise DidNotEnable(f"{package} {found} is older than the oldest supported {minimum}")


def patch(targets: Iterable[tuple[Any, str, Any]], patched: Patched) -> None:
    """Wrap each ``(owner, attr, wrapper)`` once; remember the original for :func:`unpatch`."""
    for owner, attr, wrapper in targets:
        original = owner.__dict__.get(attr)
        if original is None or isinstance(original, wrapt.FunctionWrapper):
            continue
        wrapt.wrap_function_wrapper(owner, attr, wrapper)
        patched.append((owner, attr, original))


def unpatch(patched: Patched) -> None:
    """Restore every original, newest first."""
    while patched:
        owner, attr, original = patched.pop()
        setattr(owner, attr, original)
