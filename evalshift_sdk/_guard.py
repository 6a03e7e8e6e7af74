"""The one guard around the SDK's own bookkeeping.

A fault inside it is logged once per site and swallowed, so the host program never sees it.
Tests set ``EVALSHIFT_RAISE_INTERNAL=1`` so that a swallowed bug still fails CI.
"""

from __future__ import annotations

import logging
import os
import traceback

from ._scrub import scrub

logger = logging.getLogger("evalshift_sdk")
_seen: set[str] = set()


def _raise_internal() -> bool:
    return os.environ.get("EVALSHIFT_RAISE_INTERNAL") == "1"


class capture_internal_exceptions:  # noqa: N801 - used like a function: ``with capture_internal_exceptions(site):``
    """Run SDK bookkeeping; log (once per ``site``) and swallow whatever it raises.

    A class rather than a ``@contextmanager`` generator: it sits on every model call's hot
    path, several times, and a plain ``__enter__``/``__exit__`` pair is a few times cheaper.
    """

    __slots__ = ("site",)

    def __init__(self, site: str) -> None:
        self.site = site

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> bool:
        if exc is None or not isinstance(exc, Exception):
            return False
        if _raise_internal():
            return False
        site = self.site
        if site not in _seen:
            _seen.add(site)
            logger.warning(
                "evalshift_sdk: internal error in %s (capture skipped, host unaffected): %s",
                site,
                scrub("".join(traceback.format_exception_only(type(exc), exc)).strip()),
            )
        return True
