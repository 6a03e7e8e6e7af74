"""The one guard around the SDK's own bookkeeping.

A fault inside it is logged once per site and swallowed, so the host program never sees it.
Tests set ``EVALSHIFT_RAISE_INTERNAL=1`` so that a swallowed bug still fails CI.
"""

from __future__ import annotations

import logging
import os
import traceback
from collections.abc import Iterator
from contextlib import contextmanager

logger = logging.getLogger("evalshift_sdk")
_seen: set[str] = set()


def _raise_internal() -> bool:
    return os.environ.get("EVALSHIFT_RAISE_INTERNAL") == "1"


@contextmanager
def capture_internal_exceptions(site: str) -> Iterator[None]:
    """Run SDK bookkeeping; log (once per ``site``) and swallow whatever it raises."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - the whole point is to catch everything
        if _raise_internal():
            raise
        if site not in _seen:
            _seen.add(site)
            logger.warning(
                "evalshift_sdk: internal error in %s (capture skipped, host unaffected): %s\n%s",
                site,
                exc,
                "".join(traceback.format_exception_only(type(exc), exc)).strip(),
            )
