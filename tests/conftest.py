"""Shared fixtures: the simulator with the demo's scripted models, and an SDK capture dir."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

try:
    from hypothesis import settings
except ImportError:  # the oldest-SDK environment runs SDK tests only, without hypothesis
    settings = None
if settings is not None:
    # Property tests draw the same examples on every run: a CI run never fails on a draw no one
    # can reproduce, and `--hypothesis-seed` or a local profile still explores further.
    settings.register_profile("evalshift", derandomize=True, database=None, print_blob=True)
    settings.load_profile("evalshift")

# A bug the SDK's guard would swallow in production still fails the tests.
os.environ["EVALSHIFT_RAISE_INTERNAL"] = "1"

REPO = Path(__file__).resolve().parent.parent
# Real provider responses recorded by other open-source projects (sources in its README.md).
RECORDED_FIXTURES = REPO / "tests" / "fixtures" / "recorded"


@pytest.fixture
def demo_simulator() -> Iterator[object]:
    from evalshift_core.cli._demo import DEMO_SCRIPTS
    from evalshift_core.simulator import Simulator, load_scripts

    with Simulator(load_scripts(DEMO_SCRIPTS)) as sim:
        yield sim


@pytest.fixture
def capture_dir(tmp_path: Path) -> Iterator[Path]:
    """SDK capture on into a temp dir; flushed and unpatched afterwards."""
    import evalshift_sdk

    directory = tmp_path / "captures"
    evalshift_sdk.init(directory, enabled=True)
    try:
        yield directory
    finally:
        evalshift_sdk.shutdown()
