"""Evaluators, registered by their config type name (the key under ``evaluators:``).

A new evaluator is one module and one line in :data:`REGISTRY`.
"""

from __future__ import annotations

from ._base import Evaluator, ScoreRecord
from ._registry import REGISTRY, build_evaluators, evaluate_pair, evaluate_run

__all__ = ["Evaluator", "ScoreRecord", "REGISTRY", "build_evaluators", "evaluate_pair", "evaluate_run"]
