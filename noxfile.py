"""Quality gates for evalstop. A bare ``nox`` runs lint, typecheck, tests, adapters, docs and
slurm.

Every session installs what it needs from PyPI into its own virtualenv, so the only thing a
fresh machine needs is Python 3.11+ and ``pip install nox``; the slurm session also needs root,
to install Debian's Slurm and munge packages when they are missing and to run the daemons.
"""

from __future__ import annotations

import functools
import os
import shutil

import nox

nox.options.sessions = ["lint", "typecheck", "tests", "adapters", "docs", "slurm"]
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
    """Unit, property and stateful tests under the default Hypothesis profile, one worker
    process a core (pytest-xdist; a test file's tests stay together, so a module's fixtures
    are built once), so CI's two cores both work."""
    _install(session, "test")
    session.run("pytest", "-n", "auto", "--dist", "loadfile", *session.posargs)


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


SLURM_PACKAGES = ["slurm-wlm", "munge", "python3"]
"""Debian's packages the slurm session needs: the daemons and clients, munge, and a system
Python every local user can run (the test jobs' interpreter)."""

SLURM_PROGRAMS = ["munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo"]


def _ensure_slurm(session: nox.Session) -> None:
    """Install SLURM_PACKAGES (after ``apt-get update``) when a program is missing; without
    root or apt-get, fail saying what to install (spec SLM-9: never a skip)."""
    missing = [name for name in SLURM_PROGRAMS if shutil.which(name) is None]
    if not missing and os.path.exists("/usr/bin/python3"):
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        session.error(
            f"the slurm session needs {', '.join(missing) or '/usr/bin/python3'}: run it as root "
            f"on Debian (it installs them), or `apt-get install -y {' '.join(SLURM_PACKAGES)}`"
        )
    env = {"DEBIAN_FRONTEND": "noninteractive"}
    session.run("apt-get", "update", "-q", external=True, env=env)
    apt = ["apt-get", "install", "-y", "-q", "--no-install-recommends", *SLURM_PACKAGES]
    session.run(*apt, external=True, env=env)


@nox.session
def slurm(session: nox.Session) -> None:
    """``tests/slurm`` against a real one-node Slurm cluster (spec SLM-9): munged, slurmctld
    and slurmd started on localhost in a temporary folder, an 8-GPU node of device files.
    Needs root; installs Debian's slurm-wlm and munge when missing. A daemon that cannot start
    fails the session; no test is skipped; no daemon is left running."""
    _ensure_slurm(session)
    session.install("-e", ".", "pytest>=8", "hypothesis>=6.100")  # what tests/slurm imports
    session.env["EVALSTOP_SLURM"] = "1"
    session.env["EVALSTOP_FORBID_SKIPS"] = "1"
    session.run("pytest", "-p", "no:cacheprovider", "tests/slurm", *session.posargs)


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
    "src/evalstop/core/noise_aware.py",
    "src/evalstop/core/noise_fold.py",
    "src/evalstop/core/folds.py",
    "src/evalstop/core/registry.py",
    "src/evalstop/core/wrapper.py",
    "src/evalstop/core/policies.py",
    "src/evalstop/core/ranking.py",
    "src/evalstop/core/regret.py",
    "src/evalstop/core/gpus.py",
    "src/evalstop/engine/step.py",
    "src/evalstop/engine/state.py",
    "src/evalstop/engine/queue.py",
    "src/evalstop/engine/fast.py",
    "src/evalstop/engine/record.py",
    "src/evalstop/engine/arrivals.py",
    "src/evalstop/engine/collector.py",
    "src/evalstop/live/monitor.py",
    "src/evalstop/live/codec.py",
    "src/evalstop/live/records.py",
    "src/evalstop/live/batch.py",
]
"""The core modules whose mutation score ``nox -s mutants`` reports (issue 15: >= 90% each).

noise_fold is the noise-aware detector's arithmetic folded in place (the monitor's and
fold_job's path, NAD-11) and records holds the monitor's per-job state (MON-14): parts of
"detectors" and "monitor" since #11 and #12 moved that logic out of noise_aware and monitor;
arrivals (the fast engine's pending arrivals) and collector (its garbage-collector pause) are
parts of the engine since #12, batch (observe_many's loop, MON-17) part of the monitor (session
6); folds (the decline rule, written once, DET-10) and registry (which fold applies to which
detector, DET-12, and the detector table) part of "detectors" since #21, which also deleted
the monitor's slot-setting verdict builders and the compiled build's per-call observer."""

MUTATION_TESTS = ["tests/core", "tests/engine", "tests/live"]
"""The tests mutmut runs: the unit tests of those modules (the whole suite takes far longer)."""

MUTATION_SOURCE_TESTS = [
    "tests/core/test_boundary.py::test_bnd2_no_other_function_builds_a_first_view"
]
"""Tests of MUTATION_TESTS that parse the modules' source (not run on mutmut's rewritten copy)."""

MUTATION_EQUIVALENTS = "tests/mutation/equivalents.toml"
"""Mutants that behave exactly like the original, each with its mutated line and the reason."""

MUTATION_FLOOR = 90.0


@nox.session
def mutants(session: nox.Session) -> None:
    """Mutation score per core module with mutmut (slow: not in the default run or CI).

    ``nox -s mutants`` mutates every module of MUTATION_MODULES; ``nox -s mutants -- PATH...``
    only those. Runs MUTATION_TESTS under the ``mutants`` Hypothesis profile (fewer examples)
    with ``MUTMUT_CHILDREN`` workers (default 2); a mutant is stopped after 5x (not 15x) its
    tests' clean time plus 10 s. ``MUTMUT_SAMPLE=N`` tests a seeded sample of N mutants per
    module (the same sample every time, a larger one extending a smaller) instead of all of
    them; a sampled mutant already killed is not retested, nor one that timed out unless
    ``MUTMUT_RETEST_TIMEOUTS=1``. Prints per module: mutants, checked, killed, of which
    timeouts, survivors listed as equivalent (MUTATION_EQUIVALENTS; an entry counts only while
    the mutant survives and still writes its line), the raw score (killed / checked), the
    score without the equivalents and, for a sample, its 95% Wilson lower bound; fails below
    MUTATION_FLOOR. The project is not installed: mutmut runs the tests against its mutated
    copy in mutants/, and a rerun only tests what changed.
    """
    session.install("attrs", "numpy", "sortedcontainers", "mutmut>=3.3,<4")
    session.install(*nox.project.dependency_groups(PYPROJECT, "test"))
    modules = list(session.posargs) or MUTATION_MODULES

    def listing(key: str, values: list[str]) -> str:
        return f"{key} =" + "".join(f"\n    {value}" for value in values)

    pytest_args = ["-p", "no:cacheprovider", "-q", "--hypothesis-profile=mutants"]
    # Tests that read the source text itself would read mutmut's rewritten copy.
    pytest_args += [f"--deselect={test}" for test in MUTATION_SOURCE_TESTS]
    config = "\n".join(
        [
            "[mutmut]",
            listing("source_paths", modules),
            # docs/scripts: NAD-9's test reads the committed tuning output there.
            listing("also_copy", ["src/evalstop", "tests", "docs/scripts"]),
            listing("pytest_add_cli_args", pytest_args),
            listing("pytest_add_cli_args_test_selection", MUTATION_TESTS),
            # mutmut 3.8 stops a mutant after (its tests' clean time + constant) x multiplier
            # wall seconds (twice that in CPU). 5x, not 15x, so that a looping mutant costs
            # minutes; at 1.5x a loaded machine timed out 47 slow but honest runs (session 3).
            # The constant covers what the clean time leaves out: each mutant's pytest
            # collection and a failing Hypothesis test's shrinking (one took 36 s CPU).
            "timeout_multiplier = 5",
            "timeout_constant = 10",
            "",
        ]
    )
    children = os.environ.get("MUTMUT_CHILDREN", "2")
    session.run("python", "-c", f"open('setup.cfg', 'w').write({config!r})")
    # mutmut 3.8.1's incremental stats map only new tests to functions that are new since the
    # last run, so a mutant of a new function met none of the older tests that call it (seen
    # in session 4): collect the whole test map each time (one test run); results stand.
    stats = "mutants/mutmut-stats.json"
    session.run("python", "-c", f"import pathlib; pathlib.Path({stats!r}).unlink(missing_ok=True)")
    run = ["mutmut", "run", "--max-children", children]
    results = ["mutmut", "results", "--all", "true"]
    sample = int(os.environ.get("MUTMUT_SAMPLE", "0"))
    try:
        if sample:
            # Generate the mutants and the test map without testing any: mutmut stops (exit 1,
            # "nothing matches") once both exist, before its clean test run.
            session.run(*run, "evalstop.no-such-mutant*", success_codes=[0, 1])
            listed = _mutant_statuses(str(session.run(*results, silent=True) or ""))
            sampled = _sample(listed, modules, sample)
            # Named mutants are always retested: name only those without a kill (a kill
            # stands, as in mutmut's own reruns; a survivor may meet new tests), and the
            # timeouts too with MUTMUT_RETEST_TIMEOUTS=1 (a loaded machine times out honest
            # runs, which mutmut counts as kills).
            stands = (
                {"killed"} if os.environ.get("MUTMUT_RETEST_TIMEOUTS") else {"killed", "timeout"}
            )
            todo = [name for name in sampled if listed[name] not in stands]
            if todo:
                session.run(*run, *todo, success_codes=[0, 1])
        else:
            session.run(*run, success_codes=[0, 1])
        statuses = _mutant_statuses(str(session.run(*results, silent=True) or ""))
        equivalents = _listed_equivalents(session, statuses)
    finally:
        session.run("python", "-c", "import os; os.remove('setup.cfg')")
    counted = set(_sample(statuses, modules, sample)) if sample else set(statuses)
    _mutation_table(session, statuses, equivalents, modules, counted, bool(sample))


def _mutant_statuses(results: str) -> dict[str, str]:
    """Map mutant name to status from ``mutmut results`` lines ``name: status``."""
    statuses: dict[str, str] = {}
    for line in results.splitlines():
        name, colon, status = line.strip().rpartition(": ")
        if colon and name.startswith("evalstop."):
            statuses[name] = status.strip()
    return statuses


def _module_prefix(path: str) -> str:
    """``src/evalstop/core/model.py`` -> ``evalstop.core.model.`` (mutmut's name prefix)."""
    return path.removeprefix("src/").removesuffix(".py").replace("/", ".") + "."


def _sample(statuses: dict[str, str], modules: list[str], size: int) -> list[str]:
    """A seeded sample of ``size`` mutants per module: the first ``size`` of the module's
    mutants shuffled with its path as the seed, so a larger sample extends a smaller one."""
    import random

    names: list[str] = []
    for path in modules:
        mine = sorted(name for name in statuses if name.startswith(_module_prefix(path)))
        random.Random(path).shuffle(mine)
        names += mine[:size]
    return names


def _wilson_lower(successes: int, trials: int, z: float = 1.96) -> float:
    """The lower end of the Wilson score interval (95% by default) of a proportion, in %."""
    import math

    if trials == 0:
        return 0.0
    p = successes / trials
    centre = p + z * z / (2 * trials)
    spread = z * math.sqrt((p * (1 - p) + z * z / (4 * trials)) / trials)
    return 100.0 * (centre - spread) / (1 + z * z / trials)


def _listed_equivalents(session: nox.Session, statuses: dict[str, str]) -> set[str]:
    """The surviving mutants of MUTATION_EQUIVALENTS whose mutated line still matches.

    Mutant numbers shift when a function changes, so each entry names the line the mutant
    writes; an entry whose mutant no longer writes that line is reported as stale, not counted.
    """
    import tomllib

    with open(MUTATION_EQUIVALENTS, "rb") as file:
        entries = tomllib.load(file).get("equivalent", [])
    valid: set[str] = set()
    for entry in entries:
        name, line = entry["mutant"], " ".join(entry["line"].split())
        if statuses.get(name) != "survived":
            if name in statuses:
                session.warn(f"equivalent {name} is {statuses[name]}, not counted")
            continue
        if line in _mutated_lines(name):
            valid.add(name)
        else:
            session.warn(f"stale equivalent {name}: it no longer writes {line!r}")
    return valid


def _mutated_lines(name: str) -> set[str]:
    """The lines (whitespace collapsed) of mutant ``name`` that its original does not have.

    Read from mutmut's rewritten module in mutants/, which holds every mutant of a function
    next to its original (``<function>__mutmut_<n>`` and ``<function>__mutmut_orig``).
    """
    module, _, function = name.rpartition(".x")
    rows, spans = _mutated_module(os.path.join("mutants", "src", *module.split(".")) + ".py")
    mutant = "x" + function
    original = mutant.rsplit("__mutmut_", 1)[0] + "__mutmut_orig"

    def lines(function: str) -> set[str]:
        first, last = spans.get(function, (0, 0))
        return {" ".join(row.split()) for row in rows[first:last]}  # the def line left out

    return lines(mutant) - lines(original)


@functools.cache
def _mutated_module(path: str) -> tuple[list[str], dict[str, tuple[int, int]]]:
    """The lines of a module of mutants/ and each function's body span in them, parsed once
    (a mutated module holds thousands of functions: one parse per equivalent took minutes)."""
    import ast

    with open(path, encoding="utf-8") as file:
        text = file.read()
    spans = {
        node.name: (node.lineno, node.end_lineno or node.lineno)
        for node in ast.walk(ast.parse(text))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    return text.splitlines(), spans


def _mutation_table(
    session: nox.Session,
    statuses: dict[str, str],
    equivalents: set[str],
    modules: list[str],
    counted: set[str],
    sampled: bool,
) -> None:
    """Print per module: mutants, checked (all if every mutant was, else those ``counted``),
    killed, of which timeouts, equivalents, raw %, % without equivalents and, for a sample, its 95%
    Wilson lower bound (a whole module's score is exact: ``whole``; an unfinished run that was
    not sampled has none, since mutmut tests the quickest mutants first)."""
    failing: list[str] = []
    session.log(
        "module | mutants | checked | killed | timeouts | equivalent | raw % | "
        "w/o equivalents % | 95% lower bound"
    )
    for path in modules:
        names = [name for name in statuses if name.startswith(_module_prefix(path))]
        checked = [n for n in names if statuses[n] != "not checked"]
        if len(checked) < len(names):  # not whole: count the sample alone (unbiased)
            checked = [n for n in checked if n in counted]
        killed = sum(statuses[name] in ("killed", "timeout") for name in checked)
        timeouts = sum(statuses[name] == "timeout" for name in checked)
        equal = sum(name in equivalents for name in checked)
        raw = 100.0 * killed / len(checked) if checked else 0.0
        net = 100.0 * killed / (len(checked) - equal) if len(checked) > equal else 0.0
        if len(checked) == len(names):
            bound = "whole"
        elif not sampled:  # an interrupted full run checks the quick mutants first: biased
            bound = "partial, no bound"
        else:
            bound = f"{_wilson_lower(killed, len(checked) - equal):.1f}"
        session.log(
            f"{path} | {len(names)} | {len(checked)} | {killed} | {timeouts} | {equal} | "
            f"{raw:.1f} | {net:.1f} | {bound}"
        )
        if net < MUTATION_FLOOR:
            failing.append(path)
    if failing:
        session.error(f"mutation score below {MUTATION_FLOOR}%: {', '.join(failing)}")
