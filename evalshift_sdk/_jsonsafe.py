"""Turn arbitrary host values into JSON text without ever raising on the host's data."""

from __future__ import annotations

from typing import Any

import orjson


def _fallback(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return to_dict()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return _safe_repr(value)


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 - a host object's __repr__ may raise anything
        return f"<unrepresentable {type(value).__qualname__}>"


def dumps(value: Any) -> str:
    """JSON text for ``value``; unserialisable parts become their ``repr`` (or a placeholder)."""
    try:
        # Nearly every value is plain JSON data: orjson's fast path first (OPT_NON_STR_KEYS
        # alone makes it about 1.7x slower), the tolerant encoding only when that refuses.
        return orjson.dumps(value).decode()
    except TypeError:
        pass
    try:
        return orjson.dumps(value, default=_fallback, option=orjson.OPT_NON_STR_KEYS).decode()
    except Exception:  # noqa: BLE001 - model_dump/to_dict/repr of host objects may raise
        return orjson.dumps(_safe_repr(value)).decode()
