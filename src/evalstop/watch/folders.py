"""Run folders under watched roots: the runs of ``evalstop watch DIR`` (spec ``WCH-1``, ``WCH-11``).

Each sub-folder of a root that holds a log is a run, keyed by its resolved path (so a root
spelled relative or absolute, or reached through a symlink, names the same runs). A sub-folder
that is a symlink resolving outside its root is refused with one problem line: the watcher
never reads, nor writes a marker, outside the folders it was given. Only regular files are
sources: a named pipe, device or socket under a log's name is skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from evalstop.watch.follow import (
    CsvSource,
    EventFileSource,
    JsonlSource,
    TrainerStateSource,
    latest_trainer_state,
    regular,
)
from evalstop.watch.source import Run, Sides, Source

_DEFAULT = Sides()

__all__ = ["FolderRuns", "discover_runs", "run_sources"]


def run_sources(
    folder: Path, metric: str, step_column: str | None = None, sides: Sides = _DEFAULT
) -> tuple[Source, ...]:
    """A run folder's sources, by precedence: its trainer state, else its TensorBoard event
    files (in name order, which is creation order), else its ``*.jsonl`` files, else its
    ``*.csv`` files (``WCH-1``), each reading ``sides`` beside the metric (``WCH-16``). Empty
    while the folder holds none of them."""
    if latest_trainer_state(folder) is not None:
        return (TrainerStateSource(folder, metric, sides),)
    files = sorted(p for p in folder.iterdir() if regular(p))
    events = [p for p in files if "tfevents" in p.name]
    if events:
        return tuple(EventFileSource(p, metric, sides) for p in events)
    jsonl = [p for p in files if p.suffix.lower() in (".jsonl", ".ndjson")]
    if jsonl:
        return tuple(JsonlSource(p, metric, step_column, sides) for p in jsonl)
    csvs = [p for p in files if p.suffix.lower() == ".csv"]
    return tuple(CsvSource(p, metric, step_column, sides) for p in csvs)


def discover_runs(
    roots: Iterable[Path], metric: str, step_column: str | None = None, sides: Sides = _DEFAULT
) -> tuple[list[Run], list[str]]:
    """The runs under ``roots`` (each sub-folder of a root is a run, keyed by its resolved
    path), and one problem line per root or folder that cannot be listed or is refused."""
    runs: list[Run] = []
    problems: list[str] = []
    seen: set[str] = set()
    for given in roots:
        root = given.resolve()
        try:
            folders = sorted(p for p in root.iterdir() if p.is_dir())
        except OSError as error:
            problems.append(f"{given}: cannot list ({error.strerror or error})")
            continue
        for folder in folders:
            resolved = folder.resolve()
            if resolved.parent != root:
                problems.append(f"{folder}: a symlink out of {given} ({resolved}); skipped")
                continue
            try:
                sources = run_sources(resolved, metric, step_column, sides)
            except OSError as error:
                problems.append(f"{folder}: cannot list ({error.strerror or error})")
                continue
            if sources and str(resolved) not in seen:
                seen.add(str(resolved))
                runs.append(Run(str(resolved), resolved.name, str(resolved), sources))
    return runs, problems


class FolderRuns:
    """The run folders under ``roots`` as a :class:`~evalstop.watch.source.RunSource`.

    Their stop marker is written by the announcement (``WCH-4``), so :meth:`stop` does nothing.
    """

    def __init__(
        self,
        roots: Iterable[Path],
        metric: str,
        step_column: str | None = None,
        sides: Sides = _DEFAULT,
    ):
        self._roots, self._metric, self._step_column = tuple(roots), metric, step_column
        self._sides = sides

    def runs(self) -> tuple[list[Run], list[str]]:
        return discover_runs(self._roots, self._metric, self._step_column, self._sides)

    def stop(self, decision: Mapping[str, Any]) -> None:
        return None
