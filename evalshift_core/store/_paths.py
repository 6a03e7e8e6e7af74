"""The one rule for ids that become path components: suite names, prompt ids, run ids, toolset refs.

Everything a capture, suite, run or CLI flag names is untrusted: an id is checked here before it
is joined to a folder, and the joined path is checked to stay under that folder once resolved.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .._exceptions import UnsafeNameError
from .._shapes import toolset_ref_problem

MAX_NAME_CHARS = 128
"""Longest id accepted as a file or folder name, in characters."""
MAX_NAME_BYTES = 200
"""...and in UTF-8 bytes: room for the suffixes and temp-file names around it within 255."""

# Letters and digits of any script, then `_ . - + @ =` and inner spaces; no separators, no `:`
# (Windows drives and streams), no control characters or NUL. A leading dot would hide the file
# (and covers `.` and `..`); a trailing dot or space is stripped by Windows.
_NAME = re.compile(r"(?![.\s])[\w.+@= -]+(?<![.\s])")
# Device names Windows resolves anywhere, with or without an extension.
_RESERVED = re.compile(r"(?i)(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?")


def name_problem(value: object) -> str | None:
    """Why ``value`` cannot be used as a file or folder name, or None when it can."""
    if not isinstance(value, str):
        return f"must be a string, not {type(value).__name__}"
    if not value:
        return "must not be empty"
    if len(value) > MAX_NAME_CHARS or len(value.encode("utf-8", "surrogatepass")) > MAX_NAME_BYTES:
        return f"is longer than {MAX_NAME_CHARS} characters ({MAX_NAME_BYTES} UTF-8 bytes)"
    if "\x00" in value:
        return "contains a NUL character"
    if "/" in value or "\\" in value:
        return "contains a path separator"
    if value in (".", "..") or value.startswith("."):
        return "starts with '.'"
    if not _NAME.fullmatch(value):
        return ("may hold only letters, digits, spaces and _ . - + @ = (not first or last: "
                "a dot or a space)")
    if _RESERVED.fullmatch(value):
        return "is a reserved device name on Windows"
    return None


def is_safe_name(value: object) -> bool:
    return name_problem(value) is None


def check_name(value: object, *, what: str, field: str | None = None) -> str:
    """``value`` when it is a safe path component; else UnsafeNameError naming ``what``."""
    problem = name_problem(value)
    if problem is not None:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        raise UnsafeNameError(f"{what} {shown} {problem}", field=field)
    return value  # type: ignore[return-value]


def check_toolset_ref(value: object, *, field: str | None = "toolset_ref") -> str:
    problem = toolset_ref_problem(value)
    if problem is not None:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        raise UnsafeNameError(f"toolset_ref {shown} {problem}", field=field)
    return value  # type: ignore[return-value]


def toolset_filename(ref: str) -> str:
    """``<hex>.json`` for a checked toolset ref."""
    return check_toolset_ref(ref)[len("sha256:"):] + ".json"


def under(folder: str | os.PathLike[str], filename: str) -> Path:
    """``folder / filename``, refused unless it resolves inside ``folder`` (a symlink planted
    under that name, pointing elsewhere, is refused too)."""
    root = Path(folder)
    path = root / filename
    resolved_root = root.resolve()
    resolved = path.resolve()
    if not resolved.is_relative_to(resolved_root):
        raise UnsafeNameError(f"{path} resolves to {resolved}, outside {resolved_root}")
    return path
