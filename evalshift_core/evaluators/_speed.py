"""The two shortcuts scoring a large run keeps, because each was measured and each buys much.

Both sit here, away from the evaluator contract, so an evaluator author never meets them.
Measured on benchmarks/evaluate.py (all four evaluators, 30k pairs, alternating in one sitting):
building records with pydantic's ``model_construct`` instead of :func:`new_record` made scoring
1.27x slower, and leaving out the generation hand-off in :func:`cyclic_gc_paused` 1.46x slower.
Neither changes a record (tests/core/evaluators/test_evaluate_run_fast_paths.py pins them).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

from ._records import ScoreRecord

# Every field is set on a record we build, so one set serves them all: pydantic only ever adds
# an already present name to it (on assignment) and copies it on ``model_copy``.
_ALL_FIELDS_SET = set(ScoreRecord.model_fields)
_new_object = object.__new__
# BaseModel's __dict__ and slots, written through their descriptors. ``model_construct`` does
# the same writes after walking every field's defaults and aliases: ~13 µs a record against
# ~0.8 µs here, five records a pair.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__


def new_record(
    example_id: str,
    evaluator: str,
    name: str,
    side: str | None,
    source_score: float,
    target_score: float,
    skipped: bool,
    labels: list[str],
    metadata: dict[str, Any],
) -> ScoreRecord:
    """A ScoreRecord from values that are ours and already valid, in declaration order, unvalidated.

    Equal to ``ScoreRecord.model_construct(...)`` with the same values (a test holds them equal).
    """
    record = _new_object(ScoreRecord)
    _set_dict(record, {
        "example_id": example_id, "evaluator": evaluator, "name": name, "side": side,
        "source_score": source_score, "target_score": target_score, "skipped": skipped,
        "labels": labels, "metadata": metadata,
    })
    _set_fields_set(record, _ALL_FIELDS_SET)
    _set_extra(record, None)
    _set_private(record, None)
    return record


@contextmanager
def cyclic_gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while scoring a run; then file what survived as old.

    Scoring allocates many small dicts and lists and keeps every record, so the collector's
    passes would re-traverse an ever larger heap; the evaluators create no reference cycles, so
    reference counting frees everything they drop. What survives is the records, alive by
    construction (they are returned): the two young-generation passes that would follow could
    free nothing. ``gc.freeze(); gc.unfreeze()`` moves every live object straight to the oldest
    generation, without traversing it. That includes what the host allocated since its last
    collection: its young garbage cycles then wait for the next full collection instead of the
    next young one. Skipped when the host froze objects itself (``gc.freeze`` before forking),
    since ``unfreeze`` would undo that.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                gc.freeze()
                gc.unfreeze()
            gc.enable()


def pack_records(records: list[ScoreRecord]) -> list[Any]:
    """Records as another process can receive them cheaply: a plain ScoreRecord as the tuple of
    its field values (pickling pydantic models, then rebuilding them, cost a 100k-example run's
    forked half ~1 s; tuples and :func:`new_record` ~0.3 s); any other record as it is."""
    return [tuple(r.__dict__.values()) if type(r) is ScoreRecord else r for r in records]


def unpack_records(packed: list[Any]) -> list[ScoreRecord]:
    """The records :func:`pack_records` packed, equal to the originals."""
    return [new_record(*r) if type(r) is tuple else r for r in packed]
