"""Run folders: ``<base>/runs/<run-id>/`` with its manifest (``run.json``), examples and Call rows.

Every reader checks ``schema_version`` and refuses a newer one by name; a run id becomes a folder
name only through the one path rule.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._exceptions import RunNotFoundError
from .._io import (
    atomic_write_json,
    check_schema_version,
    iter_models,
    read_json_object,
    validation_error,
)
from .._models import SCHEMA_VERSION, Call, Example
from ._paths import check_name, under

RUN_FILE = "run.json"
EXAMPLES_FILE = "examples.jsonl"
RAW_FILE = "raw.jsonl"


class Manifest(BaseModel):
    """``run.json``: what a run compared, how it was replayed and what it cost.

    Only the keys a run has set are written (a key the file lacks stays absent), in the order of
    the fields below, so the file reads the same as a run fills it in. A manifest also reads like
    that file, key by key: ``manifest["cost_usd"]``, ``"replay" in manifest`` and
    ``dict(manifest)`` see exactly what run.json holds.
    """

    model_config = ConfigDict(extra="allow")

    schema_version: int = SCHEMA_VERSION
    """Format version of the run folder; a reader refuses a newer one."""
    run_id: str
    """The run's id (its folder name)."""
    suite: str | None = None
    """The suite replayed, when it had a name."""
    source_model: str | None = None
    """The source model, ``provider:name``."""
    target_model: str | None = None
    """The target model, ``provider:name``."""
    examples: int = 0
    """Examples in the run."""
    created: str | None = None
    """When the run started (UTC, ISO 8601)."""
    status: Literal["running", "complete"] = "running"
    """``running`` until every row is written."""
    concurrency: int | None = None
    """Model calls in flight at once."""
    estimated_cost_usd: float = 0.0
    """The pre-flight estimate in the replay's own mode."""
    estimated_online_cost_usd: float | None = None
    """The pre-flight estimate at online prices."""
    estimated_batch_cost_usd: float | None = None
    """The pre-flight estimate at batch prices."""
    planned_model_calls: int = 0
    """Model calls the pre-flight planned (cache hits excluded)."""
    unpriced_models: list[str] = Field(default_factory=list)
    """Models the price table had no price for."""
    replay: Literal["online", "batch"] | None = None
    """``batch`` when the requests went through the providers' batch APIs."""
    source_repeats: int | None = None
    """Replays of the source per example, when more than one."""
    resumed: list[str] = Field(default_factory=list)
    """When it was resumed, if ever."""
    batches: list[dict[str, Any]] = Field(default_factory=list)
    """The batches submitted (id, provider, state, counts) on a batch replay."""
    finished: str | None = None
    """When its replay finished."""
    cost_usd: float = 0.0
    """Cost of the responses in raw.jsonl."""
    errors: int = 0
    """Rows whose model call failed."""
    cached_calls: int | None = None
    """Responses that came from the response cache; None until the replay finishes."""
    model_calls: int | None = None
    """Responses in all, fresh or cached; None until the replay finishes."""

    def to_json(self) -> dict[str, Any]:
        """What run.json holds: the keys this run has set (as read, or since it was made)."""
        return self.model_dump(mode="json", exclude_unset=True)

    def keys(self) -> list[str]:
        return list(self.to_json())

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def __contains__(self, key: object) -> bool:
        return key in self.to_json()

    def get(self, key: str, default: Any = None) -> Any:
        """``manifest.get("cost_usd")``, as on the dict :func:`load_run` returned before."""
        return self.to_json().get(key, default)


def new_run_id() -> str:
    """A run id: the start time to the second and six random hex digits."""
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def run_dir_for(base: str | os.PathLike[str], run_id: str) -> Path:
    """``<base>/runs/<run_id>``, the id checked by the one path rule."""
    return under(Path(base) / "runs", check_name(run_id, what="run id", field="run_id"))


def load_manifest(run_dir: str | os.PathLike[str]) -> Manifest:
    """Read ``run.json``; a newer schema or a malformed field is an InputError naming it."""
    path = Path(run_dir) / RUN_FILE
    data = read_json_object(path, what="run manifest")
    check_schema_version(data.get("schema_version", SCHEMA_VERSION), SCHEMA_VERSION, file=str(path))
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        raise validation_error(exc, file=str(path)) from exc


def write_manifest(run_dir: str | os.PathLike[str], manifest: Manifest) -> None:
    """Write ``run.json`` atomically: ``schema_version`` first, then the keys the run has set."""
    atomic_write_json(Path(run_dir) / RUN_FILE, {"schema_version": manifest.schema_version, **manifest.to_json()})


def iter_run_examples(run_dir: str | os.PathLike[str]) -> Iterator[tuple[int, Example]]:
    """``(line, example)`` of a run's ``examples.jsonl``: the examples it was started on, tools resolved."""
    return iter_models(Path(run_dir) / EXAMPLES_FILE, Example, what="example", schema_version=SCHEMA_VERSION)


def iter_run_calls(run_dir: str | os.PathLike[str]) -> Iterator[tuple[int, Call]]:
    """``(line, Call row)`` of a run's ``raw.jsonl``."""
    return iter_models(Path(run_dir) / RAW_FILE, Call, what="Call row", schema_version=SCHEMA_VERSION)


def existing_run_dir(base: str | os.PathLike[str], run_id: str) -> Path:
    """The folder of a run that exists (its run.json written); else RunNotFoundError."""
    out = run_dir_for(base, run_id)
    if not (out / RUN_FILE).exists():
        raise RunNotFoundError(f"no run {run_id!r} under {Path(base) / 'runs'}")
    return out


def load_run(base: str | os.PathLike[str], run_id: str) -> tuple[Manifest, list[Example], list[Call]]:
    """Read a run's manifest, examples and Call rows back (a progress bar when it takes a while)."""
    from .._progress import count_lines, counted, progress_bar

    out = existing_run_dir(base, run_id)
    manifest = load_manifest(out)
    files = [out / EXAMPLES_FILE, out / RAW_FILE]
    with progress_bar(sum(count_lines(f) for f in files if f.exists()), f"load {run_id}") as bar:
        examples = [e for _, e in counted(iter_run_examples(out), bar)]
        calls = [c for _, c in counted(iter_run_calls(out), bar)]
    return manifest, examples, calls
