"""Credentials stripped from any text the SDK records: API keys, bearer tokens, key headers.

A provider's 401 quotes the key it was given; an SDK error may carry its request's headers or a
``?key=`` URL. Whatever else ``redact=`` does, these never leave the process. The patterns are
tight, so ordinary text ("sort key=name", "the bearer of bad news") is left as it was.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

_CREDENTIAL = re.compile(
    # OpenAI and Anthropic keys: sk-..., sk-proj-..., sk-ant-api03-...
    r"(?P<sk>\bsk-)[A-Za-z0-9][A-Za-z0-9_\-]{15,}"
    # an Authorization header's value, or a bare bearer token
    r"|(?P<bearer>\b[Bb]earer\s+)[A-Za-z0-9\-._~+/]*[0-9\-._~+/][A-Za-z0-9\-._~+/]*=*"
    # key headers and settings written out: x-api-key: ..., "authorization": "...", api_key=...
    r"|(?P<header>(?i:\b(?:x-api-key|x-goog-api-key|api[-_]?key|authorization|proxy-authorization))"
    r"[\"']?\s*[:=]\s*[\"']?)(?:[Bb]earer\s+)?[^\s\"',;&}]+"
    # a key in a query string (Gemini's ?key=AIza...)
    r"|(?P<query>[?&;]key=)[^\s\"'&#]+"
    # key=<something long enough to be a secret>
    r"|(?P<kv>(?<![\w-])key=)[A-Za-z0-9_\-.]{16,}"
)


def _keep_prefix(match: re.Match[str]) -> str:
    prefix = next(p for p in match.group("sk", "bearer", "header", "query", "kv") if p is not None)
    return prefix + REDACTED


def might_hold_credentials(text: str) -> bool:
    """False when ``text`` cannot hold anything :func:`scrub` would change: four C-speed
    substring tests on its bytes with ASCII letters lowered (the header names match in any
    case, ``AuThOrIzAtIoN`` too), so the export thread can skip the regex for nearly every
    span. Lowering bytes is a fraction of what eight case-by-case searches of the text cost."""
    lowered = text.encode("utf-8", "surrogatepass").lower()
    return b"sk-" in lowered or b"earer" in lowered or b"key" in lowered or b"uthorization" in lowered


def scrub(text: str) -> str:
    """``text`` with every credential replaced by ``[REDACTED]`` (its label kept)."""
    if not might_hold_credentials(text):
        return text
    return _CREDENTIAL.sub(_keep_prefix, text)
