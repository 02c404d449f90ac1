"""MLflow runs as ``evalstop watch`` sources (spec ``WCH-8``).

Install with ``pip install 'evalstop[mlflow]'``. :class:`MlflowRuns` (a
:class:`~evalstop.watch.source.RunSource`) lists the runs still running (status ``RUNNING``:
a finished, failed or killed run is left alone) of one experiment (or of every active
experiment) of a tracking URI at each poll; each run is followed
through its metric history (``MlflowClient.get_metric_history``). MLflow has no read offset,
so each poll fetches a run's history and folds only the points after the last step folded
(position: that step). A stopped run gets the tag ``evalstop.stop`` holding the decision.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from evalstop.watch.source import Point, Run, SourceError

__all__ = ["STOP_TAG", "MlflowRuns", "MlflowSource"]

STOP_TAG = "evalstop.stop"
"""The tag set on a stopped MLflow run: the decision as JSON."""

_PREFIX = "mlflow:"


def _client(uri: str) -> Any:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise ImportError("MLflow did not import: pip install 'evalstop[mlflow]'") from None
    return MlflowClient(tracking_uri=uri)


class MlflowSource:
    """One metric of one MLflow run; position: the last step folded."""

    def __init__(self, client: Any, run_id: str, metric: str) -> None:
        self._client, self._run_id, self._metric = client, run_id, metric

    @property
    def key(self) -> str:
        return f"{_PREFIX}{self._run_id}/{self._metric}"

    def read(self, position: Any) -> tuple[Sequence[Point], Any]:
        last = -1 if position is None else int(position)
        try:
            history = self._client.get_metric_history(self._run_id, self._metric)
        except Exception as error:  # MlflowException and transport errors alike
            raise SourceError(f"{self.key}: cannot read the metric history ({error})") from None
        points: list[Point] = []
        for metric in sorted(history, key=lambda m: (int(m.step), int(m.timestamp))):
            step = int(metric.step)
            if step > last:
                points.append(Point(step, float(metric.value)))
                last = step
        return points, last


class MlflowRuns:
    """The runs of a tracking URI (``experiment`` None: every active experiment)."""

    def __init__(self, uri: str, experiment: str | None, metric: str) -> None:
        self._client = _client(uri)
        self._uri, self._experiment, self._metric = uri, experiment, metric

    def _experiment_ids(self) -> list[str]:
        if self._experiment is None:
            return [e.experiment_id for e in self._client.search_experiments()]
        found = self._client.get_experiment_by_name(self._experiment)
        if found is None:
            raise SourceError(f"{self._uri}: no experiment named {self._experiment!r}")
        return [found.experiment_id]

    def runs(self) -> tuple[list[Run], list[str]]:
        """The runs, and one problem line if the server cannot be listed."""
        try:
            ids = self._experiment_ids()
            runs: list[Any] = []
            token: str | None = None
            while ids:
                page = self._client.search_runs(ids, page_token=token)
                runs.extend(page)
                token = page.token
                if not token:
                    break
        except SourceError as error:
            return [], [str(error)]
        except Exception as error:  # MlflowException and transport errors alike
            return [], [f"{self._uri}: cannot list runs ({error})"]
        return [
            Run(
                f"{_PREFIX}{r.info.run_id}",
                str(r.info.run_name or r.info.run_id),
                None,
                (MlflowSource(self._client, r.info.run_id, self._metric),),
            )
            for r in sorted(runs, key=lambda r: r.info.run_id)
            if r.info.status == "RUNNING"
        ], []

    def stop(self, decision: Mapping[str, Any]) -> None:
        """Tag the stopped run with the decision (another source's run is left alone)."""
        run = str(decision["run"])
        if run.startswith(_PREFIX):
            body = json.dumps(dict(decision), allow_nan=False)
            self._client.set_tag(run.removeprefix(_PREFIX), STOP_TAG, body)
