"""The Ray backend's failures, without a cluster (RAY-2); RAY-1 is in tests/adapters."""

from __future__ import annotations

import socket
import sys

import pytest

from evalstop.cli import main
from evalstop.experiments.paper.ray_backend import BackendError, RayBackend, check_reachable


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
