"""The quick check in front of the credential scrub never lets a credential through."""

from __future__ import annotations

import pytest

from evalshift_sdk._scrub import _CREDENTIAL, might_hold_credentials, scrub

hypothesis = pytest.importorskip("hypothesis")
st = hypothesis.strategies

# The pieces the credential patterns look for, in any case, among arbitrary text.
_PIECES = st.sampled_from([
    "sk-", "bearer ", "key", "key=", "?key=", "api_key", "api-key", "x-api-key", "x-goog-api-key",
    "authorization", "proxy-authorization", ": ", "=", "'", '"', " ", "\ud800", "é",
    "abcdefghijklmnop1234", "AIzaSyA-1234567890",
    "authorization: s3cr3t", "api_key=abc123", "x-api-key: abc", "bearer abcdefgh12345678",
])
_CASED = st.builds(
    lambda piece, upper: "".join(c.upper() if u else c for c, u in zip(piece, upper + [False] * len(piece))),
    _PIECES, st.lists(st.booleans(), max_size=25),
)


@hypothesis.given(st.text(max_size=8), st.lists(_CASED, min_size=1, max_size=3), st.text(max_size=8))
def test_whatever_the_patterns_match_the_quick_check_flags(before, pieces, after):
    text = before + "".join(pieces) + after
    if _CREDENTIAL.search(text) is not None:
        assert might_hold_credentials(text)
    else:
        assert scrub(text) == text
