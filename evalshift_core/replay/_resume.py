"""Resume: an interrupted run keeps the rows it wrote and replays only the missing ones.

A run is resumed only with the models and examples it was started on; its raw.jsonl may end in
a line torn by a crash, which is cut off (nothing else is lost).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .._exceptions import ReplayError
from .._io import atomic_write_jsonl, iter_models
from .._models import SCHEMA_VERSION, Call, Example
from ..store._runs import RAW_FILE, Manifest, iter_run_examples, load_manifest
from ._routing import ModelRef


@dataclass
class Resumed:
    """A run found in its folder: its manifest and the rows to keep."""

    manifest: Manifest
    rows: list[Call]

    @property
    def done(self) -> set[tuple[str, str, int]]:
        """``(example, role, repeat)`` of the rows kept: not replayed again."""
        return {(c.example_id, c.role, c.repeat or 0) for c in self.rows}


def read_rows(raw: Path, *, read_only: bool = False) -> list[Call]:
    """Rows of raw.jsonl; a torn last line (a crash mid-write) is cut off, nothing else lost.

    ``read_only`` (a dry run) leaves the file as it is and passes over a line it cannot read."""
    if not raw.exists():
        return []
    if read_only:
        return [row for _, row in iter_models(raw, Call, what="Call row", schema_version=SCHEMA_VERSION,
                                              on_bad_line=lambda _error: None)]
    data = raw.read_bytes()
    end = data.rfind(b"\n") + 1
    if end < len(data):
        with open(raw, "r+b") as fh:
            fh.truncate(end)
        data = data[:end]
    return [row for _, row in iter_models(raw, Call, what="Call row", schema_version=SCHEMA_VERSION)]


def resume(run_dir: Path, run_id: str, refs: dict[str, ModelRef], examples: Sequence[Example], *,
           retry_errors: bool, read_only: bool = False) -> Resumed:
    """Check that ``run_dir`` replays the same models on the same examples; read its rows.

    ``retry_errors`` drops the rows that failed (``round k/n: ...``) so they are replayed.
    ``read_only`` (a dry run) writes nothing: the rows are read and filtered in memory only.
    """
    manifest = load_manifest(run_dir)
    if (manifest.source_model, manifest.target_model) != (str(refs["source"]), str(refs["target"])):
        raise ReplayError(f"run {run_id} compared {manifest.source_model} -> {manifest.target_model}; "
                          f"cannot resume it with {refs['source']} -> {refs['target']}")
    stored = [e.id for _, e in iter_run_examples(run_dir)]
    if stored != [e.id for e in examples]:
        raise ReplayError(f"run {run_id} was started on a different set of examples; start a new run instead")
    rows = read_rows(run_dir / RAW_FILE, read_only=read_only)
    if retry_errors and any(c.error for c in rows):
        rows = [c for c in rows if not c.error]
        if read_only:
            return Resumed(manifest, rows)
        # rewritten whole and atomically: a crash here leaves the old file, never half of one
        atomic_write_jsonl(run_dir / RAW_FILE, (c.model_dump(mode="json", exclude_none=True) for c in rows))
    return Resumed(manifest, rows)
