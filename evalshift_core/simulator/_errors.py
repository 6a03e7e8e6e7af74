"""Error responses in each provider's own shape, shared by the online and the batch routes."""

from __future__ import annotations

from typing import Any

import orjson

_ERROR_TYPES = {400: ("invalid_request_error", "INVALID_ARGUMENT"), 404: ("not_found_error", "NOT_FOUND"), 429: ("rate_limit_error", "RESOURCE_EXHAUSTED"),
                500: ("api_error", "INTERNAL"), 503: ("overloaded_error", "UNAVAILABLE"),
                529: ("overloaded_error", "UNAVAILABLE")}


def error_response(provider: str, status: int, message: str) -> tuple[int, dict[str, str], bytes]:
    """An error body in the provider's own shape."""
    kind, google_status = _ERROR_TYPES.get(status, ("api_error", "UNKNOWN"))
    if provider == "anthropic":
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": message}}
    elif provider == "gemini":
        body = {"error": {"code": status, "message": message, "status": google_status}}
    else:
        body = {"error": {"message": message, "type": "invalid_request_error" if status < 429 else kind,
                          "code": "model_not_found" if status == 404 else kind}}
    return status, {"content-type": "application/json"}, orjson.dumps(body)
