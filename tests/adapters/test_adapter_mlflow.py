"""``evalstop watch --mlflow`` against a real MLflow tracking store (spec WCH-8).

The store is a SQLite file in the test's temporary folder: nothing is served or downloaded.
Skips without mlflow (``pip install 'evalstop[mlflow]'``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalstop.cli import main

mlflow_tracking = pytest.importorskip("mlflow.tracking")

PEAK = [0.1, 0.5, 0.7, 0.6, 0.5, 0.4]  # best at step 2, declines at 3 and 4: stop at 4 (k=2)
RISING = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]


def test_mlflow_runs_are_watched_and_tagged_wch_8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """WCH-8: the runs of an experiment are followed; a stopped run is printed and tagged."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = mlflow_tracking.MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("demo")
    runs = {}
    for name, curve in [("peak", PEAK), ("rising", RISING)]:
        run = client.create_run(experiment, run_name=name)
        runs[name] = run.info.run_id
        for step, value in enumerate(curve[:3]):
            client.log_metric(run.info.run_id, "score", value, step=step)
    options = ["--mlflow", uri, "--experiment", "demo", "--metric", "score", "--once", "--k", "2"]
    options += ["--state", str(tmp_path / "s.db")]
    capsys.readouterr()
    assert main(["watch", *options]) == 0
    assert capsys.readouterr().out == ""
    for name, curve in [("peak", PEAK), ("rising", RISING)]:
        for step, value in list(enumerate(curve))[3:]:
            client.log_metric(runs[name], "score", value, step=step)
    assert main(["watch", *options]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["run"] == f"mlflow:{runs['peak']}"
    assert (body["name"], body["path"]) == ("peak", None)
    assert (body["stop_step"], body["best_step"], body["best_value"]) == (4, 2, 0.7)
    tags = client.get_run(runs["peak"]).data.tags
    assert json.loads(tags["evalstop.stop"]) == body
    assert "evalstop.stop" not in client.get_run(runs["rising"]).data.tags
    code = main(["watch", *options[:3], "nope", *options[4:]])
    captured = capsys.readouterr()
    assert (code, captured.out) == (0, "")
    assert "no experiment named 'nope'" in captured.err
