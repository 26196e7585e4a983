"""Bring up generated Slurm files on one machine: slurmctld plus one ``slurmd -N`` per node.

Debian's slurm-wlm supports several slurmd on one host (slurmd(8) ``-N``, Slurm's "multiple
slurmd" mode).  Only machine-specific lines are rewritten, and each rewrite is listed here:

* ``SlurmctldHost`` -> this host; ``SlurmUser`` -> root (the daemons run as root here);
* ports: ``SlurmctldPort`` and a ``Port=`` per node (:class:`Ports`, so several emulated
  clusters on one host stay apart);
* paths: state, spool, pid and log files into the work folder; the health-check, prolog and
  epilog paths to copies of the generated scripts whose ``CLUSTERFORGE=`` line points at
  :attr:`EmulatedSlurm.hook_program` (by default a recorder: no GPU here, so
  ``clusterforge check`` has nothing true to say unless the caller supplies readings) and,
  when :attr:`EmulatedSlurm.spec_copy` is set, whose ``SPEC=`` line points at that copy;
  gres ``File=`` to files standing in for ``/dev/nvidia*``;
* node hardware: ``CPUs``/``Sockets``/``CoresPerSocket``/``ThreadsPerCore``/``RealMemory`` to
  what ``slurmd -C`` reports (slurmd drains a node with less than configured), and
  ``NodeHostname``/``NodeAddr`` added so all nodes resolve to this machine;
* accounting: no slurmdbd runs here (it needs MySQL/MariaDB), and slurmctld refuses to
  start with ``accounting_storage/slurmdbd`` until the database has answered once, so
  ``AccountingStorageType`` becomes ``accounting_storage/none`` and the settings that need
  slurmdbd (``AccountingStorageEnforce``, ``AccountingStorageTRES``) are dropped;
* ``FirstJobId`` in the cluster's own range, so job cgroups (``slurm_<node>/uid_0/job_<id>``)
  never meet those of another emulated cluster with the same node names on this host;
* ``MinJobAge`` (:data:`MIN_JOB_AGE_S`, not the default 300 s): ``sbatch --wait`` polls its
  job after 2 s and then multiplies its wait by 4 (to 32 s at most) while the wait is under
  a third of ``MinJobAge`` (Slurm ``src/sbatch/sbatch.c``, ``_job_wait``), so with the default
  a 15 s job returns after 42 s; with 6 s it polls every 2 s.  It only sets how long a
  finished job's record stays in slurmctld's memory;
* process tracking only where cgroups cannot work (see :func:`cgroups_unavailable`):
  ``proctrack/linuxproc`` and ``task/none`` instead of the generated cgroup plugins.

The generated ``cgroup.conf`` (``CgroupPlugin=autodetect``, ``Constrain*=yes``) is used as
generated.  It works because Debian's Slurm names each slurmd's cgroup subtree after its
node (``slurm_gpu-0001``), so several slurmd share one cgroup v1 hierarchy, and the
``/dev/nvidia*`` stand-ins are character devices (major 195, as the NVIDIA driver's), which
``ConstrainDevices`` needs to grant or deny them per job.

Everything else (node names, GRES, features, partitions, topology, job scripts) is used
as generated.

Which Slurm runs the files: Debian's on PATH by default, or the install under
:attr:`EmulatedSlurm.slurm_prefix` (a build configured with that ``--prefix``, so slurmd finds
slurmstepd and the plugins there): its ``bin``/``sbin`` go first on PATH and its ``lib`` on
LD_LIBRARY_PATH for the daemons and every command run through :meth:`EmulatedSlurm.run`.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from clusterforge.errors import AdapterError

__all__ = [
    "EmulatedSlurm",
    "Ports",
    "cgroups_unavailable",
    "expand_hostlist",
    "slurm_env",
    "slurm_release_of",
]

NVIDIA_MAJOR = 195  # character-device major of /dev/nvidia[0-9]* (NVIDIA driver)
MIN_JOB_AGE_S = 6  # sbatch --wait then polls every 2 s (see the module's docstring)


def cgroups_unavailable() -> str | None:
    """Why the generated cgroup plugins cannot run on this machine, or None when they can.

    Slurm 22.05's cgroup/v1 needs the v1 controllers mounted writable; its cgroup/v2 needs
    systemd to delegate a scope for slurmstepd, which a container without systemd lacks.
    ``ConstrainDevices`` needs real character devices for the GPU stand-ins (mknod).
    """
    if os.geteuid() != 0:
        return "not root: slurmd cannot create cgroups"
    for controller in ("memory", "devices", "cpuset", "freezer"):
        path = Path("/sys/fs/cgroup") / controller
        if not (path.is_dir() and os.access(path, os.W_OK)):
            return f"no writable cgroup v1 {controller} hierarchy at {path}"
    probe = Path(tempfile.mkdtemp(prefix="cfgen-mknod-")) / "nvidia0"
    try:
        os.mknod(probe, stat.S_IFCHR | 0o600, os.makedev(NVIDIA_MAJOR, 0))
    except OSError as exc:
        return f"cannot create character devices for the GPU stand-ins: {exc}"
    finally:
        shutil.rmtree(probe.parent, ignore_errors=True)
    return None


def expand_hostlist(expr: str) -> list[str]:
    """Expand ``pre[0001-0003,0007]`` or ``name`` (one bracket per item, comma-separated)."""
    names = []
    for prefix, body, plain in re.findall(r"([^,\[]*)\[([^\]]*)\]|([^,\[\]]+)", expr):
        if plain:
            names.append(plain)
            continue
        for part in body.split(","):
            lo, _, hi = part.partition("-")
            width = len(lo)
            names += [f"{prefix}{i:0{width}d}" for i in range(int(lo), int(hi or lo) + 1)]
    return names


def slurm_env(prefix: Path | None) -> dict[str, str]:
    """This process's environment with the Slurm under ``prefix`` first (None: as it is)."""
    env = dict(os.environ)
    if prefix is None:
        return env
    env["PATH"] = f"{prefix / 'bin'}:{prefix / 'sbin'}:{env.get('PATH', '/usr/bin:/bin')}"
    libs = [str(prefix / "lib"), env.get("LD_LIBRARY_PATH", "")]
    env["LD_LIBRARY_PATH"] = ":".join(p for p in libs if p)
    return env


def slurm_release_of(prefix: Path | None) -> str:
    """The year.month release of slurmctld (``slurm 25.11.7`` -> ``25.11``)."""
    out = subprocess.run(
        ["slurmctld", "-V"], check=True, capture_output=True, text=True, env=slurm_env(prefix)
    ).stdout
    match = re.search(r"(\d+)\.(\d+)\.\d+", out)
    if not match:
        raise AdapterError(f"slurmctld -V printed no version: {out!r}")
    return f"{int(match[1]):02d}.{int(match[2]):02d}"


def _slurmd_hardware(env: dict[str, str]) -> str:
    out = subprocess.run(
        ["slurmd", "-C"], check=True, capture_output=True, text=True, env=env
    ).stdout
    fields = dict(re.findall(r"(\w+)=(\S+)", out.splitlines()[0]))
    memory = int(fields["RealMemory"]) // 2  # leave room: several slurmd share this memory
    return (
        f"CPUs={fields['CPUs']} Sockets={fields['SocketsPerBoard']} "
        f"CoresPerSocket={fields['CoresPerSocket']} ThreadsPerCore={fields['ThreadsPerCore']} "
        f"RealMemory={memory}"
    )


_HARDWARE_RE = re.compile(
    r"CPUs=\d+ Sockets=\d+ CoresPerSocket=\d+ ThreadsPerCore=\d+ RealMemory=\d+"
)


def _port_taken(port: int) -> bool:
    """Whether something listens on TCP ``port`` of any address (a bind that would fail)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is no owner
        try:
            probe.bind(("", port))
        except OSError:
            return True
    return False


@dataclass(frozen=True)
class Ports:
    """Where one emulated cluster listens, and its job-id range (one set per cluster on a host)."""

    ctld_port: int = 16817
    first_slurmd_port: int = 17001  # node i listens on first_slurmd_port + i
    first_job_id: int = 16817000


@dataclass
class EmulatedSlurm:
    generated: Path  # the generated slurm/ folder
    work: Path
    cluster: str = "cfgen"
    ports: Ports = field(default_factory=Ports)
    hook_program: Path | None = None  # what the hooks run as CLUSTERFORGE; None: a recorder
    spec_copy: Path | None = None  # what the hooks pass as SPEC; None: as generated
    nodes: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    cgroup_fallback: str | None = None  # why the cgroup plugins were replaced, if they were
    slurm_prefix: Path | None = None  # where the Slurm to run is installed; None: Debian's

    @property
    def conf(self) -> Path:
        return self.work / "slurm.conf"

    @property
    def fail_calls(self) -> Path:
        return self.work / "fail-calls"

    @property
    def recorder_log(self) -> Path:
        return self.work / "clusterforge-calls.log"

    def prepare(self) -> None:
        self.env = {**slurm_env(self.slurm_prefix), "SLURM_CONF": str(self.conf)}
        self.cgroup_fallback = cgroups_unavailable()
        for sub in ("state", "dev", "log", "fakebin"):
            (self.work / sub).mkdir(parents=True, exist_ok=True)
        self._write_recorder()
        if self.hook_program is None:
            self.hook_program = self.work / "fakebin" / "clusterforge"
        for script in ("healthcheck", "prolog", "epilog"):
            self._copy_hook(f"clusterforge-{script}.sh")
        self._write_conf()
        self._write_gres()
        shutil.copy(self.generated / "topology.conf", self.work / "topology.conf")
        shutil.copy(self.generated / "cgroup.conf", self.work / "cgroup.conf")

    def _write_recorder(self) -> None:
        recorder = self.work / "fakebin" / "clusterforge"
        # Records each call; a call listed in fail-calls exits 1 ("unhealthy").
        recorder.write_text(
            "#!/bin/sh\n"
            f'echo "$*" >> {self.recorder_log}\n'
            f'if grep -qxF -- "$*" {self.fail_calls} 2>/dev/null; then exit 1; fi\n'
            "exit 0\n"
        )
        recorder.chmod(0o755)

    def _copy_hook(self, name: str) -> None:
        text = (self.generated / name).read_text()
        text, count = re.subn(
            r"^CLUSTERFORGE=.*$", f"CLUSTERFORGE={self.hook_program}", text, flags=re.M
        )
        assert count == 1, name
        if self.spec_copy is not None:
            text = re.sub(r"^SPEC=.*$", f"SPEC={self.spec_copy}", text, flags=re.M)
        target = self.work / name
        target.write_text(text)
        target.chmod(0o755)

    def _rewrite_node_lines(self, text: str) -> str:
        hardware = _slurmd_hardware(self.env)
        host = socket.gethostname().split(".")[0]
        lines = []
        port = self.ports.first_slurmd_port
        for line in text.splitlines():
            match = re.match(r"^NodeName=(\S+) (.*)$", line)
            if not match:
                lines.append(line)
                continue
            rest = _HARDWARE_RE.sub(hardware, match[2])
            for node in expand_hostlist(match[1]):
                self.nodes.append(node)
                lines.append(
                    f"NodeName={node} NodeHostname={host} NodeAddr=127.0.0.1 Port={port} {rest}"
                )
                port += 1
        return "\n".join(lines) + "\n"

    def _write_conf(self) -> None:
        w = self.work
        host = socket.gethostname().split(".")[0]
        text = (self.generated / "slurm.conf").read_text()
        text = re.sub(r"^SlurmctldHost=.*\n", "", text, flags=re.M)
        replace = {
            "ClusterName": self.cluster,
            "SlurmUser": "root",
            "SlurmctldPort": str(self.ports.ctld_port),
            "StateSaveLocation": str(w / "state"),
            "SlurmdSpoolDir": str(w / "spool-%n"),
            "SlurmctldPidFile": str(w / "slurmctld.pid"),
            "SlurmdPidFile": str(w / "slurmd-%n.pid"),
            "SlurmctldLogFile": str(w / "log" / "slurmctld.log"),
            "SlurmdLogFile": str(w / "log" / "slurmd-%n.log"),
            "HealthCheckProgram": str(w / "clusterforge-healthcheck.sh"),
            "Prolog": str(w / "clusterforge-prolog.sh"),
            "Epilog": str(w / "clusterforge-epilog.sh"),
            "AccountingStorageType": "accounting_storage/none",
        }
        if self.cgroup_fallback:
            replace |= {"ProctrackType": "proctrack/linuxproc", "TaskPlugin": "task/none"}
        for key, value in replace.items():
            text, count = re.subn(rf"^{key}=.*$", f"{key}={value}", text, flags=re.M)
            assert count == 1, key
        for key in ("AccountingStorageEnforce", "AccountingStorageTRES"):
            text, count = re.subn(rf"^{key}=.*\n", "", text, flags=re.M)
            assert count == 1, key
        assert "FirstJobId=" not in text and "MinJobAge=" not in text
        text += f"FirstJobId={self.ports.first_job_id}\nMinJobAge={MIN_JOB_AGE_S}\n"
        text = re.sub(r"^SlurmdPort=.*\n", "", text, flags=re.M)
        text = f"SlurmctldHost={host}\n" + self._rewrite_node_lines(text)
        self.conf.write_text(text)
        for node in self.nodes:
            (w / f"spool-{node}").mkdir(exist_ok=True)

    def _write_gres(self) -> None:
        text = (self.generated / "gres.conf").read_text()
        match = re.search(r"File=/dev/nvidia\[0-(\d+)\]", text)
        assert match, "gres.conf has no /dev/nvidia[0-N] File"
        for i in range(int(match[1]) + 1):
            device = self.work / "dev" / f"nvidia{i}"
            if self.cgroup_fallback:
                device.touch()
            else:
                os.mknod(device, stat.S_IFCHR | 0o600, os.makedev(NVIDIA_MAJOR, i))
        text = text.replace("File=/dev/nvidia", f"File={self.work / 'dev' / 'nvidia'}")
        (self.work / "gres.conf").write_text(text)

    def start(self) -> None:
        """Run each daemon in the foreground (-D) as our child, so stop() can reap it."""
        wanted = [self.ports.ctld_port] + [
            self.ports.first_slurmd_port + i for i in range(len(self.nodes))
        ]
        busy = [port for port in wanted if _port_taken(port)]
        if busy:
            raise AdapterError(
                f"TCP port(s) {', '.join(map(str, busy))} of this emulated cluster are already "
                "listening, most likely a slurmctld/slurmd left by an earlier rehearsal that was "
                f"killed; find it with `ss -ltnp 'sport = :{busy[0]}'` and stop it, or give this "
                "cluster other ports"
            )
        self._spawn(["slurmctld", "-D", "-f", str(self.conf)])
        for node in self.nodes:
            self._spawn(["slurmd", "-D", "-f", str(self.conf), "-N", node])

    def _spawn(self, argv: list[str]) -> None:
        proc = subprocess.Popen(
            argv, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        self.processes.append(proc)

    def run(self, *args: str, check: bool = True) -> str:
        out = subprocess.run(list(args), capture_output=True, text=True, env=self.env, timeout=60)
        if check and out.returncode:
            raise AdapterError(f"{' '.join(args)} exited {out.returncode}: {out.stderr.strip()}")
        return out.stdout

    def wait_idle(self, timeout_s: float = 60) -> dict[str, str]:
        deadline = time.monotonic() + timeout_s
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            out = self.run("sinfo", "-N", "-h", "-o", "%N %t", check=False)
            states = dict(line.split() for line in out.splitlines() if line.strip())
            if set(self.nodes) <= set(states) and all(states[n] == "idle" for n in self.nodes):
                return states
            time.sleep(1)
        return states

    def _end_jobs(self, within_s: float = 20.0) -> None:
        """Cancel every job still known to this cluster and wait until the queue is empty: a
        job's slurmstepd outlives a slurmd stopped under it, waiting for it for ever."""
        if not self.processes or any(p.poll() is not None for p in self.processes):
            return  # a daemon is gone: the queue cannot be asked
        deadline = time.monotonic() + within_s
        while (jobs := self.run("squeue", "-h", "-o", "%i", check=False).split()) and (
            time.monotonic() < deadline
        ):
            self.run("scancel", *jobs, check=False)
            time.sleep(0.5)

    def stop(self) -> None:
        """End the jobs, stop our daemons by the pids in their pid files (and our own
        handles), then reap."""
        self._end_jobs()
        pids = {p.pid for p in self.processes}
        for pid_file in [self.work / f"slurmd-{n}.pid" for n in self.nodes] + [
            self.work / "slurmctld.pid"
        ]:
            try:
                pids.add(int(pid_file.read_text().strip()))
            except (FileNotFoundError, ValueError):
                continue
        mine = pids & {p.pid for p in self.processes}
        for pid in mine:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        for proc in self.processes:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
