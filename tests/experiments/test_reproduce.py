"""The reproduction pipeline (REP-1 to REP-4) on small settings."""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from evalstop.cli import main
from evalstop.core.errors import UnknownNameError
from evalstop.core.registry import make_policy
from evalstop.experiments import plotting
from evalstop.experiments.grid import (
    BASE_RATES,
    DENSITIES,
    DENSITY_KS,
    KS,
    PAPER_DETECTORS,
    PAPER_NOISES,
)
from evalstop.experiments.paper import plots, runner
from evalstop.experiments.paper.figures import PAPER_FIGURES
from evalstop.experiments.paper.plan import (
    BASES,
    MAIN_SYSTEMS,
    Settings,
    Sim,
    decides_on_eval_scores,
    detection_only,
    plan,
    reads_eval_scores,
)
from evalstop.experiments.paper.results import Results, build_results, results_json
from evalstop.experiments.paper.runner import Drawn, run_audits, run_group, run_plan
from evalstop.experiments.paper.stats import estimate
from evalstop.sim.run import simulate
from evalstop.sim.workload import generate_sweep

SMALL = Settings(seeds=2, jobs=40, gpus=16)


def _build(settings: Settings, workers: int = 1) -> Results:
    drawn: Drawn = {}
    figures = run_plan(settings, plan(settings), workers=workers, drawn=drawn)
    return build_results(settings, figures, run_audits(settings, drawn))


@pytest.fixture(scope="module")
def small_results() -> dict[str, Any]:
    return results_json(_build(SMALL))


def test_rep1_every_experiment_and_cell_is_there(small_results: dict[str, Any]) -> None:
    """REP-1: five experiments in each world, every swept value and detector, every seed."""
    assert set(small_results["worlds"]) == {"paper", "calibrated"}
    for r in small_results["worlds"].values():
        assert [row["system"] for row in r["main"]] == list(MAIN_SYSTEMS)
        assert [row["base"] for row in r["composability"]] == list(BASES)
        assert len(r["noise"]) == len(PAPER_NOISES) * len(PAPER_DETECTORS)
        assert [row["sigma"] for row in r["noise"]] == [
            s for s in PAPER_NOISES for _ in PAPER_DETECTORS
        ]
        assert len(r["base_rate"]) == len(BASE_RATES) * len(PAPER_DETECTORS)
        assert [row["k"] for row in r["k"]] == list(KS)
    sims = plan(SMALL)
    assert len(sims) == len(set(sims))
    assert {sim.seed for sim in sims} == {0, 1}


def test_rep1_score_blind_systems_share_their_noise_cells() -> None:
    """REP-1: eval noise changes nothing a base policy reads, so its figures are equal at
    every sigma and the plan runs it once; a wrapper's do change."""
    assert not reads_eval_scores("srtf-est") and not reads_eval_scores("loss-aware")
    assert reads_eval_scores("evalstop+srtf-est") and reads_eval_scores("stopat-0.65+fifo")
    settings = Settings(seeds=1, jobs=40, gpus=16)
    for system in ("srtf-est", "loss-aware"):
        sims = [Sim("paper", sigma, 0.6, 10, 0, system, 2) for sigma in (0.01, 0.12)]
        figures = [run_group((settings, (sim,)))[0][1] for sim in sims]
        np.testing.assert_equal(attrs.astuple(figures[0]), attrs.astuple(figures[1]))
        assert Sim.at(settings, "paper", 0, system, noise=0.12).noise == 0.02
    # a stopping wrapper keeps the best *observed* checkpoint: noise matters even to stopat
    for system in ("evalstop+srtf-est", "stopat-0.65+srtf-est"):
        pair = [
            run_group((settings, (Sim("paper", sigma, 0.6, 10, 0, system, 2),)))[0][1]
            for sigma in (0.0, 0.3)
        ]
        assert pair[0].quality_retained_rlhf != pair[1].quality_retained_rlhf


def test_rep12_which_systems_decide_on_eval_scores() -> None:
    """REP-12: a base alone and a stopat or lossplateau wrapper over a base decide without
    eval scores; an EvalStop or noise-aware wrapper, or a wrapper over a wrapper, does not."""
    for system in ("srtf-est", "stopat-0.65+srtf-est", "stopat+fifo", "lossplateau+las"):
        assert not decides_on_eval_scores(system), system
    for system in ("evalstop+srtf-est", "noise-aware+fifo", "stopat-0.65+evalstop+fifo"):
        assert decides_on_eval_scores(system), system


def test_rep2_same_results_for_any_worker_count() -> None:
    """REP-2: results.json is byte-identical with one worker and with two."""
    settings = Settings(seeds=2, jobs=30, gpus=16)
    one = results_json(_build(settings, workers=1))
    two = results_json(_build(settings, workers=2))
    assert json.dumps(one, sort_keys=True) == json.dumps(two, sort_keys=True)


def test_rep2_a_family_group_equals_its_simulations_one_by_one() -> None:
    """REP-2, WRK-8, REP-12: a group runs a workload family (its noise levels drawn together;
    a wrapper whose rule reads no eval score simulated once); every simulation's figures equal
    those of the simulation run alone."""
    settings = Settings(seeds=1, jobs=40, gpus=16)
    systems = ("evalstop+srtf-est", "stopat-0.65+fifo", "lossplateau+srtf-est")
    family = tuple(
        Sim("paper", sigma, 0.6, 10, 0, system, 2)
        for sigma in (0.01, 0.05, 0.12)
        for system in systems
    )
    together = run_group((settings, family))
    assert [sim for sim, _ in together] == list(family)
    for sim, figures in together:
        alone = run_group((settings, (sim,)))[0][1]
        np.testing.assert_equal(attrs.astuple(figures), attrs.astuple(alone))
    for system in systems:  # the noise levels change what is kept: the check is not vacuous
        retained = {f.quality_retained_rlhf for sim, f in together if sim.system == system}
        assert len(retained) > 1, system


def test_rep11_a_group_runs_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    """REP-11: the collector is off while a group draws its workloads and runs its systems,
    and on again after it, also when the group raises."""
    seen: list[tuple[str, bool]] = []

    def spy(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def spied(*args: Any, **kwargs: Any) -> Any:
            seen.append((name, gc.isenabled()))
            return function(*args, **kwargs)

        return spied

    for name in ("generate_sweep", "simulate", "job_outcomes"):
        monkeypatch.setattr(runner, name, spy(name, getattr(runner, name)))
    settings = Settings(seeds=1, jobs=30, gpus=16)
    sim = Sim("paper", 0.02, 0.6, 10, 0, "lossplateau+srtf-est", 2)
    assert gc.isenabled()
    run_group((settings, (sim,)))
    assert seen == [("generate_sweep", False), ("simulate", False), ("job_outcomes", False)]
    assert gc.isenabled()
    with pytest.raises(UnknownNameError):
        run_group((settings, (attrs.evolve(sim, system="no-such-system"),)))
    assert gc.isenabled()


def test_rep7_worlds_and_leakage_in_results(small_results: dict[str, Any]) -> None:
    """REP-7: a top-level ``worlds`` object keyed paper and calibrated, each with the five
    tables, its parameters and its leakage audit; the paper's figures once, from PAPER_FIGURES."""
    for name, world in small_results["worlds"].items():
        assert world["world"]["name"] == name
        leakage = world["leakage"]
        for key in ("label_auc_max", "length_error_first_checkpoint", "length_error_estimate"):
            assert isinstance(leakage[key], float)
        assert 0.5 <= leakage["label_auc_max"] <= 1.0
        for row in world["main"]:
            assert "rlhf_gpu_time_change_pct" in row and "wasted_change_pct" in row
    assert (
        small_results["paper"]["main"][1]["jct_change_pct"]
        == PAPER_FIGURES.row("evalstop+srtf-est").jct_change_pct
    )
    assert small_results["version"] == 2


def test_rep8_density_sweep(small_results: dict[str, Any]) -> None:
    """REP-8: the paper world's density sweep: EvalStop at every sigma and k in DENSITY_KS,
    at each planned density; rows report detection only (no base: changes are null)."""
    rows = small_results["worlds"]["paper"]["density"]
    cells = {(row["evals_per_run"], row["sigma"], row["k"]) for row in rows}
    assert {(e, s, 2) for e in DENSITIES for s in PAPER_NOISES} <= cells
    assert {(e, 0.02, k) for e in DENSITIES for k in DENSITY_KS} <= cells
    assert all(row["base"] is None and row["jct_change_pct"] is None for row in rows)
    assert small_results["worlds"]["calibrated"]["density"] == []


def test_rep3_mean_and_t_interval_by_hand() -> None:
    """REP-3: [1, 2, 3] -> mean 2, half-width t(0.975, 2) * 1 / sqrt(3); NaN left out."""
    est = estimate([1.0, 2.0, math.nan, 3.0])
    assert est.n == 3
    assert est.mean == 2.0
    assert est.ci95 == pytest.approx(4.303 / math.sqrt(3))
    assert math.isnan(estimate([5.0]).ci95)
    assert estimate([]).n == 0


def test_rep3_changes_are_paired_per_seed(small_results: dict[str, Any]) -> None:
    """REP-3: the base against itself is exactly 0; EvalStop's change is the seed mean."""
    main_rows = small_results["worlds"]["paper"]["main"]
    base = main_rows[0]
    assert base["jct_change_pct"] == 0.0 and base["wasted_change_pct"] == 0.0
    sims = [
        Sim.at(SMALL, "paper", seed, system)
        for seed in (0, 1)
        for system in ("srtf-est", "evalstop+srtf-est")
    ]
    figures = run_plan(SMALL, sims)
    changes = []
    for seed in (0, 1):
        pick = {s.system: figures[s] for s in sims if s.seed == seed}
        changes.append(100 * (pick["evalstop+srtf-est"].jct_mean / pick["srtf-est"].jct_mean - 1))
    assert main_rows[1]["jct_change_pct"] == pytest.approx(sum(changes) / 2, abs=1e-5)


def test_rep4_cli_writes_results_and_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REP-4: tables with the paper beside ours; results.json; plots or a one-line hint."""
    out = tmp_path / "out"
    code = main(
        [
            "reproduce",
            "--quick",
            "--seeds",
            "1",
            "--jobs",
            "30",
            "--out",
            str(out),
            "--workers",
            "1",
            "--no-progress",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert "paper" in printed and "-9.4%" in printed and "98.3%" in printed
    assert (out / "report.txt").read_text().startswith("evalstop reproduce:")
    assert "== world paper" in printed and "== world calibrated" in printed
    assert "Leakage audit" in printed and "Evaluation density" in printed
    results = json.loads((out / "results.json").read_text())
    for world in results["worlds"].values():
        for key in ("main", "composability", "noise", "base_rate", "k"):
            assert world[key]
        for row in world["main"]:
            for key in ("system", "jct_change_pct", "wasted_change_pct", "precision", "fpr"):
                assert key in row
            for key in ("precision", "recall", "fpr"):
                assert row[key] is None or 0.0 <= row[key] <= 1.0
    if plotting.plots_available():
        for world in ("paper", "calibrated"):
            for name in plots.plot_names(world):
                if name.startswith("density") and world != "paper":
                    continue
                assert (out / f"{name}.png").stat().st_size > 1000
    else:
        assert plotting.PLOTS_HINT in printed


def test_rep4_without_matplotlib_one_line_says_how(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """REP-4: the tables and JSON still come out."""
    from evalstop.cli import reproduce

    monkeypatch.setattr(reproduce, "plots_available", lambda: False)
    code = main(
        [
            "reproduce",
            "--seeds",
            "1",
            "--jobs",
            "20",
            "--out",
            str(tmp_path),
            "--workers",
            "1",
            "--no-progress",
        ]
    )
    printed = capsys.readouterr().out
    assert code == 0
    assert (tmp_path / "results.json").exists()
    assert printed.count(plotting.PLOTS_HINT) == 1
    assert not list(tmp_path.glob("*.png"))


def test_rep7_world_option_runs_one_world(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """REP-7: --world calibrated runs that world only, without the paper's column."""
    args = ["reproduce", "--seeds", "1", "--jobs", "20", "--workers", "1", "--no-progress"]
    code = main([*args, "--world", "calibrated", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "== world calibrated" in printed and "== world paper" not in printed
    assert "-9.4%" not in printed
    assert list(json.loads((tmp_path / "results.json").read_text())["worlds"]) == ["calibrated"]


@pytest.mark.parametrize(
    "args",
    [["--seeds", "0"], ["--jobs", "0"], ["--workers", "0"], ["--world", "mars"]],
)
def test_rep4_bad_options_are_cli_errors(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """REP-4, CLI-1: one line, exit 2."""
    assert main(["reproduce", *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith("evalstop: error:") and err.count("\n") == 1


def test_rep4_out_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """REP-4, CLI-1: --out naming a file is refused before any work."""
    target = tmp_path / "file.txt"
    target.write_text("x")
    assert main(["reproduce", "--out", str(target)]) == 2
    assert "not a directory" in capsys.readouterr().err


@pytest.mark.parametrize("workers", [1, 2])
def test_rep13_the_audit_reads_the_workloads_the_plan_drew(
    workers: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """REP-13, REP-2: the audit of the default workloads the plan's groups drew draws none
    again, and equals run_audits drawing its own; the figures are unchanged."""
    settings = Settings(seeds=2, jobs=60, gpus=16)
    sims = plan(settings)
    alone = (run_plan(settings, sims), run_audits(settings))
    redrawn: list[object] = []
    draw = runner._workload

    def counted(*args: Any) -> Any:
        redrawn.append(args)
        return draw(*args)

    monkeypatch.setattr(runner, "_workload", counted)
    drawn: Drawn = {}
    figures = run_plan(settings, sims, workers=workers, drawn=drawn)
    assert sorted(drawn) == [(w, seed) for w in ("calibrated", "paper") for seed in (0, 1)]
    audits = run_audits(settings, drawn)
    assert redrawn == []
    assert repr(audits) == repr(alone[1]) and repr(figures) == repr(alone[0])
    few = attrs.evolve(settings, worlds=("paper",))  # a plan without the audited family
    drawn = {}
    run_plan(few, [s for s in plan(few) if s.hacking_share != few.hacking_share], drawn=drawn)
    assert drawn == {}
    assert repr(run_audits(few, drawn)) == repr({"paper": alone[1]["paper"]})
    assert len(redrawn) == few.seeds


def test_rep14_density_cells_folded_equal_simulated(monkeypatch: pytest.MonkeyPatch) -> None:
    """REP-14, REP-8: the plan folds exactly the density-sweep cells (EvalStop at 20 and 40
    evaluations, paper world), their platform figures are NaN, their detection figures those of
    the simulation (the means over jobs to 1e-12), and results.json is the same as when every
    cell is simulated."""
    settings = Settings(seeds=2, jobs=80, gpus=16, worlds=("paper",))
    sims = plan(settings)
    folded = [sim for sim in sims if detection_only(sim)]
    assert {(sim.system, sim.evals) for sim in folded} == {
        ("evalstop+srtf-est", evals) for evals in DENSITIES if evals != 10
    }
    assert not any(detection_only(s) for s in plan(attrs.evolve(settings, worlds=("calibrated",))))
    figures = run_plan(settings, sims)
    monkeypatch.setattr(runner, "detection_only", lambda sim: False)
    simulated = run_plan(settings, sims)
    platform = ("jct_mean", "jct_p95", "wasted_gpu_time", "rlhf_gpu_time", "utilization")
    means = ("quality_retained_rlhf", "delay_gpu_hours")
    for sim in folded:
        mine, theirs = attrs.asdict(figures[sim]), attrs.asdict(simulated[sim])
        assert all(math.isnan(mine.pop(name)) for name in platform)
        for name in means:
            np.testing.assert_allclose(mine.pop(name), theirs.pop(name), rtol=1e-12)
        np.testing.assert_equal(mine, {k: v for k, v in theirs.items() if k not in platform})
    assert sum(figures[sim].stopped for sim in folded) > 0
    assert all(repr(figures[s]) == repr(simulated[s]) for s in sims if not detection_only(s))
    audits = run_audits(settings)
    one = json.dumps(results_json(build_results(settings, figures, audits)))
    assert one == json.dumps(results_json(build_results(settings, simulated, audits)))


def test_rep16_density_groups_draw_rlhf_jobs_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """REP-16, WRK-9: a group of density cells alone draws its RLHF jobs only, a group with
    any other simulation every job, and the figures equal those of drawing every job."""
    settings = Settings(seeds=1, jobs=80, gpus=16, worlds=("paper",))
    groups = runner._groups(settings, plan(settings))
    drawn: list[set[str]] = []
    draw = runner._workloads

    def kinds(*args: Any, **kwargs: Any) -> Any:
        out = draw(*args, **kwargs)
        drawn.append({job.spec.kind.value for jobs, _, _ in out for job in jobs})
        return out

    monkeypatch.setattr(runner, "_workloads", kinds)
    figures = [run_group(group) for group in groups]
    folds = [all(detection_only(sim) for sim in sims) for _, sims in groups]
    assert sorted(folds) == [False, True, True]
    assert [len(d) == 1 for d in drawn] == folds and {"rlhf"} in drawn
    monkeypatch.setattr(
        runner, "sweep_jobs", lambda c, seed, _kind: tuple(w.jobs for w in generate_sweep(c, seed))
    )
    assert repr([run_group(group) for group in groups]) == repr(figures)


def _share_blind(job: Any) -> str:
    """What a system reading no eval score sees of ``job`` (bit for bit, by repr)."""
    return repr([job.spec, *((o.step, o.loss, o.proxy_reward, o.kl) for o in job.observations)])


def test_rep15_a_share_changes_no_report_an_eval_blind_system_reads() -> None:
    """REP-15, CRV-6: the workloads of a group at other hacking shares differ in labels,
    quality and eval scores only: every job's spec, steps, losses, proxy rewards and KL are
    equal bit for bit (so a system reading no eval score, REP-12, decides the same on each)."""
    for world in ("paper", "calibrated"):
        sweep = generate_sweep(
            [
                Settings(seeds=1, jobs=200).config(Sim.at(SMALL, world, 0, "srtf-est", share=s))
                for s in (0.0, 0.2, 0.6, 1.0)
            ],
            4,
        )
        first = [_share_blind(job) for job in sweep[0].jobs]
        for workload in sweep[1:]:
            assert [_share_blind(job) for job in workload.jobs] == first
        assert sum(j.truth.hacking for j in sweep[0].jobs) < sum(
            j.truth.hacking for j in sweep[-1].jobs
        )


def test_rep15_a_group_across_shares_equals_its_simulations_one_by_one() -> None:
    """REP-15, REP-12, REP-2: a group spans hacking shares and noise levels; every
    simulation's figures (eval-blind systems simulated once a group) equal those of the
    simulation run alone, and the shares do change them."""
    settings = Settings(seeds=1, jobs=60, gpus=16)
    systems = ("srtf-est", "stopat-0.65+srtf-est", "lossplateau+srtf-est", "evalstop+las")
    cells = [(0.2, 0.02), (0.6, 0.02), (0.6, 0.12), (0.8, 0.05)]
    group = tuple(
        sorted(
            Sim("paper", sigma, share, 10, 0, system, 2)
            for share, sigma in cells
            for system in systems
        )
    )
    simulated: list[str] = []

    def counted(workload: Any, policy: Any, cluster: Any) -> Any:
        simulated.append(policy.name)
        return simulate(workload, policy, cluster)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runner, "simulate", counted)
        together = run_group((settings, group))
    once = ["srtf-est", "stopat-0.65+srtf-est", "lossplateau+srtf-est"]  # then once a cell
    expected = [*once, *["evalstop+las"] * 4]
    assert sorted(simulated) == sorted(make_policy(system).name for system in expected)
    assert [sim for sim, _ in together] == list(group)
    for sim, figures in together:
        alone = run_group((settings, (sim,)))[0][1]
        np.testing.assert_equal(attrs.astuple(figures), attrs.astuple(alone))
    for system in systems[:3]:  # the shares change the figures: the check is not vacuous
        wasted = {f.wasted_gpu_time for sim, f in together if sim.system == system}
        assert len(wasted) > 1, system
