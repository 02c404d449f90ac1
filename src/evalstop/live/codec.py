"""The monitor's state as JSON (spec ``MON-11``): encode, and validate before rebuilding.

:func:`encode` turns a monitor's parts into JSON-compatible values; :func:`decode` checks a
saved document and returns the parts to rebuild it from. Neither touches a
:class:`~evalstop.live.monitor.Monitor`: the monitor owns its state, the codec only its format.
"""

from __future__ import annotations

import json
import math
import typing
from collections.abc import Iterable, Mapping
from typing import Any, Final, cast

import attrs
from attrs import AttrsInstance

from evalstop.core.detectors import Detector, Watch
from evalstop.core.registry import DETECTOR_TYPES
from evalstop.live.state import JobKey, JobState, Mode, check_key, check_score

__all__ = ["FORMAT", "Decoded", "decode", "encode", "loads"]

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

    The whole document is validated before anything is built (spec ``MON-15``): the exact
    keys at every level, every type, every range, and the consistency between fields, so a
    document it accepts is one a monitor could have written. Without ``detector`` the saved
    built-in detector is rebuilt from its parameters; with one, its name must equal the saved
    name (a different rule would not resume the same decisions).
    """
    try:
        return _decode(data, detector)
    except (KeyError, TypeError, AttributeError, OverflowError, RecursionError) as error:
        raise ValueError(f"not a saved evalstop monitor: {error!r}"[:300]) from None


def loads(text: str) -> dict[str, Any]:
    """A saved document's JSON text parsed to an object; ``ValueError`` for anything else."""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as error:  # bad JSON, too deep, huge integers
        raise ValueError(f"not a saved evalstop monitor: {error}"[:300]) from None
    if not isinstance(data, dict):
        raise ValueError("not a saved evalstop monitor: expected a JSON object")
    return data


_TOP_KEYS: Final = frozenset({"format", "mode", "detector", "next_serial", "jobs"})
_DETECTOR_KEYS: Final = frozenset({"name", "type", "params"})
_JOB_KEYS: Final = frozenset(
    {"job", "serial", "last_step", "seen", "rule", "evals", "best_step", "best_score", "fired_step"}
)


def _bad(problem: str) -> ValueError:
    return ValueError(f"not a saved evalstop monitor: {problem}")


def _object(value: object, keys: frozenset[str], what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _bad(f"{what} must be an object, got {type(value).__name__}")
    if set(value) != keys:
        missing, extra = sorted(keys - set(value)), sorted(map(str, set(value) - keys))
        raise _bad(f"{what} keys differ: missing {missing}, unexpected {extra}")
    return value


def _decode(data: Mapping[str, Any], detector: Detector[Any] | None) -> Decoded:
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise _bad(f"format is not {FORMAT!r}")
    _object(data, _TOP_KEYS, "the document")
    saved = _object(data["detector"], _DETECTOR_KEYS, "detector")
    if not isinstance(saved["name"], str) or not isinstance(saved["params"], Mapping):
        raise _bad("detector name must be a string and params an object")
    if detector is None:
        detector = _detector_from_dict(saved)
    elif detector.name != saved["name"]:
        raise ValueError(
            f"detector {detector.name!r} differs from the saved detector {saved['name']!r}"
        )
    mode = data["mode"]
    if mode not in ("max", "min"):
        raise _bad(f"mode must be 'max' or 'min', got {mode!r}")
    entries = data["jobs"]
    if not isinstance(entries, list):
        raise _bad("jobs must be a list")
    next_serial = _int(data["next_serial"], "next_serial")
    template = detector.initial()
    jobs: list[tuple[JobKey, JobState]] = []
    keys: set[JobKey] = set()
    serials: set[int] = set()
    for raw in entries:
        entry = _object(raw, _JOB_KEYS, "a job")
        key = check_key(entry["job"])
        state = _job_from_dict(entry, template, detector)
        if key in keys or state.serial in serials:
            raise _bad(f"job {key!r} or its serial {state.serial} appears twice")
        if state.serial >= next_serial:
            raise _bad(f"job {key!r} has serial {state.serial}, not below next_serial")
        keys.add(key)
        serials.add(state.serial)
        jobs.append((key, state))
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
    """A rule state as JSON values: an attrs state field by field (nested states and tuples
    of numbers too, for the multi-signal detectors' states, ``SIG-7``), a plain value as is."""
    if attrs.has(type(rule)):
        fields = attrs.fields(cast("type[AttrsInstance]", type(rule)))
        return {f.name: _rule_to_plain(getattr(rule, f.name)) for f in fields}
    if isinstance(rule, tuple):
        return [_plain(item) for item in rule]
    return _plain(rule)


def _field_value(kind: type, name: str, hint: object, value: object, template: object) -> object:
    """A rule-state field checked against its annotation (bool, int, float, optional, a nested
    state, a tuple of ints or floats)."""
    if attrs.has(type(template)):
        return _rule_from_plain(template, value)
    if typing.get_origin(hint) is tuple:
        if not isinstance(value, list):
            raise TypeError(f"{kind.__name__}.{name} must be a list, got {type(value).__name__}")
        item = typing.get_args(hint)[0]
        return tuple(_field_value(kind, name, item, v, None) for v in value)
    optional = "None" in str(hint)
    if value is None:
        if optional:
            return None
        raise TypeError(f"{kind.__name__}.{name} must not be null")
    if hint is bool:
        if not isinstance(value, bool):
            raise TypeError(f"{kind.__name__}.{name} must be a bool, got {type(value).__name__}")
        return value
    if "int" in str(hint) and "float" not in str(hint):
        return _int(value, f"{kind.__name__}.{name}")
    return _finite(value, f"{kind.__name__}.{name}")


def _rule_from_plain(template: object, data: object) -> object:
    kind = type(template)
    if attrs.has(kind):
        fields = attrs.fields(kind)
        if not isinstance(data, dict) or set(data) != {f.name for f in fields}:
            raise TypeError(f"detector state must be an object with {[f.name for f in fields]}")
        hints = typing.get_type_hints(kind)
        values = {
            f.name: _field_value(
                kind, f.name, hints[f.name], data[f.name], getattr(template, f.name)
            )
            for f in fields
        }
        try:
            return kind(**values)
        except ValueError as error:  # a state's own check (equal tuple lengths)
            raise _bad(str(error)) from None
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
    """A non-negative int (or None when ``optional``)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}"[:200])
    if value < 0:
        raise _bad(f"{name} must be >= 0, got {value}")
    return value


def _finite(value: object, name: str) -> float:
    number = check_score(value, name)
    if not math.isfinite(number):
        raise _bad(f"{name} must be finite, got {value!r}")
    return number


def _job_from_dict(entry: Mapping[str, Any], template: object, detector: Detector[Any]) -> JobState:
    best_score = entry["best_score"]
    best_score = None if best_score is None else _finite(best_score, "best_score")
    watch: Watch[Any] = Watch(
        _rule_from_plain(template, entry["rule"]),
        _int(entry["evals"], "evals"),
        _int(entry["best_step"], "best_step", optional=True),
        best_score,
        _int(entry["fired_step"], "fired_step", optional=True),
    )
    state = JobState(
        _int(entry["serial"], "serial"),
        _int(entry["last_step"], "last_step"),
        _int(entry["seen"], "seen"),
        watch,
    )
    _check_consistent(entry["job"], state, detector)
    return state


def _check_consistent(key: object, state: JobState, detector: Detector[Any]) -> None:
    """The cross-field facts every state a monitor writes satisfies (spec ``MON-15``)."""
    watch = state.watch
    facts = [
        (state.seen >= 1, "a known job has seen an observation"),
        (watch.evals <= state.seen, "evals exceed the observations seen"),
        (
            (watch.best_step is None) == (watch.best_score is None) == (watch.evals == 0),
            "best_step, best_score and evals disagree on whether a score was counted",
        ),
        (
            watch.best_step is None or watch.best_step <= state.last_step,
            "best_step is after last_step",
        ),
        (
            watch.fired_step is None or watch.fired_step == state.last_step,
            "fired_step is not the last accepted step",
        ),
        (
            bool(detector.fired(watch.rule)) == (watch.fired_step is not None),
            "the detector state and fired_step disagree on whether it fired",
        ),
    ]
    for ok, problem in facts:
        if not ok:
            raise _bad(f"job {key!r}: {problem}")
