"""``capture sync``: captures in, golden suites out, idempotently."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from ._captures import load_captures
from ._models import Example
from ._promote import RoundsMode, promote
from ._suite import DEFAULT_BASE, copy_toolset, load_suite, save_suite, suite_path


@dataclass
class SyncResult:
    """What a sync did."""

    suites: dict[str, Path] = field(default_factory=dict)
    added: int = 0
    unchanged: int = 0
    warnings: list[str] = field(default_factory=list)


def sync(
    capture_dir: str | os.PathLike[str] = ".evalshift/captures",
    *,
    base: str | os.PathLike[str] = DEFAULT_BASE,
    suite_name: str | None = None,
    rounds: RoundsMode = "first",
    names_only: bool = False,
) -> SyncResult:
    """Promote every capture under ``capture_dir`` into ``<base>/suites/<name>.jsonl``.

    The suite is named ``suite_name``, else after each capture's prompt id. Examples already in
    the suite are kept as they are, so a second sync changes nothing.
    """
    result = SyncResult()
    captures = load_captures(capture_dir)
    grouped: dict[str, list[Example]] = {}
    for promotion in promote(captures, rounds=rounds, names_only=names_only):
        example = promotion.example
        result.warnings.extend(promotion.warnings)
        if example.toolset_ref and not copy_toolset(capture_dir, base, example.toolset_ref):
            result.warnings.append(f"{example.id}: toolset sidecar {example.toolset_ref} not found in {capture_dir}")
        grouped.setdefault(suite_name or example.prompt_id or "default", []).append(example)
    for name, new in grouped.items():
        path = suite_path(base, name)
        existing = load_suite(path) if path.exists() else []
        known = {e.id for e in existing}
        added = [e for e in new if e.id not in known]
        result.unchanged += len(new) - len(added)
        result.added += len(added)
        if added or not path.exists():
            save_suite(path, existing + added)
        result.suites[name] = path
    return result
