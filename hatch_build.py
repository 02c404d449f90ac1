"""Opt-in build hook: ``EVALSTOP_MYPYC=1 pip install .`` compiles the monitor's hot path with
mypyc (spec ``MON-18``); without the variable this hook does nothing and the wheel is the
pure-Python one.

The modules compiled are ``evalstop.live.native.COMPILED``. The hook copies the package to a
temporary directory, runs mypyc there (gcc and the Python headers are needed) and adds the
extension modules beside the sources in a platform wheel. Editable installs are refused:
Python would import the sources from ``src/`` instead.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.config import BuilderConfig
from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ENV = "EVALSTOP_MYPYC"
"""Set to ``1`` to compile."""
REQUIRES = [
    "mypy>=1.10",
    "setuptools>=69",
    "attrs>=23.1",
    "numpy>=1.26",
    "sortedcontainers>=2.4",
    "sortedcontainers-stubs>=2.4",
]
"""What the compiled build needs to build (mypyc; setuptools to drive the C compiler; the
package's own dependencies, for their types)."""


def enabled() -> bool:
    """Whether this build compiles."""
    return os.environ.get(ENV, "") == "1"


def compiled_modules(root: Path) -> list[str]:
    """``COMPILED`` of ``src/evalstop/live/native.py``, read without importing the package."""
    tree = ast.parse((root / "src/evalstop/live/native.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "COMPILED":
            assert node.value is not None
            names = ast.literal_eval(node.value)
            return [str(name) for name in names]
    raise RuntimeError("src/evalstop/live/native.py defines no COMPILED")


class MypycBuildHook(BuildHookInterface[BuilderConfig]):
    """Compile ``COMPILED`` with mypyc when ``EVALSTOP_MYPYC=1``; else do nothing."""

    PLUGIN_NAME = "custom"

    def dependencies(self) -> list[str]:
        return REQUIRES if enabled() else []

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if not enabled():
            return
        if self.target_name != "wheel" or version == "editable":
            raise RuntimeError(f"{ENV}=1 builds a regular wheel only (pip install ., not -e)")
        work = Path(tempfile.mkdtemp(prefix="evalstop-mypyc-"))
        self._work = work
        shutil.copytree(Path(self.root) / "src" / "evalstop", work / "evalstop")
        paths = [name.replace(".", "/") + ".py" for name in compiled_modules(Path(self.root))]
        env = dict(os.environ)
        # No fused multiply-add: every float operation rounds as CPython's does. $CFLAGS replaces
        # Python's own flags in setuptools (-O3 -fwrapv -DNDEBUG ...), so start from those.
        flags = env.get("CFLAGS") or sysconfig.get_config_var("CFLAGS") or ""
        env["CFLAGS"] = f"{flags} -ffp-contract=off".strip()
        subprocess.run([sys.executable, "-m", "mypyc", *paths], cwd=work, env=env, check=True)
        suffix = sysconfig.get_config_var("EXT_SUFFIX")
        for built in sorted(work.rglob(f"*{suffix}")):
            relative = built.relative_to(work)
            if relative.parts[0] != "build":
                build_data["force_include"][str(built)] = relative.as_posix()
        build_data["pure_python"] = False
        build_data["infer_tag"] = True

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        work = getattr(self, "_work", None)
        if work is not None:
            shutil.rmtree(work, ignore_errors=True)
