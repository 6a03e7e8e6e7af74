"""Analysis: paired statistics per comparison, severity, labels and the migration verdict.

Kept as the import path the rest of the core uses; the code lives in :mod:`evalshift_core.analysis`.
"""

from .analysis import *  # noqa: F403
from .analysis import __all__  # noqa: F401
