"""Every reason a test may be skipped is listed here, with the session that may see it.

Skips are allowed in the default session only (the optional libraries of the adapters are not
installed there); the ``adapters`` session sets ``EVALSTOP_FORBID_SKIPS`` and tests/conftest.py
turns any skip not marked as a stand-in into a failure, so a broken import fails that session.
A new skip must be added here on purpose.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMPORT = re.compile(r"importorskip\(\s*\"([^\"]+)\"")
REASON = re.compile(r"reason=\"([^\"]+)\"")
SKIP = re.compile(r"pytest\.skip\(\s*\"([^\"]+)\"")

KNOWN: dict[str, str] = {
    "import torch": "default session (adapters extra not installed)",
    "import transformers": "default session (adapters extra not installed)",
    "import safetensors.torch": "default session (adapters extra not installed)",
    "import ray": "default session (adapters extra not installed)",
    "import ray.tune": "default session (adapters extra not installed)",
    "import numpy": "never: numpy is a core dependency",
    "import mlflow.tracking": "default session (the mlflow extra is not installed there)",
    "import datasets": "default session (installed with the trl extra)",
    "import tokenizers": "default session (installed with the hf extra)",
    "import trl": "default session (trl extra not installed)",
    "import optuna": "default session (optuna extra not installed)",
    "import lightning": "default session (lightning extra not installed)",
    "import lightning.pytorch": "default session (lightning extra not installed)",
    "needs Ray: pip install 'evalstop[ray]'": "default session (ray extra not installed)",
    "import tensorboard": "never in CI: tensorboard is in the test group",
    "import sklearn": "never in CI: scikit-learn is in the test group (the audit extra)",
    "import tensorboard.summary": "never in CI: tensorboard is in the test group",
    "import tensorboard.summary.writer.event_file_writer": "never in CI: in the test group",
    "import tensorboard.compat.proto.event_pb2": "never in CI: in the test group",
    "import tensorboard.compat.proto.summary_pb2": "never in CI: in the test group",
    "transformers is installed: no stand-in": "adapters session (stand-in test, by design)",
    "Ray is installed: the stand-in is not used": "adapters session (stand-in test, by design)",
    "needs bash for <(...)": "never in CI: bash runs .ci/run",
    "import matplotlib": "never in CI: matplotlib is in the test group",
    "needs the duplicates command (a developer tool)": "any session on a machine without it",
}
"""Skip reason -> where CI may see it."""


def skip_reasons() -> set[str]:
    found: set[str] = set()
    for path in (ROOT / "tests").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        found.update(f"import {name}" for name in IMPORT.findall(text))
        found.update(REASON.findall(text))
        found.update(SKIP.findall(text))
    return found


def test_every_skip_reason_is_listed() -> None:
    """A skip CI could meet is listed with the session that meets it; none is stale."""
    found = skip_reasons()
    assert sorted(found - set(KNOWN)) == [], "unlisted skip reasons"
    assert sorted(set(KNOWN) - found) == [], "listed skip reasons no test has"
