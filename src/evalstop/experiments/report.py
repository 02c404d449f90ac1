"""Text tables of ``results.json`` with the paper's figure beside each of ours."""

from __future__ import annotations

from typing import Any

from evalstop.experiments.paper import PAPER, PaperValue
from evalstop.experiments.tables import format_table

__all__ = ["render_report"]


def _ours(row: dict[str, Any], key: str, *, percent: bool) -> str:
    mean, ci = row.get(key), row.get(f"{key}_ci95")
    if mean is None:
        return "n/a"
    if percent:
        text = f"{mean:+.1f}%"
        return text if ci is None else f"{text} ±{ci:.1f}"
    text = f"{100 * mean:.1f}%"
    return text if ci is None else f"{text} ±{100 * ci:.1f}"


def _paper(value: PaperValue, *, percent: bool) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if isinstance(value, tuple):
        low, high = value
        return f"{low:+.1f}% to {high:+.1f}%" if percent else f"{low:.0%} to {high:.0%}"
    return f"{value:+.1f}%" if percent else f"{100 * value:.1f}%"


def _main(results: dict[str, Any]) -> str:
    header = ["system", "metric", "ours (mean ±95% CI)", "paper"]
    rows: list[list[str]] = []
    metrics = (
        ("jct_change_pct", True),
        ("wasted_change_pct", True),
        ("precision", False),
        ("recall", False),
        ("fpr", False),
    )
    for row in results["main"]:
        paper = PAPER["main"].get(row["system"], {})
        for key, percent in metrics:
            rows.append(
                [
                    row["system"],
                    key,
                    _ours(row, key, percent=percent),
                    _paper(paper.get(key), percent=percent),
                ]
            )
    return format_table(header, rows, title="Main result (changes against srtf-est alone)")


def _composability(results: dict[str, Any]) -> str:
    span = PAPER["composability"]["any"]["jct_change_pct"]
    rows = [
        [
            row["base"],
            _ours(row, "jct_change_pct", percent=True),
            _ours(row, "wasted_change_pct", percent=True),
            _paper(span, percent=True),
        ]
        for row in results["composability"]
    ]
    return format_table(
        ["base", "JCT change", "wasted change", "paper (all bases)"],
        rows,
        title="Composability: EvalStop over each base, against the base alone",
    )


def _sweep(
    results: dict[str, Any], table: str, key: str, label: str, title: str, paper: dict[str, str]
) -> str:
    rows = [
        [
            f"{row[key]:g}",
            row["detector"],
            _ours(row, "precision", percent=False),
            _ours(row, "recall", percent=False),
            _ours(row, "fpr", percent=False),
            paper.get(f"{row[key]:g}/{row['detector']}", "-"),
        ]
        for row in results[table]
    ]
    return format_table(
        [label, "detector", "precision", "recall", "FPR", "paper"], rows, title=title
    )


def _k(results: dict[str, Any]) -> str:
    rows = [
        [
            str(row["k"]),
            _ours(row, "precision", percent=False),
            _ours(row, "recall", percent=False),
            _ours(row, "fpr", percent=False),
            _ours(row, "jct_change_pct", percent=True),
            "n/a" if row["delay_evals"] is None else f"{row['delay_evals']:.2f}",
            "best balance" if row["k"] == 2 else "-",
        ]
        for row in results["k"]
    ]
    return format_table(
        ["k", "precision", "recall", "FPR", "JCT change", "delay (evals)", "paper"],
        rows,
        title="Threshold sweep: EvalStop(k) over srtf-est",
    )


def render_report(results: dict[str, Any]) -> str:
    """All five tables, separated by blank lines."""
    noise_paper = {"0.01/evalstop": "P 100%", "0.12/evalstop": "P 81%"}
    rate_paper = {f"{s:g}/stopat-0.65": f"P = {s:.0%}" for s in (0.2, 0.4, 0.6, 0.8)}
    rate_paper.update({f"{s:g}/evalstop": "P >= 89%" for s in (0.2, 0.4, 0.6, 0.8)})
    s = results["settings"]
    header = (
        f"evalstop reproduce: {s['seeds']} seeds a cell, {s['jobs']} jobs on {s['gpus']} GPUs, "
        f"load {s['load']}, sigma {s['noise']}, hacking share {s['hacking_share']}"
    )
    parts = [
        header,
        _main(results),
        _composability(results),
        _sweep(
            results, "noise", "sigma", "sigma", "Noise sweep (detectors over srtf-est)", noise_paper
        ),
        _sweep(
            results, "base_rate", "hacking_share", "hacking share", "Base-rate sweep", rate_paper
        ),
        _k(results),
    ]
    return "\n\n".join(parts)
