"""The ``evalstop`` command line: ``simulate``, ``reproduce``, ``replay``, ``watch``,
``detectors`` and ``gym``.

Each subcommand lives in its own module with ``add_arguments(parser)`` and ``run(args) -> int``.
Bad input ends in one line on stderr naming the problem and exit code 2, never a traceback
(spec ``CLI-1``).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence

from evalstop._version import __version__
from evalstop.cli.errors import CliError

__all__ = ["CliError", "Terminated", "main"]

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "simulate": ("evalstop.cli.simulate", "simulate one policy on a synthetic workload"),
    "reproduce": ("evalstop.cli.reproduce", "reproduce every experiment of the paper"),
    "replay": ("evalstop.cli.replay", "run a detector over recorded training logs"),
    "watch": ("evalstop.cli.watch", "follow live runs and stop the ones that decline"),
    "detectors": ("evalstop.cli.detectors", "score every detector, simulated and on real curves"),
    "gym": ("evalstop.cli.gym", "generate real overoptimisation runs with their hidden truth"),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("evalstop").strip()
        raise CliError(f"{command}: {message}" if command else message)


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every available subcommand."""
    parser = _Parser(
        prog="evalstop",
        description="Schedule RLHF jobs and stop the reward-hacking ones: simulate, reproduce "
        "the paper, replay training logs.",
    )
    parser.add_argument("--version", action="version", version=f"evalstop {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (module_name, help_text) in SUBCOMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name == module_name:
                continue
            raise
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is so that cleanup runs as for Ctrl-C."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evalstop`` console script; returns the exit code.

    SIGTERM is handled like SIGINT: workers stopped, staged files removed, one line, exit
    128 + the signal number (spec ``REP-5``).
    """
    in_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if in_main else None
    try:
        args = build_parser().parse_args(argv)
        code: int = args.run(args)
        return code
    except CliError as error:
        print(f"evalstop: error: {error}", file=sys.stderr)
        return 2
    except Terminated:
        print("evalstop: terminated", file=sys.stderr)
        return 128 + signal.SIGTERM
    except KeyboardInterrupt:
        print("evalstop: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except BrokenPipeError:
        # The reader went away (``evalstop simulate | head``): stop quietly, and point stdout
        # at devnull so the interpreter's final flush does not fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
