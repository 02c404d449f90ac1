"""What the watcher does at a stop, without a shell, off the polling loop (spec ``WCH-9``).

``--on-stop`` is an argv template: a string is split with ``shlex.split`` once, when the
watcher starts, and each placeholder (``{run}``, ``{name}``, ``{path}``, ``{metric}``,
``{detector}``, ``{stop_step}``, ``{best_step}``, ``{best_value}``, ``{evals}``; ``{{`` and
``}}`` are braces) is replaced inside its own argument: a field is always one argument and is
never parsed by a shell, so a run named ``$(touch x)`` or ``a;touch x`` is only text. The same
facts are passed as environment variables (``EVALSTOP_RUN``, ``EVALSTOP_NAME``, ...).

An :class:`ActionRunner` carries out each decision's actions (the sources' own, such as an
MLflow tag, then the command) in a worker thread, at most ``jobs`` at once, each command in its
own process group with its output sent to the watcher's stderr (stdout is the JSON stream) and
killed, group and all, after ``timeout`` seconds; a source's own action that has not returned
after ``timeout`` seconds is reported and left behind in its daemon thread (``WCH-15``). The
watcher records a decision as acted only when its actions have finished (``WCH-4``), so a
watcher killed meanwhile runs them again at restart: delivery is at least once, and a command
should be idempotent.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from evalstop.core.errors import EvalStopError
from evalstop.watch.source import RunSource

__all__ = ["FIELDS", "ActionRunner", "CommandError", "argv_template", "environment", "substitute"]

FIELDS = (
    "run",
    "name",
    "path",
    "metric",
    "detector",
    "stop_step",
    "best_step",
    "best_value",
    "evals",
)
"""The placeholders of an ``--on-stop`` template: a decision's fields."""

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


class CommandError(EvalStopError, ValueError):
    """An ``--on-stop`` template that cannot be used (bad quoting, an unknown placeholder)."""


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _fill(argument: str, fields: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        name = match.group(1)
        if name is None or name not in fields:
            known = ", ".join(f"{{{f}}}" for f in FIELDS)
            raise CommandError(f"--on-stop: bad placeholder {token!r} (known: {known})")
        return fields[name]

    return _PLACEHOLDER.sub(replace, argument)


def argv_template(command: str | Sequence[str]) -> tuple[str, ...]:
    """The argv template of ``command`` (a string is split with ``shlex.split``), checked.

    Raises:
        CommandError: unbalanced quotes, an empty command or an unknown placeholder.
    """
    if isinstance(command, str):
        try:
            argv = tuple(shlex.split(command))
        except ValueError as error:
            raise CommandError(f"--on-stop: cannot split {command!r} ({error})") from None
    else:
        argv = tuple(command)
    if not argv:
        raise CommandError("--on-stop: the command is empty")
    substitute(argv, dict.fromkeys(FIELDS, 0))
    return argv


def substitute(argv: Sequence[str], body: Mapping[str, Any]) -> list[str]:
    """The command for one decision: each placeholder replaced inside its own argument."""
    fields = {name: _text(body.get(name)) for name in FIELDS}
    return [_fill(argument, fields) for argument in argv]


def environment(body: Mapping[str, Any]) -> dict[str, str]:
    """``EVALSTOP_<FIELD>`` for each field and each of the run's facts (``EVALSTOP_<KEY>``)."""
    env = {f"EVALSTOP_{name.upper()}": _text(body.get(name)) for name in FIELDS}
    facts = body.get("facts") or {}
    env.update({f"EVALSTOP_{str(key).upper()}": _text(value) for key, value in facts.items()})
    return env


class ActionRunner:
    """Runs each decision's actions in a worker thread: at most ``jobs`` at once.

    Args:
        sources: the run sources, whose ``stop`` is called for every decision.
        argv: the command template (None: no command).
        timeout: seconds a command may run before its process group is killed.
        jobs: decisions acted on at once; more wait for a free worker.
        report: receives one line per problem (a failed command, a source's error).
        stderr: where commands' output goes (the watcher's stderr: never stdout).
    """

    def __init__(
        self,
        sources: Sequence[RunSource] = (),
        argv: Sequence[str] | None = None,
        *,
        timeout: float = 60.0,
        jobs: int = 4,
        report: Callable[[str], None] = print,
        stderr: int | None = None,
    ) -> None:
        if not timeout > 0 or jobs < 1:
            raise ValueError(f"need timeout > 0 and jobs >= 1, got {timeout} and {jobs}")
        self._sources, self._argv = tuple(sources), None if argv is None else tuple(argv)
        self._timeout, self._jobs, self._report = timeout, jobs, report
        self._stderr = 2 if stderr is None else stderr  # the descriptor: never stdout
        self._lock = threading.Lock()
        self._running: dict[int, threading.Thread] = {}
        self._done: list[int] = []
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._closing = threading.Event()

    def start(self, seq: int, body: Mapping[str, Any]) -> bool:
        """Start decision ``seq``'s actions; False when all workers are busy (try later).

        A decision already running or finished and not yet collected is not started again.
        """
        with self._lock:
            if seq in self._running or seq in self._done:
                return True
            if len(self._running) >= self._jobs or self._closing.is_set():
                return False
            worker = threading.Thread(target=self._work, args=(seq, dict(body)), daemon=True)
            self._running[seq] = worker
        worker.start()
        return True

    def finished(self) -> list[int]:
        """The decisions whose actions finished since the last call."""
        with self._lock:
            done, self._done = self._done, []
        return done

    def busy(self) -> bool:
        """Whether some decision's actions are still running."""
        with self._lock:
            return bool(self._running)

    def close(self, grace: float) -> None:
        """Stop: wait up to ``grace`` seconds for running actions, then kill their commands.

        Decisions whose actions did not finish are not reported finished: a restart redoes
        them (``WCH-4``).
        """
        self._closing.set()
        with self._lock:
            workers = list(self._running.values())
        for worker in workers:
            worker.join(max(0.0, grace / max(1, len(workers))))
        with self._lock:
            children = list(self._children.values())
        for child in children:
            _kill(child)

    def _work(self, seq: int, body: dict[str, Any]) -> None:
        ok = True
        for source in self._sources:
            self._stop(source, body)
        if self._argv is not None:
            ok = self._command(seq, body)
        with self._lock:
            del self._running[seq]
            if ok or not self._closing.is_set():
                self._done.append(seq)

    def _stop(self, source: RunSource, body: dict[str, Any]) -> None:
        """``source.stop(body)`` in its own thread, waited for at most the timeout: a source
        that never returns (a server that does not answer) is reported and left behind, so it
        holds no worker (``WCH-15``). A watcher that closes meanwhile does not record the
        decision as acted (its worker is still running): a restart acts again."""
        failed: list[Exception] = []

        def call() -> None:
            try:
                source.stop(body)
            except Exception as error:  # a source's own errors (a tracking server's)
                failed.append(error)

        thread = threading.Thread(target=call, daemon=True, name="evalstop-source-stop")
        thread.start()
        thread.join(self._timeout)
        if thread.is_alive():
            self._report(
                f"{body.get('run')}: {type(source).__name__} did not act on the stop within "
                f"{self._timeout:g} s; left behind"
            )
        elif failed:
            self._report(f"{body.get('run')}: cannot act on the stop ({failed[0]})")

    def _command(self, seq: int, body: dict[str, Any]) -> bool:
        """Run the command; False when it was cut short by :meth:`close` (to be redone)."""
        assert self._argv is not None
        argv = substitute(self._argv, body)
        try:
            child = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._stderr,
                stderr=self._stderr,
                env={**os.environ, **environment(body)},
                start_new_session=True,
            )
        except OSError as error:
            self._report(f"{body.get('run')}: --on-stop cannot start {argv[0]!r} ({error})")
            return True
        with self._lock:
            self._children[seq] = child
        try:
            code = child.wait(self._timeout)
        except subprocess.TimeoutExpired:
            _kill(child)
            self._report(f"{body.get('run')}: --on-stop killed after {self._timeout:g} s")
            return True
        finally:
            with self._lock:
                self._children.pop(seq, None)
        if code != 0 and self._closing.is_set():
            return False
        if code != 0:
            self._report(f"{body.get('run')}: --on-stop exited with {code}")
        return True


def _kill(child: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(OSError):
        os.killpg(child.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(1.0)
