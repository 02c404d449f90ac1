"""The slurm nox session is part of the default gate and cannot pass by skipping (SLM-9)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _noxfile() -> ast.Module:
    return ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))


def _function(name: str) -> str:
    source = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    for node in _noxfile().body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return ast.get_source_segment(source, node) or ""
    raise AssertionError(f"noxfile.py has no function {name}")


def test_slm9_slurm_is_a_default_session_that_forbids_skips() -> None:
    """SLM-9: a bare nox (the README's test command, CI) runs it; skips fail it; it installs
    the packages as root and errors out otherwise; tests/slurm is collected only there."""
    source = (ROOT / "noxfile.py").read_text(encoding="utf-8")
    defaults = next(
        node.value
        for node in _noxfile().body
        if isinstance(node, ast.Assign)
        and ast.get_source_segment(source, node.targets[0]) == "nox.options.sessions"
    )
    assert "slurm" in ast.literal_eval(defaults)
    session = _function("slurm")
    assert 'session.env["EVALSTOP_FORBID_SKIPS"] = "1"' in session
    assert 'session.env["EVALSTOP_SLURM"] = "1"' in session
    assert '"tests/slurm"' in session
    ensure = _function("_ensure_slurm")
    assert '"apt-get", "update"' in ensure and "session.error(" in ensure
    assert "os.geteuid() != 0" in ensure
    conftest = (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8")
    assert 'collect_ignore = [] if os.environ.get("EVALSTOP_SLURM") else ["slurm"]' in conftest
