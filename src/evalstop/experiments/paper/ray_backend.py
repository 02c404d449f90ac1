"""Where a plan's simulations run: local processes (the runner's pool) or Ray tasks (``RAY``).

:class:`RayBackend` runs each workload group as a Ray task, on a fresh local Ray instance by
default or on an existing cluster at ``address``; results come back in plan order, so
``results.json`` is byte for byte the process pool's (``RAY-1``). Ray is an optional extra
(``pip install 'evalstop[ray]'``): it is imported only here and only when asked for, and a
missing Ray or an unreachable cluster is a :class:`BackendError` of one line (``RAY-2``). A
task whose worker dies is retried by Ray itself (:data:`TASK_RETRIES` times); a task still lost
after that, or a cluster lost mid-run, is a :class:`BackendError` of one line too (``RAY-3``).
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Generator, Sequence
from typing import Any, Protocol, TypeVar

import attrs

from evalstop.core.errors import EvalStopError

__all__ = ["CONNECT_TIMEOUT", "TASK_RETRIES", "Backend", "BackendError", "RayBackend"]

T = TypeVar("T")
R = TypeVar("R")

CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a Ray cluster's port before saying it is unreachable (Ray itself would
retry for minutes)."""


TASK_RETRIES = 3
"""Times Ray runs a task again when its worker process or node dies (Ray's ``max_retries``;
an exception raised by the simulation itself is a bug and is not retried)."""


class BackendError(EvalStopError, RuntimeError):
    """The backend cannot run: Ray is not installed, or its cluster cannot be reached."""


class Backend(Protocol):
    """Runs ``fn`` over ``items`` and yields the results in the order of ``items``."""

    def imap(self, fn: Callable[[T], R], items: Sequence[T]) -> Generator[R, None, None]: ...


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise BackendError(
            "--backend ray needs Ray: pip install 'evalstop[ray]' (or 'ray[tune]')"
        ) from None
    return ray


def _host_port(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of ``host:port`` or ``ray://host:port``; None for ``auto``."""
    if address == "auto":
        return None
    host, colon, port = address.removeprefix("ray://").rpartition(":")
    if not colon or not host or not port.isdigit():
        raise BackendError(f"--address {address!r}: write HOST:PORT, e.g. 10.0.0.5:6379")
    return host, int(port)


def check_reachable(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """BackendError unless something listens at the address's host and port."""
    target = _host_port(address)
    if target is None:
        return
    try:
        with socket.create_connection(target, timeout=timeout):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise BackendError(f"cannot reach a Ray cluster at {address}: {reason}") from None


@attrs.frozen(slots=True)
class RayBackend:
    """Run each item as a Ray task (one CPU each): a local instance with ``cpus`` CPUs when
    ``address`` is None, else the cluster at ``address`` (``HOST:PORT``, ``ray://HOST:PORT``
    or ``auto``)."""

    address: str | None = None
    cpus: int | None = None

    def imap(self, fn: Callable[[T], R], items: Sequence[T]) -> Generator[R, None, None]:
        ray = _import_ray()
        if self.address is not None:
            check_reachable(self.address)
        started = not ray.is_initialized()
        if started:
            try:
                ray.init(
                    address=self.address or "local",
                    num_cpus=self.cpus if self.address is None else None,
                    include_dashboard=False if self.address is None else None,
                    logging_level="ERROR",
                    log_to_driver=False,
                )
            except (ConnectionError, RuntimeError, ValueError) as error:
                where = self.address or "a local Ray instance"
                raise BackendError(f"cannot start or join {where}: {error}") from None
        try:
            task = ray.remote(num_cpus=1, max_retries=TASK_RETRIES, retry_exceptions=False)(fn)
            refs = [task.remote(item) for item in items]
            for ref in refs:
                yield _get(ray, ref, self.address)
        finally:
            if started:
                ray.shutdown()


def _get(ray: Any, ref: Any, address: str | None) -> Any:
    """The task's result; a lost worker or cluster (after Ray's retries) is one line."""
    try:
        return ray.get(ref)
    except ray.exceptions.RayTaskError:
        raise  # the simulation's own exception: a bug, with its traceback
    except ray.exceptions.RayError as error:
        where = address or "the local Ray instance"
        first = (str(error).strip().splitlines() or [""])[0][:200]
        raise BackendError(
            f"Ray lost a task on {where} after {TASK_RETRIES} retries "
            f"({type(error).__name__}: {first})"
        ) from None
