"""Copy a full run's plots into ``docs/img/reproduction/`` with the results they show (``REP-10``).

``python docs/scripts/copy_plots.py RUN_DIR [--data DIR] [--img DIR]``: ``RUN_DIR`` is the
``--out`` of the ``evalstop reproduce`` run whose ``results.json`` is committed in
``docs/data/reproduction/``. The script refuses (exit 2, nothing copied) when the run's
``results.json`` is not byte-equal to the committed one: the reproduction page's plots must
show the numbers its tables give. It copies every world's plots and writes
``results.sha256``, the SHA-256 of the results they were drawn from, which a test compares
with the committed ``results.json`` (so new results without new plots fail the suite).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from evalstop.experiments.paper.plots import plot_names

__all__ = ["DATA", "IMG", "STAMP", "StaleRunError", "copy_plots", "digest", "main"]

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "data" / "reproduction"
IMG = ROOT / "docs" / "img" / "reproduction"
STAMP = "results.sha256"


class StaleRunError(Exception):
    """The run's results are not the committed ones."""


def digest(path: Path) -> str:
    """The SHA-256 of the file at ``path``, hex."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def copy_plots(run: Path, data: Path = DATA, img: Path = IMG) -> list[Path]:
    """Copy ``run``'s plots of every world of its results into ``img`` and stamp them with
    the results' digest; raise :class:`StaleRunError` (copying nothing) when ``run/results.json``
    differs from ``data/results.json`` or a plot is missing."""
    results = run / "results.json"
    if not results.is_file():
        raise StaleRunError(f"{results}: no such file (is {run} an `evalstop reproduce --out`?)")
    if results.read_bytes() != (data / "results.json").read_bytes():
        raise StaleRunError(
            f"{results} differs from {data / 'results.json'}: copy the run's results first "
            "(see docs/scripts/make_reproduction.py)"
        )
    worlds = json.loads(results.read_text(encoding="utf-8"))["worlds"]
    sources = [
        run / f"{name}.png"
        for world in worlds
        for name in plot_names(world)
        if (run / f"{name}.png").is_file() or not name.startswith("density")
    ]
    missing = [str(p) for p in sources if not p.is_file()]
    if missing:
        raise StaleRunError(f"{run}: missing plots {', '.join(missing)}")
    img.mkdir(parents=True, exist_ok=True)
    copied = []
    for source in sources:
        shutil.copyfile(source, img / source.name)
        copied.append(img / source.name)
    (img / STAMP).write_text(f"{digest(results)}  results.json\n", encoding="utf-8")
    return copied


def main(argv: Sequence[str] | None = None) -> int:
    """Copy the plots of a run (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="python docs/scripts/copy_plots.py")
    parser.add_argument("run", type=Path, help="the `evalstop reproduce --out` directory")
    parser.add_argument("--data", type=Path, default=DATA, help="the committed inputs")
    parser.add_argument("--img", type=Path, default=IMG, help="where the page's plots live")
    args = parser.parse_args(argv)
    try:
        copied = copy_plots(args.run, args.data, args.img)
    except (StaleRunError, OSError, KeyError, ValueError) as error:
        print(f"copy_plots: {error}", file=sys.stderr)
        return 2
    print(f"copied {len(copied)} plots into {args.img}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
