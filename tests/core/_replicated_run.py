"""A run of any size made from the demo's: the 32 examples of ``tests/fixtures/demo-run`` and
their source and target rows, drawn with a seeded generator and given ids of their own.

The outputs-digest test evaluates a 10k-example one; benchmarks/evaluate_command.py times
``evalshift evaluate`` on a 100k-example one.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import orjson

from evalshift_core.store._rows import record_written

DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "demo-run"
DEMO_RUN_ID = "20261201-055914-69db6f"


def copy_demo_run(base: Path) -> str:
    """The demo's run as recorded (with its toolset sidecar) under ``base``; returns its id."""
    shutil.copytree(DEMO, base, dirs_exist_ok=True)
    return DEMO_RUN_ID


def replicate_run(base: Path, n: int, *, seed: int = 0, run_id: str = "20261201-000000-0a0b0c",
                  written: bool = True) -> str:
    """A run of ``n`` examples under ``base``: each a demo example drawn at random (seeded), with
    its own id and cluster, followed by its source and target rows. ``written`` notes the files'
    digests as a finished replay does (``written.json``). Returns the run id."""
    demo_dir = DEMO / "runs" / DEMO_RUN_ID
    examples = [orjson.loads(line) for line in (demo_dir / "examples.jsonl").read_bytes().splitlines()]
    rows: dict[str, list[dict]] = {}
    for line in (demo_dir / "raw.jsonl").read_bytes().splitlines():
        row = orjson.loads(line)
        rows.setdefault(row["example_id"], []).append(row)
    rng = random.Random(seed)
    out = base / "runs" / run_id
    out.mkdir(parents=True)
    shutil.copytree(DEMO / "toolsets", base / "toolsets", dirs_exist_ok=True)
    with open(out / "examples.jsonl", "wb") as ex_file, open(out / "raw.jsonl", "wb") as raw_file:
        for i in range(n):
            example = rng.choice(examples)
            new_id = f"{example['id']}-{i:06d}"
            ex_file.write(orjson.dumps({**example, "id": new_id, "cluster": f"{example['cluster']}-{i:06d}"}) + b"\n")
            for row in sorted(rows[example["id"]], key=lambda r: r["role"] != "source"):
                raw_file.write(orjson.dumps({**row, "example_id": new_id}) + b"\n")
    manifest = orjson.loads((demo_dir / "run.json").read_bytes())
    manifest.update(run_id=run_id, examples=n, planned_model_calls=2 * n, model_calls=2 * n)
    (out / "run.json").write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    if written:
        record_written(out)
    return run_id
