"""The monitor's state as JSON (spec ``MON-11``): encode, and validate before rebuilding.

:func:`encode` turns a monitor's parts into JSON-compatible values; :func:`decode` checks a
saved document and returns the parts to rebuild it from. Neither touches a
:class:`~evalstop.live.monitor.Monitor`: the monitor owns its state, the codec only its format.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

import attrs
from attrs import AttrsInstance

from evalstop.core.detectors import Detector, Watch
from evalstop.core.registry import DETECTOR_TYPES
from evalstop.live.state import JobKey, JobState, Mode, check_key, check_score

__all__ = ["FORMAT", "Decoded", "decode", "encode"]

FORMAT: Final = "evalstop.live.monitor/1"
"""The ``format`` tag of a serialised monitor."""


@attrs.frozen
class Decoded:
    """A saved monitor's parts, checked: what :meth:`Monitor.from_dict` rebuilds from."""

    detector: Detector[Any]
    mode: Mode
    next_serial: int
    jobs: list[tuple[JobKey, JobState]]


def encode(
    detector: Detector[Any], mode: Mode, next_serial: int, jobs: Iterable[tuple[JobKey, JobState]]
) -> dict[str, Any]:
    """The whole state as JSON-compatible values (non-finite numbers raise ``ValueError``)."""
    return {
        "format": FORMAT,
        "mode": mode,
        "detector": _detector_to_dict(detector),
        "next_serial": next_serial,
        "jobs": [_job_to_dict(key, state) for key, state in jobs],
    }


def decode(data: Mapping[str, Any], detector: Detector[Any] | None) -> Decoded:
    """Check a saved document and return its parts; ``ValueError`` when it is malformed.

    Without ``detector`` the saved built-in detector is rebuilt from its parameters; with one,
    its name must equal the saved name (a different rule would not resume the same decisions).
    """
    try:
        return _decode(data, detector)
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError(f"not a saved evalstop monitor: {error!r}") from None


def _decode(data: Mapping[str, Any], detector: Detector[Any] | None) -> Decoded:
    if data.get("format") != FORMAT:
        raise ValueError(f"not a saved evalstop monitor: format is not {FORMAT!r}")
    saved = data["detector"]
    if detector is None:
        detector = _detector_from_dict(saved)
    elif detector.name != saved["name"]:
        raise ValueError(
            f"detector {detector.name!r} differs from the saved detector {saved['name']!r}"
        )
    mode = data["mode"]
    if mode not in ("max", "min"):
        raise ValueError(f"not a saved evalstop monitor: mode must be 'max' or 'min', got {mode!r}")
    template = detector.initial()
    jobs: list[tuple[JobKey, JobState]] = []
    keys: set[JobKey] = set()
    for entry in data["jobs"]:
        key = check_key(entry["job"])
        if key in keys:
            raise ValueError(f"not a saved evalstop monitor: job {key!r} appears twice")
        keys.add(key)
        jobs.append((key, _job_from_dict(entry, template)))
    next_serial = data["next_serial"]
    if not isinstance(next_serial, int) or any(s.serial >= next_serial for _, s in jobs):
        raise ValueError("not a saved evalstop monitor: bad next_serial")
    return Decoded(detector, mode, next_serial, jobs)


def _detector_to_dict(detector: Detector[Any]) -> dict[str, Any]:
    kind = type(detector)
    builtin = DETECTOR_TYPES.get(kind.__name__) is kind
    params = attrs.asdict(cast(AttrsInstance, detector)) if builtin else {}
    return {"name": detector.name, "type": kind.__name__ if builtin else None, "params": params}


def _detector_from_dict(saved: Mapping[str, Any]) -> Detector[Any]:
    kind = DETECTOR_TYPES.get(str(saved.get("type")))
    if kind is None:
        raise ValueError(
            f"the saved detector {saved.get('name')!r} is not built in: pass it as detector="
        )
    detector: Detector[Any] = kind(**saved["params"])
    if detector.name != saved["name"]:
        raise ValueError(f"saved detector {saved['name']!r} rebuilds as {detector.name!r}")
    return detector


def _plain(value: object) -> object:
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot serialise a non-finite value {value!r}")
        return value
    raise TypeError(f"cannot serialise detector state value {value!r}")


def _rule_to_plain(rule: object) -> object:
    if attrs.has(type(rule)):
        fields = attrs.fields(cast("type[AttrsInstance]", type(rule)))
        return {f.name: _plain(getattr(rule, f.name)) for f in fields}
    return _plain(rule)


def _rule_from_plain(template: object, data: object) -> object:
    kind = type(template)
    if attrs.has(kind):
        if not isinstance(data, dict):
            raise TypeError(f"detector state must be an object, got {data!r}")
        return kind(**data)
    if template is None:
        if data is not None:
            raise TypeError(f"detector state must be null, got {data!r}")
        return None
    if type(data) is not kind:
        raise TypeError(f"detector state must be a {kind.__name__}, got {data!r}")
    return data


def _job_to_dict(key: JobKey, state: JobState) -> dict[str, Any]:
    watch = state.watch
    return {
        "job": key,
        "serial": state.serial,
        "last_step": state.last_step,
        "seen": state.seen,
        "rule": _rule_to_plain(watch.rule),
        "evals": watch.evals,
        "best_step": watch.best_step,
        "best_score": _plain(watch.best_score),
        "fired_step": watch.fired_step,
    }


def _int(value: object, name: str, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return value


def _job_from_dict(entry: Mapping[str, Any], template: object) -> JobState:
    best_score = entry["best_score"]
    if best_score is not None:
        best_score = check_score(best_score)
    watch: Watch[Any] = Watch(
        _rule_from_plain(template, entry["rule"]),
        _int(entry["evals"], "evals"),
        _int(entry["best_step"], "best_step", optional=True),
        best_score,
        _int(entry["fired_step"], "fired_step", optional=True),
    )
    return JobState(
        _int(entry["serial"], "serial"),
        _int(entry["last_step"], "last_step"),
        _int(entry["seen"], "seen"),
        watch,
    )
