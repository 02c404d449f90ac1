"""Shared test setup: Hypothesis profiles, and the option that regenerates the docs outputs.

``default`` is what ``nox -s tests`` runs; ``long`` (``nox -s props``) runs many more
examples; ``mutants`` (``nox -s mutants``) runs fewer and does not shrink a failure, since
mutmut reruns the tests once per mutant and only asks whether they fail. ``default`` and
``mutants`` derandomise so that CI and mutation scores are reproducible.
"""

from __future__ import annotations

import os
from collections.abc import Generator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, settings

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
settings.register_profile(
    "mutants",
    max_examples=20,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    # A failure is all mutmut needs: shrinking and explaining it took a stateful test from 2 s
    # to 77 s, past mutmut's timeout, so real kills were counted as timeouts (session 5).
    phases=[Phase.explicit, Phase.reuse, Phase.generate],
)
settings.load_profile("default")

# tests/slurm needs a real Slurm cluster (root, Debian's slurm-wlm and munge): only
# ``nox -s slurm`` runs it, with EVALSTOP_SLURM=1 (spec SLM-9).
collect_ignore = [] if os.environ.get("EVALSTOP_SLURM") else ["slurm"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--regenerate-examples``: rewrite docs/examples/*.out (tests/repo/test_docs_examples)."""
    parser.addoption(
        "--regenerate-examples",
        action="store_true",
        help="write each docs example's output to its .out file instead of comparing",
    )


STAND_INS = ("no stand-in", "the stand-in is not used")
"""Skips the adapters session keeps: stand-in tests that only run without the real library
(tests/repo/test_skips.py lists every reason)."""


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, Any, None]:
    """With ``EVALSTOP_FORBID_SKIPS`` set (the adapters session), a skip is a failure."""
    outcome: Any = yield
    report: pytest.TestReport = outcome.get_result()
    if not (report.skipped and os.environ.get("EVALSTOP_FORBID_SKIPS")):
        return
    reason = str(report.longrepr)
    if not any(allowed in reason for allowed in STAND_INS):
        report.outcome = "failed"
        report.longrepr = f"skipped in a session that forbids skips: {reason}"
