"""Shared test setup: Hypothesis profiles, and the option that regenerates the docs outputs.

``default`` is what ``nox -s tests`` runs; ``long`` (``nox -s props``) runs many more
examples. Both derandomise so that CI is reproducible.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default",
    max_examples=100,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long",
    max_examples=2_000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("default")


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--regenerate-examples``: rewrite docs/examples/*.out (tests/repo/test_docs_examples)."""
    parser.addoption(
        "--regenerate-examples",
        action="store_true",
        help="write each docs example's output to its .out file instead of comparing",
    )
