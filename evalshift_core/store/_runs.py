"""Run folders: ``<base>/runs/<run-id>/`` with its manifest (``run.json``), examples and Call rows.

Every reader checks ``schema_version`` and refuses a newer one by name; a run id becomes a folder
name only through the one path rule.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .._exceptions import InputError, RunNotFoundError
from .._io import iter_models, read_json_object
from .._models import SCHEMA_VERSION, Call, Example
from ._paths import check_name, under

RUN_FILE = "run.json"
EXAMPLES_FILE = "examples.jsonl"
RAW_FILE = "raw.jsonl"


class Manifest(BaseModel):
    """``run.json``: what a run compared, how it was replayed and what it cost."""

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
    finished: str | None = None
    """When its replay finished."""
    status: Literal["running", "complete"] = "running"
    """``running`` until every row is written."""
    resumed: list[str] = Field(default_factory=list)
    """When it was resumed, if ever."""
    concurrency: int | None = None
    """Model calls in flight at once."""
    source_repeats: int | None = None
    """Replays of the source per example, when more than one."""
    replay: Literal["online", "batch"] | None = None
    """``batch`` when the requests went through the providers' batch APIs."""
    batches: list[dict[str, Any]] = Field(default_factory=list)
    """The batches submitted (id, provider, state, counts) on a batch replay."""
    planned_model_calls: int = 0
    """Model calls the pre-flight planned (cache hits excluded)."""
    estimated_cost_usd: float = 0.0
    """The pre-flight estimate in the replay's own mode."""
    estimated_online_cost_usd: float | None = None
    """The pre-flight estimate at online prices."""
    estimated_batch_cost_usd: float | None = None
    """The pre-flight estimate at batch prices."""
    unpriced_models: list[str] = Field(default_factory=list)
    """Models the price table had no price for."""
    cost_usd: float = 0.0
    """Cost of the responses in raw.jsonl."""
    errors: int = 0
    """Rows whose model call failed."""
    cached_calls: int = 0
    """Responses that came from the response cache."""
    model_calls: int = 0
    """Responses in all, fresh or cached."""


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
    version = data.get("schema_version", SCHEMA_VERSION)
    if isinstance(version, int) and version > SCHEMA_VERSION:
        raise InputError(f"written by a newer EvalShift (schema {version}; this one reads up to {SCHEMA_VERSION}): "
                         "upgrade evalshift", file=str(path), field="schema_version")
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise InputError(err["msg"], file=str(path), field=".".join(str(p) for p in err["loc"]) or None) from exc


def write_manifest(run_dir: str | os.PathLike[str], manifest: Manifest) -> None:
    from .._io import atomic_write_json

    atomic_write_json(Path(run_dir) / RUN_FILE, manifest.model_dump(mode="json", exclude_none=True))


def load_run(base: str | os.PathLike[str], run_id: str) -> tuple[dict[str, Any], list[Example], list[Call]]:
    """Read a run's manifest (as written, checked against :class:`Manifest`), examples and Call
    rows back (a progress bar when it takes a while)."""
    from .._progress import count_lines, counted, progress_bar

    out = run_dir_for(base, run_id)
    if not (out / RUN_FILE).exists():
        raise RunNotFoundError(f"no run {run_id!r} under {Path(base) / 'runs'}")
    load_manifest(out)
    manifest = read_json_object(out / RUN_FILE, what="run manifest")
    files = [out / EXAMPLES_FILE, out / RAW_FILE]
    with progress_bar(sum(count_lines(f) for f in files if f.exists()), f"load {run_id}") as bar:
        examples = [e for _, e in counted(iter_models(files[0], Example, what="example"), bar)]
        calls = [c for _, c in counted(iter_models(files[1], Call, what="Call row"), bar)]
    return manifest, examples, calls
