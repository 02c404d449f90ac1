"""Shared test setup: Hypothesis profiles.

``default`` is what ``nox -s tests`` runs; ``long`` (``nox -s props``) runs many more
examples. Both derandomise so that CI is reproducible.
"""

from __future__ import annotations

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
