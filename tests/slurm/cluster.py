"""A one-node Slurm cluster on localhost: munged, slurmctld and slurmd (spec ``SLM-9``).

Every file lives in one folder (``root``): the configuration, the munge key and socket, the
daemons' state, spool and logs, and eight GPU device files (character devices made with
``mknod``, which Slurm's GRES plugin requires) that ``gres.conf`` names. Nothing is written to
``/etc``. The daemons run in the foreground as children of this process, under root (Slurm's
``SlurmUser`` and ``slurmd`` must be root to start jobs as other users). :meth:`Cluster.stop`
cancels every job, stops the daemons and then kills, by pid, any process left that carries this
cluster's marker in its environment (a job step's ``slurmstepd`` outlives ``slurmd``), so a
test run leaves nothing behind.

``python tests/slurm/cluster.py DIR`` starts a cluster in ``DIR`` and keeps it up until
interrupted (the recipe of ``docs/slurm.md``).
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

__all__ = ["MARKER_VAR", "Cluster", "ClusterError", "ensure_user", "main", "needed_programs"]

MARKER_VAR = "EVALSTOP_SLURM_CLUSTER"
"""Set in the environment of the daemons and of every client command (so of every job):
its value is the cluster's folder, which is how teardown finds what is left."""

_PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "scontrol", "sinfo")


class ClusterError(RuntimeError):
    """The cluster cannot be started: what failed and the tail of the daemons' logs."""


def needed_programs() -> list[str]:
    """The programs of ``slurm-wlm`` and ``munge`` that are missing from PATH."""
    return [name for name in _PROGRAMS if shutil.which(name) is None]


def ensure_user(name: str) -> int:
    """The uid of local user ``name``, created (no home, no login shell) when missing."""
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        pass
    subprocess.run(
        ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
        check=True,
        capture_output=True,
    )
    return pwd.getpwnam(name).pw_uid


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _slurm_conf(root: Path, host: str, gpus: int, cpus: int, kill_wait: int) -> str:
    lines = {
        "ClusterName": "evalstop",
        "SlurmctldHost": f"{host}(127.0.0.1)",
        "SlurmUser": "root",
        "SlurmdUser": "root",
        "AuthType": "auth/munge",
        "AuthInfo": f"socket={root}/munge/munge.socket",
        "SlurmctldPort": str(_free_port()),
        "SlurmdPort": str(_free_port()),
        "StateSaveLocation": f"{root}/state",
        "SlurmdSpoolDir": f"{root}/spool",
        "SlurmctldPidFile": f"{root}/slurmctld.pid",
        "SlurmdPidFile": f"{root}/slurmd.pid",
        "SlurmctldLogFile": f"{root}/log/slurmctld.log",
        "SlurmdLogFile": f"{root}/log/slurmd.log",
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "JobAcctGatherType": "jobacct_gather/none",
        "AccountingStorageType": "accounting_storage/none",
        "JobCompType": "jobcomp/filetxt",
        "JobCompLoc": f"{root}/log/jobcomp.log",
        "SchedulerType": "sched/backfill",
        "SchedulerParameters": "bf_interval=1",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_Core",
        "GresTypes": "gpu",
        "MpiDefault": "none",
        "ReturnToService": "2",
        # The node's CPUs are the configuration's, not the machine's: 16 one-CPU jobs fit.
        "SlurmdParameters": "config_overrides",
        "MinJobAge": "3600",
        "KillWait": str(kill_wait),
        "InactiveLimit": "0",
    }
    text = "".join(f"{key}={value}\n" for key, value in lines.items())
    text += (
        f"NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory=4000 Gres=gpu:{gpus} "
        "State=UNKNOWN\n"
        f"PartitionName=gpu Nodes={host} Default=YES MaxTime=INFINITE State=UP\n"
    )
    return text


class Cluster:
    """A one-node cluster in ``root`` (created if missing; it should be empty).

    Args:
        root: the folder that holds everything.
        gpus: GPUs of the node (device files ``root/dev/gpu<i>``).
        cpus: CPUs the node declares.
        kill_wait: Slurm's ``KillWait``, seconds between SIGTERM and SIGKILL at a cancel.
    """

    def __init__(self, root: Path, *, gpus: int = 8, cpus: int = 16, kill_wait: int = 2) -> None:
        self.root = root.resolve()
        self.gpus = gpus
        self.host = socket.gethostname().split(".")[0]
        self.conf = self.root / "slurm.conf"
        self._cpus, self._kill_wait = cpus, kill_wait
        self._daemons: list[tuple[str, subprocess.Popen[bytes]]] = []
        self.env = {**os.environ, "SLURM_CONF": str(self.conf), MARKER_VAR: str(self.root)}

    def _write_files(self) -> None:
        for sub in ("munge", "state", "spool", "log", "dev"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # Other users' clients reach the munge socket and the configuration through these.
        for folder in (self.root, self.root / "munge", self.root / "dev"):
            folder.chmod(0o755)
        key = self.root / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        key.chmod(0o400)
        for index in range(self.gpus):
            device = self.root / "dev" / f"gpu{index}"
            if not device.exists():  # a character device, as the GRES plugin requires
                os.mknod(device, 0o666 | 0o020000, os.makedev(1, 3))
        devices = f"{self.root}/dev/gpu[0-{self.gpus - 1}]"
        (self.root / "gres.conf").write_text(f"Name=gpu File={devices}\n", encoding="utf-8")
        conf = _slurm_conf(self.root, self.host, self.gpus, self._cpus, self._kill_wait)
        self.conf.write_text(conf, encoding="utf-8")

    def _spawn(self, name: str, argv: list[str]) -> None:
        log = (self.root / "log" / f"{name}.out").open("ab")
        process = subprocess.Popen(
            argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
        )
        self._daemons.append((name, process))

    def start(self, timeout: float = 60.0) -> None:
        """Write the files, start the three daemons and wait until the node is idle.

        Raises:
            ClusterError: a program is missing, a daemon exits, or the node is not idle
                within ``timeout`` seconds; the daemons started are stopped first.
        """
        missing = needed_programs()
        if missing:
            raise ClusterError(
                f"not on PATH: {', '.join(missing)} (apt-get install -y slurm-wlm munge)"
            )
        if os.geteuid() != 0:
            raise ClusterError("the Slurm daemons must run as root (slurmd starts the jobs)")
        self._write_files()
        munge = self.root / "munge"
        try:
            self._spawn(
                "munged",
                [
                    "munged", "--foreground", "--force",
                    f"--socket={munge}/munge.socket", f"--key-file={munge}/munge.key",
                    f"--pid-file={munge}/munged.pid", f"--seed-file={munge}/munged.seed",
                    f"--log-file={self.root}/log/munged.log",
                ],
            )  # fmt: skip
            self._wait((munge / "munge.socket").exists, timeout, "munged's socket")
            self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
            self._spawn("slurmd", ["slurmd", "-D", "-f", str(self.conf), "-N", self.host])
            self._wait(self._idle, timeout, "the node to be idle")
        except BaseException:
            self.stop()
            raise

    def stop_controller(self) -> None:
        """Stop slurmctld alone (a daemon that goes away mid-run); jobs keep running."""
        for name, process in self._daemons:
            if name == "slurmctld" and process.poll() is None:
                process.terminate()
                process.wait(10)

    def start_controller(self, timeout: float = 60.0) -> None:
        """Start slurmctld again on its saved state and wait until it answers."""
        self._daemons = [(n, p) for n, p in self._daemons if n != "slurmctld"]
        self._spawn("slurmctld", ["slurmctld", "-D", "-f", str(self.conf)])
        self._wait(lambda: self.run("squeue", check=False).returncode == 0, timeout, "slurmctld")

    def _idle(self) -> bool:
        done = self.run("sinfo", "--noheader", "--Node", "--format=%T", check=False)
        return done.returncode == 0 and done.stdout.strip() == "idle"

    def _wait(self, ready: Callable[[], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            for name, process in self._daemons:
                if process.poll() is not None:
                    raise ClusterError(f"{name} exited with {process.returncode}{self._tails()}")
            if time.monotonic() > deadline:
                raise ClusterError(f"waited {timeout:.0f} s for {what}{self._tails()}")
            time.sleep(0.2)

    def _tails(self) -> str:
        parts = []
        for log in sorted((self.root / "log").glob("*")):
            lines = log.read_text(encoding="utf-8", errors="replace").splitlines()[-8:]
            parts.append(f"\n--- {log.name}\n" + "\n".join(lines))
        return "".join(parts)

    def run(
        self, *argv: str, user: str | None = None, check: bool = True, timeout: float = 30.0
    ) -> subprocess.CompletedProcess[str]:
        """Run a client command (``sbatch``, ``squeue``...) against this cluster.

        ``user`` runs it as that local user (``runuser``); ``check`` raises on a failure.
        """
        command = list(argv) if user is None else ["runuser", "-u", user, "--", *argv]
        done = subprocess.run(
            command, env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )
        if check and done.returncode != 0:
            raise ClusterError(f"{' '.join(command)}: exit {done.returncode}: {done.stderr}")
        return done

    def leftovers(self) -> list[int]:
        """The pids of processes (daemons, steps, jobs) that carry this cluster's marker."""
        mine = f"{MARKER_VAR}={self.root}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                environ = (entry / "environ").read_bytes()
            except OSError:
                continue
            if mine in environ.split(b"\0"):
                found.append(int(entry.name))
        return found

    def stop(self) -> None:
        """Cancel every job, stop the daemons, kill what is left of them; idempotent."""
        if any(process.poll() is None for name, process in self._daemons if name == "slurmctld"):
            self.run("scancel", "--full", "--user=root", check=False)
            for line in self.run("squeue", "-h", "-o", "%u", check=False).stdout.split():
                self.run("scancel", "--full", f"--user={line}", check=False)
            deadline = time.monotonic() + 3 * self._kill_wait + 5
            while (
                time.monotonic() < deadline
                and self.run("squeue", "-h", "-o", "%i", check=False).stdout.strip()
            ):
                time.sleep(0.2)
        for _name, process in reversed(self._daemons):
            if process.poll() is None:
                process.terminate()
                try:
                    process.wait(10)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(5)
        self._daemons.clear()
        for pid in self.leftovers():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def __enter__(self) -> Cluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    """``cluster.py DIR``: start a cluster in DIR, print its SLURM_CONF, wait for Ctrl-C."""
    if len(argv) != 1:
        print("usage: cluster.py DIR", file=sys.stderr)
        return 2
    cluster = Cluster(Path(argv[0]))
    try:
        cluster.start()
    except ClusterError as error:
        print(f"cluster.py: {error}", file=sys.stderr)
        return 1
    print(f"export SLURM_CONF={cluster.conf}", flush=True)
    try:
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
