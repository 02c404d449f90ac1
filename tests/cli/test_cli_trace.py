"""``evalstop simulate --trace`` (PHL-4) and the bad inputs it turns into one line (CLI-1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstop.cli import main

WINDOW = ["--trace-window", "2017-10-02T00:00..2017-10-02T03:00"]


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_phl4_simulate_philly_json_has_the_summary_and_trace(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """PHL-4: the usual summary keys plus ``trace``; the cluster sized to the window's load."""
    code, out, _ = run_cli(capsys, "simulate", "--trace", "philly", *WINDOW, "--json")
    assert code == 0
    summary = json.loads(out)
    synthetic = json.loads(run_cli(capsys, "simulate", "--jobs", "20", "--json")[1])
    assert set(summary) == set(synthetic) | {"trace"}
    trace = summary["trace"]
    assert trace["source"] == "philly" and trace["window"] == WINDOW[1]
    assert trace["gpus"] == summary["gpus"] and trace["gpus"] % 8 == 0
    assert trace["offered_load"] <= 0.9 and trace["time_scale"] == 1.0
    assert trace["jobs"] == summary["jobs"] > 20
    assert trace["rule"]["hacking_share"] == 0.6 and trace["tenants"] >= 2


def test_phl4_a_csv_with_its_own_columns_fitted_to_given_gpus(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """PHL-4: --columns maps a CSV's headers; --gpus fits it (wide jobs capped), --jobs cuts."""
    path = tmp_path / "t.csv"
    rows = [f"job-{i},{60 * i},{(1, 2, 16)[i % 3]},{600 + 37 * i},team{i % 2}" for i in range(30)]
    path.write_text("name,submit,n,secs,vc\n" + "\n".join(rows) + "\n", encoding="utf-8")
    columns = "id=name,arrival=submit,gpus=n,duration=secs,tenant=vc"
    args = ["--trace", str(path), "--columns", columns, "--gpus", "8", "--jobs", "24"]
    code, out, _ = run_cli(capsys, "simulate", *args, "--policy", "evalstop+fair-share", "--json")
    assert code == 0
    trace = json.loads(out)["trace"]
    assert (trace["jobs"], trace["gpus"], trace["capped_jobs"]) == (24, 8, 8)
    assert trace["offered_load"] == pytest.approx(0.9, rel=0.02)
    assert trace["tenants"] == 2


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--trace", "nope.csv"], "--trace nope.csv: no such file"),
        (["--trace-window", "1d..2d"], "--trace-window needs --trace"),
        (["--trace", "philly", "--trace-window", "2017-10-09..2017-10-02"], "must be after"),
        (["--trace", "philly", "--trace-window", "soon"], "START..END"),
        (["--trace", "philly", "--columns", "gpus=n"], "needs none"),
        (["--trace", "philly", "--arrival-rate", "3"], "--arrival-rate does not apply"),
        (["--trace", "philly", "--trace-tenants", "zzz"], "no job left"),
    ],
)
def test_phl4_bad_trace_options_are_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    """PHL-4, CLI-1: each bad trace option is exit 2 and one line naming it."""
    code, out, err = run_cli(capsys, "simulate", *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_phl4_a_bad_cell_names_file_row_and_field(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """PHL-4, CLI-1: a bad row of a CSV trace is one line with the file, row and field."""
    path = tmp_path / "bad.csv"
    path.write_text("arrival,gpus,duration\n0,1,60\n5,lots,60\n", encoding="utf-8")
    code, _, err = run_cli(capsys, "simulate", "--trace", str(path))
    assert code == 2
    assert f"{path}, row 3, field 'gpus'" in err and err.count("\n") == 1
