"""Text tables of a reproduction: each world's tables, the paper's figures beside the paper
world's only (spec ``REP-4``, ``REP-7``), the density sweep (``REP-8``) and the leakage audit
(``LEAK-3``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from evalstop.experiments.grid import DENSITIES, DENSITY_KS, PAPER_NOISES
from evalstop.experiments.leakage import CURVE_AUC_LIMIT, ERROR_MARGIN, Leakage
from evalstop.experiments.paper.figures import PaperFigures, PaperValue
from evalstop.experiments.paper.results import ResultRow, Results, WorldResults
from evalstop.experiments.tables import format_table
from evalstop.sim.philly import fitted_trace

__all__ = ["render_report", "render_world"]

MAIN_METRICS = (
    ("jct_change_pct", True),
    ("wasted_change_pct", True),
    ("rlhf_gpu_time_change_pct", True),
    ("precision", False),
    ("recall", False),
    ("fpr", False),
)


def _ours(row: ResultRow, key: str, *, percent: bool) -> str:
    est = row.metric(key)
    if math.isnan(est.mean):
        return "n/a"
    ci = (
        ""
        if math.isnan(est.ci95)
        else f" ±{est.ci95:.1f}"
        if percent
        else f" ±{100 * est.ci95:.1f}"
    )
    return (f"{est.mean:+.1f}%" if percent else f"{100 * est.mean:.1f}%") + ci


def _paper(value: PaperValue, *, percent: bool) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, tuple):
        low, high = value
        return f"{low:+.1f}% to {high:+.1f}%" if percent else f"{low:.0%} to {high:.0%}"
    return f"{value:+.1f}%" if percent else f"{100 * value:.1f}%"


def _main(world: WorldResults, paper: PaperFigures | None) -> str:
    header = ["system", "metric", "ours (mean ±95% CI)"] + (["paper"] if paper else [])
    rows: list[list[str]] = []
    for row in world.main:
        for key, percent in MAIN_METRICS:
            cells = [row.system, key, _ours(row, key, percent=percent)]
            if paper is not None:
                cells.append(_paper(paper.row(row.system).get(key), percent=percent))
            rows.append(cells)
    return format_table(header, rows, title="Main result (changes against srtf-est alone)")


def _composability(world: WorldResults, paper: PaperFigures | None) -> str:
    header = ["base", "JCT change", "wasted change", "RLHF GPU-time change"]
    header += ["paper (all bases)"] if paper else []
    rows = []
    for row in world.composability:
        cells = [row.base or "-"] + [
            _ours(row, key, percent=True)
            for key in ("jct_change_pct", "wasted_change_pct", "rlhf_gpu_time_change_pct")
        ]
        if paper is not None:
            cells.append(_paper(paper.composability_jct_change_pct, percent=True))
        rows.append(cells)
    return format_table(
        header, rows, title="Composability: EvalStop over each base, against the base alone"
    )


def _rates(row: ResultRow) -> list[str]:
    return [_ours(row, key, percent=False) for key in ("precision", "recall", "fpr")]


def _sweep(
    rows: Sequence[ResultRow],
    label: str,
    key: Callable[[ResultRow], str],
    title: str,
    paper: Callable[[ResultRow], str] | None,
) -> str:
    header = [label, "detector", "precision", "recall", "FPR"] + (["paper"] if paper else [])
    body = [
        [key(row), row.detector, *_rates(row)] + ([paper(row)] if paper else []) for row in rows
    ]
    return format_table(header, body, title=title)


def _k(world: WorldResults, paper: PaperFigures | None) -> str:
    header = ["k", "precision", "recall", "FPR", "JCT change", "delay (evals)"]
    header += ["paper"] if paper else []
    rows = []
    for row in world.k:
        delay = row.delay_evals.mean
        cells = [
            str(row.k),
            *_rates(row),
            _ours(row, "jct_change_pct", percent=True),
            "n/a" if math.isnan(delay) else f"{delay:.2f}",
        ]
        if paper is not None:
            cells.append("best balance" if row.k == paper.best_k else "-")
        rows.append(cells)
    return format_table(header, rows, title="Threshold sweep: EvalStop(k) over srtf-est")


def _density(world: WorldResults) -> str:
    by_cell = {(row.evals_per_run, row.sigma, row.k): row for row in world.density}
    sigma = world.world.eval_noise
    header = [
        "evals/run",
        *[f"FPR s={s:g}" for s in PAPER_NOISES],
        *[f"recall k={k}" for k in DENSITY_KS],
    ]
    rows = []
    for evals in DENSITIES:
        cells = [str(evals)]
        for s in PAPER_NOISES:
            cells.append(_ours(by_cell[(evals, s, 2)], "fpr", percent=False).split(" ")[0])
        for k in DENSITY_KS:
            cells.append(_ours(by_cell[(evals, sigma, k)], "recall", percent=False).split(" ")[0])
        rows.append(cells)
    title = (
        "Evaluation density: EvalStop(k=2) FPR by sigma, and recall by k at sigma "
        f"{sigma:g} (planned evaluations per RLHF run)"
    )
    return format_table(header, rows, title=title)


def _leakage(leakage: Leakage) -> str:
    rows = [[name, f"{value:.3f}"] for name, value in leakage.label_auc]
    rows.append(["max (all observables)", f"{leakage.label_auc_max:.3f}"])
    rows.append(["link: true length (hidden, CRV-9)", f"{leakage.label_length_link:.3f}"])
    given = dict(leakage.label_auc_given_estimate_all)
    rows += [
        [f"{name} | estimate, before the turn (all runs)", f"{value:.3f} ({given[name]:.3f})"]
        for name, value in leakage.label_auc_given_estimate
    ]
    rows.append(["hacking runs turned before checkpoint 1", f"{leakage.early_turn_share:.1%}"])
    learned = leakage.learned
    if learned is None:
        rows.append(["learned predictors (LEAK-4)", "skipped: scikit-learn is not installed"])
    else:
        rows.append(["learned: eval, loss, proxy jointly", f"{learned.label_auc_curves:.3f}"])
        rows.append(
            [
                "learned jointly | estimate, before the turn",
                f"{learned.label_auc_curves_given_estimate:.3f}",
            ]
        )
        estimate = dict(learned.length_error_estimate)
        rows += [
            [f"learned length error, first {k}", f"{e:.3f} vs {estimate[k]:.3f} (estimate)"]
            for k, e in learned.length_error
        ]
    rows.append(
        ["curve AUC max | estimate (limit)", f"{leakage.curve_auc_max:.3f} ({CURVE_AUC_LIMIT})"]
    )
    rows += [[f"length error: {name}", f"{value:.3f}"] for name, value in leakage.length_errors]
    rows.append(
        [
            "first checkpoint vs estimate",
            f"{leakage.length_error_first_checkpoint:.3f} vs {leakage.length_error_estimate:.3f}"
            f" (leak if > {ERROR_MARGIN:.0%} better): {leakage.verdict}",
        ]
    )
    return format_table(
        ["first-checkpoint observable", "label AUC / median rel. error"],
        rows,
        title=f"Leakage audit over {leakage.jobs} jobs (LEAK-1 to LEAK-5)",
    )


def render_world(world: WorldResults, paper: PaperFigures | None) -> str:
    """Every table of one world; ``paper`` figures beside it when given."""
    w = world.world
    header = (
        f"== world {w.name}: sigma {w.eval_noise:g}, {w.rlhf_evals} planned evaluations per "
        f"RLHF run, turn law p U{w.turn_range} (CRV-9), collapse speed {w.decline_rate:g}, "
        f"plateau share {'from the laws' if w.plateau_share is None else f'{w.plateau_share:g}'}"
        f", noise spread {w.noise_spread}, step-schedule share {w.step_share:g}"
    )
    noise_paper = None
    rate_paper = None
    if paper is not None:
        figures = paper

        def noise_paper(row: ResultRow) -> str:
            value = figures.noise_precision_at(row.sigma) if row.detector == "evalstop" else None
            return "-" if value is None else f"P {value:.0%}"

        def rate_paper(row: ResultRow) -> str:
            if row.detector == "evalstop":
                return f"P >= {figures.base_rate_min_precision:.0%}"
            return f"P = {row.hacking_share:.0%}" if row.detector == "stopat-0.65" else "-"

    if not world.noise:  # a trace: the main and composability tables only (PHL-5)
        return "\n\n".join([header, _main(world, paper), _composability(world, paper)])
    parts = [
        header,
        _main(world, paper),
        _composability(world, paper),
        _sweep(
            world.noise,
            "sigma",
            lambda row: f"{row.sigma:g}",
            "Noise sweep (detectors over srtf-est)",
            noise_paper,
        ),
        _sweep(
            world.base_rate,
            "hacking share",
            lambda row: f"{row.hacking_share:g}",
            "Base-rate sweep",
            rate_paper,
        ),
        _k(world, paper),
        *([_density(world)] if world.density else []),
        _leakage(world.leakage),
    ]
    return "\n\n".join(parts)


def render_report(results: Results) -> str:
    """Every world's tables, separated by blank lines; the paper beside the paper world."""
    s = results.settings
    header = (
        f"evalstop reproduce: {s.seeds} seeds a cell, {s.jobs} jobs on {s.gpus} GPUs, "
        f"load {s.load}, hacking share {s.hacking_share}, worlds {', '.join(s.worlds)}"
    )
    if s.trace is not None:
        fitted = fitted_trace(s.trace)
        header += (
            f"\non trace {s.trace.source} (window {s.trace.window or 'all'}): the first "
            f"{len(fitted.records)} jobs, arrivals x{fitted.time_scale:.3g} for load {s.load}, "
            f"{fitted.capped} capped at {fitted.gpus} GPUs; curves attached by seed (TAB-4)"
        )
    worlds = [
        render_world(world, results.paper if world.world.name == "paper" else None)
        for world in results.worlds
    ]
    return "\n\n".join([header, *worlds])
