"""The Ray backend's failures, without a cluster (RAY-2); RAY-1 is in tests/adapters."""

from __future__ import annotations

import socket
import sys
import types
from typing import Any

import pytest

from evalstop.cli import main
from evalstop.experiments.paper.ray_backend import (
    TASK_RETRIES,
    BackendError,
    RayBackend,
    check_reachable,
)


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # closed again: nothing listens there


def test_ray2_an_unreachable_address_is_named() -> None:
    """RAY-2: nothing listening at the address is a BackendError naming it, within the
    timeout; a malformed address is one too."""
    address = f"127.0.0.1:{_closed_port()}"
    with pytest.raises(BackendError, match=f"cannot reach a Ray cluster at {address}"):
        check_reachable(address, timeout=2.0)
    with pytest.raises(BackendError, match=f"cannot reach a Ray cluster at ray://{address}"):
        check_reachable(f"ray://{address}", timeout=2.0)
    with pytest.raises(BackendError, match="HOST:PORT"):
        check_reachable("no-port-here")


def test_ray2_missing_ray_and_bad_options_are_one_cli_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """RAY-2: without Ray, --backend ray says how to install it; --address needs --backend
    ray; each is exit 2 and one line (CLI-1)."""
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(BackendError, match=r"pip install 'evalstop\[ray\]'"):
        next(RayBackend().imap(abs, [1]))
    for args, needle in [
        (["--backend", "ray"], "needs Ray"),
        (["--address", "127.0.0.1:1"], "--address needs --backend ray"),
    ]:
        code = main(["reproduce", "--quick", "--jobs", "5", "--no-progress", *args])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and needle in err, err


class _RayError(Exception):
    pass


class _RayTaskError(_RayError):
    pass


class _WorkerCrashedError(_RayError):
    pass


class _FakeRay:
    """Just enough of ``ray`` to see what the backend asks for and how it meets a lost task."""

    exceptions = types.SimpleNamespace(RayError=_RayError, RayTaskError=_RayTaskError)

    def __init__(self, failure: Exception | None) -> None:
        self.failure = failure
        self.options: dict[str, Any] = {}
        self.shut = False

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs: Any) -> None:
        pass

    def shutdown(self) -> None:
        self.shut = True

    def remote(self, **options: Any) -> Any:
        self.options = options
        return lambda fn: types.SimpleNamespace(remote=lambda item: (fn, item))

    def get(self, ref: Any) -> Any:
        if self.failure is not None:
            raise self.failure
        fn, item = ref
        return fn(item)


def test_ray3_lost_tasks_are_retried_by_ray_then_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """RAY-3: tasks ask Ray for TASK_RETRIES retries of a dead worker (not of the
    simulation's own exceptions); a task lost after them (WorkerCrashedError, a lost node) is
    one BackendError line, and the local instance is shut down."""
    fake = _FakeRay(None)
    monkeypatch.setitem(sys.modules, "ray", fake)
    assert list(RayBackend().imap(abs, [-1, -2])) == [1, 2]
    assert fake.options == {"num_cpus": 1, "max_retries": TASK_RETRIES, "retry_exceptions": False}
    crashed = _FakeRay(_WorkerCrashedError("The worker died unexpectedly\nwhile running"))
    monkeypatch.setitem(sys.modules, "ray", crashed)
    with pytest.raises(BackendError) as caught:
        list(RayBackend().imap(abs, [1]))
    message = str(caught.value)
    assert "\n" not in message and crashed.shut
    assert f"after {TASK_RETRIES} retries (_WorkerCrashedError: The worker died" in message
    buggy = _FakeRay(_RayTaskError("ZeroDivisionError"))
    monkeypatch.setitem(sys.modules, "ray", buggy)
    with pytest.raises(_RayTaskError):
        list(RayBackend().imap(abs, [1]))
