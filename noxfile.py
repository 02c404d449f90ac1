"""Quality gates for evalstop. A bare ``nox`` runs lint, typecheck, tests, adapters and docs.

Every session installs what it needs from PyPI into its own virtualenv, so the only thing a
fresh machine needs is Python 3.11+ and ``pip install nox``.
"""

from __future__ import annotations

import os

import nox

nox.options.sessions = ["lint", "typecheck", "tests", "adapters", "docs"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

PYPROJECT = nox.project.load_toml("pyproject.toml")
CONTRACT_MODULES = [
    "src/evalstop/core/gpus.py",
    "src/evalstop/core/detectors.py",
    "src/evalstop/engine/queue.py",
]


def _install(session: nox.Session, *groups: str, extras: str = "") -> None:
    session.install("-e", f".{extras}")
    if groups:
        session.install(*nox.project.dependency_groups(PYPROJECT, *groups))


@nox.session
def tests(session: nox.Session) -> None:
    """Unit, property and stateful tests under the default Hypothesis profile."""
    _install(session, "test")
    session.run("pytest", *session.posargs)


@nox.session
def props(session: nox.Session) -> None:
    """The Hypothesis suites under the long profile (many more examples); not run by default."""
    _install(session, "test")
    session.run("pytest", "--hypothesis-profile=long", *session.posargs)


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict on src and tests."""
    _install(session, "typecheck")
    session.run("mypy", "--strict", "src", "tests", "docs/examples", "docs/scripts", "benchmarks")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "lint"))
    paths = [
        "src",
        "tests",
        "noxfile.py",
        "docs/examples",
        "docs/hooks",
        "docs/scripts",
        "benchmarks",
    ]
    session.run("ruff", "check", *paths)
    session.run("ruff", "format", "--check", *paths)


@nox.session
def crosshair(session: nox.Session) -> None:
    """CrossHair checks the PEP 316 contracts of the pure core and prints confirmed /
    unconfirmed counts (spec ARC-4); a counterexample fails the session."""
    _install(session, "contracts")
    output = session.run(
        "crosshair",
        "check",
        "--analysis_kind=PEP316",
        "--per_condition_timeout=4",
        "--report_all",
        *CONTRACT_MODULES,
        silent=True,
    )
    text = str(output or "")
    confirmed = text.count("Confirmed over all paths")
    unconfirmed = text.count("Not confirmed")
    for line in text.splitlines():
        if "Not confirmed" in line:
            session.log(line)
    session.log(f"crosshair: {confirmed} confirmed, {unconfirmed} not confirmed (ARC-4)")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site with mkdocs --strict (broken references fail the build)."""
    _install(session, "docs")
    session.run("mkdocs", "build", "--strict", "--site-dir", "site")


@nox.session
def changelog(session: nox.Session) -> None:
    """Check the fragments in changelog.d/ and print the next release's notes (writes nothing)."""
    session.install(*nox.project.dependency_groups(PYPROJECT, "changelog", "test"))
    session.run("pytest", "-p", "no:cacheprovider", "tests/repo/test_changelog.py")
    session.run("towncrier", "build", "--draft", "--version", "Unreleased")


@nox.session
def bench(session: nox.Session) -> None:
    """Print the benchmark figures: the engine against SimPy and a bare heapq loop, its growth
    with the work, the monitor against a bare loop, and issue 12's goals (met or not)."""
    _install(session, "bench")
    session.run("python", "benchmarks/run.py")


@nox.session
def realdata(session: nox.Session) -> None:
    """Regenerate docs/real-traces.md from the corpus the package ships."""
    _install(session)
    session.run("python", "docs/scripts/real_traces.py")


# The versions the adapters session tests together (the closing note of issue 14 lists their
# timings). torch first: a bare torch requirement would pull a multi-GB CUDA build.
ADAPTER_PINS = [
    "transformers==5.24.0",
    "accelerate==1.15.0",
    "trl==1.16.0",
    "datasets==5.2.0",
    "optuna==5.0.0",
    "lightning==2.6.6",
    "mlflow==3.17.2",
]
TORCH = "torch==2.13.0"
TORCH_INDEX_ENV = "EVALSTOP_TORCH_INDEX_URL"
"""Names an extra package index for torch (e.g. https://download.pytorch.org/whl/cpu for the
CPU-only build); unset by default, when torch comes from the package index alone."""


def _install_torch(session: nox.Session) -> None:
    index = os.environ.get(TORCH_INDEX_ENV)
    session.install(TORCH, *(["--extra-index-url", index] if index else []))


@nox.session
def adapters(session: nox.Session) -> None:
    """Every adapter against the real libraries on CPU: Ray Tune, Hugging Face, TRL, Optuna,
    Lightning, and watch's MLflow source."""
    _install_torch(session)
    _install(session, "test", extras="[ray,hf,trl,optuna,lightning,mlflow]")
    session.install(*ADAPTER_PINS)
    session.env["RAY_USAGE_STATS_ENABLED"] = "0"
    # Nothing may be fetched at run time: the tests build their tiny models themselves.
    session.env["HF_HUB_OFFLINE"] = "1"
    session.env["TRANSFORMERS_OFFLINE"] = "1"
    # A library that cannot be imported fails the session instead of skipping its tests.
    imports = "import ray.tune, torch, transformers, accelerate, trl, optuna, lightning, mlflow"
    session.run("python", "-c", imports)
    session.env["EVALSTOP_FORBID_SKIPS"] = "1"
    session.run("pytest", "tests/adapters", *session.posargs)


MUTATION_MODULES = [
    "src/evalstop/core/model.py",
    "src/evalstop/core/boundary.py",
    "src/evalstop/core/detectors.py",
    "src/evalstop/core/wrapper.py",
    "src/evalstop/core/policies.py",
    "src/evalstop/core/gpus.py",
    "src/evalstop/engine/step.py",
    "src/evalstop/engine/state.py",
    "src/evalstop/engine/queue.py",
    "src/evalstop/live/monitor.py",
    "src/evalstop/live/codec.py",
]
"""The core modules whose mutation score ``nox -s mutants`` reports (issue 15: >= 90% each)."""

MUTATION_FLOOR = 90.0


@nox.session
def mutants(session: nox.Session) -> None:
    """Mutation score per core module with mutmut (slow: not in the default run or CI).

    ``nox -s mutants`` mutates every module of MUTATION_MODULES; ``nox -s mutants -- PATH...``
    only those. Prints killed / total and the score per module, fails below MUTATION_FLOOR.
    The project is not installed: mutmut runs the tests against its mutated copy in mutants/.
    """
    session.install("attrs", "numpy", "sortedcontainers", "mutmut>=3.3")
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    modules = list(session.posargs) or MUTATION_MODULES

    def listing(key: str, values: list[str]) -> str:
        return f"{key} =" + "".join(f"\n    {value}" for value in values)

    config = "\n".join(
        [
            "[mutmut]",
            listing("source_paths", modules),
            listing("also_copy", ["src/evalstop", "tests"]),
            listing("pytest_add_cli_args", ["-p", "no:cacheprovider", "-q"]),
            "",
        ]
    )
    session.run("python", "-c", f"open('setup.cfg', 'w').write({config!r})")
    try:
        session.run("mutmut", "run", success_codes=[0, 1])
        output = session.run("mutmut", "results", "--all", "true", silent=True)
    finally:
        session.run("python", "-c", "import os; os.remove('setup.cfg')")
    _mutation_table(session, str(output or ""), modules)


def _mutation_table(session: nox.Session, results: str, modules: list[str]) -> None:
    """Print killed / total per module from ``mutmut results`` lines ``name: status``."""
    failing: list[str] = []
    for path in modules:
        prefix = path.removeprefix("src/").removesuffix(".py").replace("/", ".") + "."
        statuses = [
            line.rsplit(":", 1)[1].strip()
            for line in results.splitlines()
            if line.strip().startswith(prefix) and ":" in line
        ]
        total = len(statuses)
        killed = sum(status in ("killed", "timeout") for status in statuses)
        score = 100.0 * killed / total if total else 0.0
        session.log(f"{path}: {killed}/{total} killed, {score:.1f}%")
        if score < MUTATION_FLOOR:
            failing.append(path)
    if failing:
        session.error(f"mutation score below {MUTATION_FLOOR}%: {', '.join(failing)}")
