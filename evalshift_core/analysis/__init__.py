"""The analysis layer: paired statistics, severity, labels and the migration verdict.

:func:`analyze` turns score records into :class:`Analysis` (what ``analysis.json`` holds).
"""

from ._analyze import analyze
from ._headline import BROKEN_HARNESS, NOTHING_MEASURED
from ._labels import REFUSAL_REGRESSION, TOOL_GROUND_TRUTH_MISS, UNLABELLED_SCORE_DROP
from ._records import (
    ANALYSIS_SCHEMA_VERSION,
    Analysis,
    ComparisonResult,
    LabelSummary,
    Regression,
    load_analysis,
)
from ._severity import SEVERITIES, severity_of
from ._stats import (
    ConfidenceInterval,
    PairedTestResult,
    benjamini_hochberg,
    bootstrap_ci,
    clustered_standard_error,
    paired_test,
    required_examples,
    standard_error,
)

__all__ = [
    "ANALYSIS_SCHEMA_VERSION",
    "BROKEN_HARNESS",
    "NOTHING_MEASURED",
    "REFUSAL_REGRESSION",
    "SEVERITIES",
    "TOOL_GROUND_TRUTH_MISS",
    "UNLABELLED_SCORE_DROP",
    "Analysis",
    "ComparisonResult",
    "ConfidenceInterval",
    "LabelSummary",
    "PairedTestResult",
    "Regression",
    "analyze",
    "benjamini_hochberg",
    "bootstrap_ci",
    "clustered_standard_error",
    "load_analysis",
    "paired_test",
    "required_examples",
    "severity_of",
    "standard_error",
]
