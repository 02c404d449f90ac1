"""Workloads from job tables: typed records, from Python or from a CSV (spec ``TAB``).

A table row says what a cluster trace knows about a job: its id, arrival, GPUs, duration (or
steps), and optionally its kind, tenant, evaluation interval, hacking label and duration
estimate. :func:`read_job_table` reads a CSV into :class:`JobRecord` values; any bad row is a
:class:`TableError` naming the row and the field, and nothing is returned unless every row is
good (``TAB-2``). :func:`~evalstop.sim.attach.workload_from_records` turns records into jobs,
attaching what the table lacks by a declared, seeded rule.

Times are whole seconds. Arrivals are numbers of seconds or ISO 8601 timestamps (naive ones
are UTC); either way they are shifted so that the earliest arrival is 0 (``TAB-1``).
"""

from __future__ import annotations

import csv
import datetime as dt
import gzip
import io
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

import attrs

from evalstop.core.errors import EvalStopError
from evalstop.core.model import JobKind
from evalstop.engine.collector import without_collector

__all__ = [
    "FIELDS",
    "REQUIRED_FIELDS",
    "JobRecord",
    "JobTable",
    "TableError",
    "parse_columns",
    "read_job_table",
    "records_from_rows",
]

FIELDS: tuple[str, ...] = (
    "arrival",
    "duration",
    "estimate",
    "eval_interval",
    "gpus",
    "hacking",
    "id",
    "kind",
    "steps",
    "tenant",
)
"""The fields a table row may have; ``--columns`` maps these to a CSV's own headers."""

REQUIRED_FIELDS: tuple[str, ...] = ("arrival", "gpus")
"""Always required; a row also needs ``duration`` or ``steps``."""

DEFAULT_TENANT = "default"


class TableError(EvalStopError, ValueError):
    """A bad job table: names the source, the row (1-based, None for the whole table) and field."""

    def __init__(self, source: str, row: int | None, field: str | None, problem: str) -> None:
        self.source = source
        self.row = row
        self.field = field
        self.problem = problem
        where = [source]
        if row is not None:
            where.append(f"row {row}")
        if field is not None:
            where.append(f"field {field!r}")
        super().__init__(f"{', '.join(where)}: {problem}")


def _optional_positive(
    _inst: object, attribute: attrs.Attribute[int | None], value: object
) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"{attribute.name} must be a positive integer or None, got {value!r}")


def _positive(_inst: object, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{attribute.name} must be a positive integer, got {value!r}")


def _non_negative(_inst: object, attribute: attrs.Attribute[int], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{attribute.name} must be an integer >= 0, got {value!r}")


def _non_empty(_inst: object, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{attribute.name} must be a non-empty string, got {value!r}")


@attrs.frozen(slots=True)
class JobRecord:
    """One job as a table knows it (``TAB-1``).

    Attributes:
        job_id: the table's id, e.g. ``"cifar10-0"``; unique within a table.
        arrival: submission time in seconds (tables are shifted so the earliest is 0).
        gpus: GPUs the job holds for its whole run.
        duration: service time in seconds; None when only ``steps`` is known.
        steps: optimisation steps; None when only ``duration`` is known.
        kind: the fine-tuning method; None to let the attachment rule choose.
        tenant: who submitted it (a team, a virtual cluster); observable by policies.
        eval_interval: seconds of service between evaluations; None for the kind's default.
        hacking: the hidden label; None to let the attachment rule draw it.
        estimate: the user's duration estimate in seconds; None to draw one (WRK-5's law).
    """

    job_id: str = attrs.field(validator=_non_empty)
    arrival: int = attrs.field(validator=_non_negative)
    gpus: int = attrs.field(validator=_positive)
    duration: int | None = attrs.field(default=None, validator=_optional_positive)
    steps: int | None = attrs.field(default=None, validator=_optional_positive)
    kind: JobKind | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(JobKind))
    )
    tenant: str = attrs.field(default=DEFAULT_TENANT, validator=_non_empty)
    eval_interval: int | None = attrs.field(default=None, validator=_optional_positive)
    hacking: bool | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(bool))
    )
    estimate: int | None = attrs.field(default=None, validator=_optional_positive)

    def __attrs_post_init__(self) -> None:
        if self.duration is None and self.steps is None:
            raise ValueError("duration: a job needs a duration or a step count")
        if self.hacking and self.kind not in (None, JobKind.RLHF):
            raise ValueError(f"hacking: only RLHF jobs hack, this one is {self.kind}")


@attrs.frozen(slots=True)
class JobTable:
    """Validated records of one table, and where their time 0 is.

    Attributes:
        source: the table's path, as errors name it.
        records: the jobs, validated.
        origin: the earliest arrival as a UTC timestamp when the table gave timestamps (so a
            window can be written as dates); None when it gave numbers of seconds.
    """

    source: str
    records: tuple[JobRecord, ...]
    origin: dt.datetime | None = None


# -- cell parsers: each returns the typed value or raises ValueError with the problem -------


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise ValueError(f"{text!r} is not a finite number")
    return value


def _whole(text: str, *, minimum: int) -> int:
    value = _number(text)
    if value != int(value):
        raise ValueError(f"{text!r} is not a whole number")
    if value < minimum:
        raise ValueError(f"{text!r} must be >= {minimum}")
    return int(value)


def _seconds(text: str) -> int:
    """A positive time in seconds, rounded to the nearest second and at least 1."""
    value = _number(text)
    if value <= 0:
        raise ValueError(f"{text!r} must be > 0 seconds")
    return max(1, round(value))


def _kind(text: str) -> JobKind:
    try:
        return JobKind(text.strip().lower())
    except ValueError:
        names = ", ".join(kind.value for kind in JobKind)
        raise ValueError(f"{text!r} is not a job kind ({names})") from None


_TRUE = frozenset({"1", "true", "yes", "y", "t"})
_FALSE = frozenset({"0", "false", "no", "n", "f"})


def _flag(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ValueError(f"{text!r} is not true or false")


def _arrival(text: str) -> tuple[bool, float]:
    """``(is_timestamp, seconds)``: a number of seconds, or a timestamp as epoch seconds."""
    try:
        value = float(text)
    except ValueError:
        try:
            stamp = dt.datetime.fromisoformat(text.strip())
        except ValueError:
            raise ValueError(f"{text!r} is neither seconds nor an ISO 8601 timestamp") from None
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=dt.UTC)
        return True, stamp.timestamp()
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{text!r} must be a finite number of seconds >= 0")
    return False, value


_PARSERS: dict[str, Callable[[str], object]] = {
    "duration": _seconds,
    "estimate": _seconds,
    "eval_interval": _seconds,
    "gpus": lambda text: _whole(text, minimum=1),
    "hacking": _flag,
    "kind": _kind,
    "steps": lambda text: _whole(text, minimum=1),
}


def parse_columns(text: str) -> dict[str, str]:
    """Parse ``arrival=submit_time,gpus=num_gpus`` into a field-to-header map (``TAB-3``)."""
    mapping: dict[str, str] = {}
    for part in text.split(","):
        field, eq, header = part.strip().partition("=")
        field = field.strip()
        if not eq or not header.strip():
            raise TableError(
                "--columns", None, None, f"bad entry {part.strip()!r}; write field=header"
            )
        if field not in FIELDS:
            raise TableError(
                "--columns", None, field, f"unknown field; choose from {', '.join(FIELDS)}"
            )
        if field in mapping:
            raise TableError("--columns", None, field, "given twice")
        mapping[field] = header.strip()
    return mapping


def _header_map(source: str, header: list[str], columns: Mapping[str, str]) -> dict[str, int]:
    """Field name to column index; TableError when a required column is missing."""
    for field in columns:
        if field not in FIELDS:
            raise TableError(source, None, field, f"unknown field; choose from {', '.join(FIELDS)}")
    names = [name.strip() for name in header]
    index: dict[str, int] = {}
    for field in FIELDS:
        wanted = columns.get(field, field)
        if wanted in names:
            index[field] = names.index(wanted)
        elif field in columns:
            raise TableError(source, 1, field, f"no column {wanted!r} in the header")
    for field in REQUIRED_FIELDS:
        if field not in index:
            raise TableError(source, 1, field, "no such column (map one with --columns)")
    if "duration" not in index and "steps" not in index:
        raise TableError(source, 1, "duration", "needs a duration or a steps column")
    return index


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, JobKind):
        return value.value
    return value if isinstance(value, str) else str(value)


def _parse_row(source: str, number: int, row: Mapping[str, object]) -> dict[str, object]:
    fields: dict[str, object] = {}
    for field, value in row.items():
        if field not in FIELDS:
            raise TableError(
                source, number, field, f"unknown field; choose from {', '.join(FIELDS)}"
            )
        text = _cell(value).strip()
        if not text or field == "arrival":
            continue
        if field in ("id", "tenant"):
            fields["job_id" if field == "id" else field] = text
            continue
        try:
            fields[field] = _PARSERS[field](text)
        except ValueError as error:
            raise TableError(source, number, field, str(error)) from None
    return fields


def records_from_rows(
    rows: Iterable[Mapping[str, object]], source: str = "records", first_row: int = 1
) -> JobTable:
    """Typed records from rows keyed by field name; all or nothing (``TAB-2``).

    Cells may be strings (as read from a CSV) or values (numbers, booleans, kinds). Row numbers
    in errors start at ``first_row``. A row without an ``id`` is named by its row number.
    Arrivals are shifted so that the earliest is 0 (``TAB-1``).
    """
    return _records(source, enumerate(rows, start=first_row))


def _records(source: str, numbered: Iterable[tuple[int, Mapping[str, object]]]) -> JobTable:
    parsed: list[tuple[int, dict[str, object], float]] = []
    timestamps: bool | None = None
    seen: dict[str, int] = {}
    for number, row in numbered:
        fields = _parse_row(source, number, row)
        job_id = str(fields.setdefault("job_id", str(number)))
        if job_id in seen:
            raise TableError(source, number, "id", f"{job_id!r} repeats row {seen[job_id]}")
        seen[job_id] = number
        try:
            is_stamp, arrival = _arrival(_cell(row.get("arrival")))
        except ValueError as error:
            raise TableError(source, number, "arrival", str(error)) from None
        if timestamps is None:
            timestamps = is_stamp
        elif is_stamp != timestamps:
            style = "timestamps" if timestamps else "numbers of seconds"
            raise TableError(source, number, "arrival", f"earlier rows give {style}")
        parsed.append((number, fields, arrival))
    if not parsed:
        raise TableError(source, None, None, "no jobs in it")
    origin = min(arrival for _, _, arrival in parsed)
    records = []
    for number, fields, arrival in parsed:
        try:
            records.append(JobRecord(arrival=round(arrival - origin), **fields))  # type: ignore[arg-type]
        except ValueError as error:
            field, _, problem = str(error).partition(" ")
            raise TableError(source, number, field.rstrip(":"), problem) from None
    stamp = dt.datetime.fromtimestamp(origin, dt.UTC) if timestamps else None
    return JobTable(source, tuple(records), stamp)


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _cells(
    source: str, lines: Iterable[str], columns: Mapping[str, str]
) -> Iterator[tuple[int, dict[str, str]]]:
    """``(line number, cells by field)`` of each non-blank data row."""
    reader = csv.reader(lines)
    header = next(reader, None)
    if header is None:
        raise TableError(source, None, None, "empty file: no header row")
    index = _header_map(source, header, columns)
    for cells in reader:
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            problem = f"{len(cells)} cells, the header has {len(header)}"
            raise TableError(source, reader.line_num, None, problem)
        yield reader.line_num, {field: cells[i] for field, i in index.items()}


@without_collector  # WRK-10: library code only (it reads a file), no reference cycles
def read_job_table(path: Path | str, columns: Mapping[str, str] | None = None) -> JobTable:
    """Read a CSV (optionally gzip-compressed) of jobs; rows are numbered as file lines.

    ``columns`` maps field names to the CSV's headers where they differ (``TAB-3``).
    """
    path = Path(path)
    source = str(path)
    try:
        with _open_text(path) as handle:
            return _records(source, _cells(source, handle, columns or {}))
    except OSError as error:
        raise TableError(
            source, None, None, f"cannot read it ({error.strerror or error})"
        ) from None
    except (UnicodeDecodeError, csv.Error, EOFError, gzip.BadGzipFile) as error:
        raise TableError(source, None, None, f"not a readable CSV ({error})") from None
