"""GPU misuse: every process holding a GPU belongs to a running Slurm job or a Kubernetes pod,
is allowed by name, or is reported (outside a job, or a miner), exported, and drained."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from ops_fixtures import NVML_FIXTURES
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from clusterforge.errors import CheckError
from clusterforge.generate.monitoring.metrics import EXPORTER_FOREIGN_PROCESS_METRIC
from clusterforge.ops.actions import drain_reason
from clusterforge.ops.cgroups import cgroup_owner, cgroup_path
from clusterforge.ops.checker import build_checker
from clusterforge.ops.checks.processes import load_process_policy
from clusterforge.ops.expect import NodeExpectation
from clusterforge.ops.exporter import Exporter
from clusterforge.ops.nvml import RecordedNvml, collect_gpu_snapshot, snapshot_to_fixture
from clusterforge.ops.nvml_pynvml import PynvmlApi
from clusterforge.ops.options import SourceOptions
from clusterforge.ops.procfs import ProcReader
from clusterforge.ops.readings import (
    GpuProcess,
    GpuReading,
    ProcessReading,
    node_reading_from_dict,
    to_jsonable,
)
from clusterforge.ops.runner import NodeChecker, Report
from clusterforge.ops.sysfs import SysfsReader
from clusterforge.ops.xid import load_xid_policy

NVML = "h100-gpu-processes.json"
PROCS = "ib-gpu-processes.json"


# --- cgroup paths -> owner ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "kind", "owner_id"),
    [
        # Slurm cgroup/v2: system.slice/slurmstepd.scope/job_<id>/step_<s>/user/task_<n>
        ("/system.slice/slurmstepd.scope/job_3385/step_0/user/task_0", "slurm_job", "3385"),
        ("/system.slice/slurmstepd.scope/job_7/step_extern/user/task_0", "slurm_job", "7"),
        # --enable-multiple-slurmd prefixes the node name to the scope
        (
            "/system.slice/gpu-0001_slurmstepd.scope/job_12/step_batch/user/task_0",
            "slurm_job",
            "12",
        ),
        # Slurm cgroup/v1: /slurm/uid_<uid>/job_<id>/step_<s>/task_<n>
        ("/slurm/uid_1001/job_280678/step_interactive/task_0", "slurm_job", "280678"),
        # kubelet, systemd driver (dashes of the pod UID become underscores) and cgroupfs
        (
            "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0b7632a2_a56e_4278_"
            "987a_22de18008dbe.slice/cri-containerd-4f1e.scope",
            "pod",
            "0b7632a2-a56e-4278-987a-22de18008dbe",
        ),
        (
            "/kubepods.slice/kubepods-pod12345678_1234_1234_1234_123456789abc.slice/crio-1.scope",
            "pod",
            "12345678-1234-1234-1234-123456789abc",
        ),
        (
            "/kubepods/besteffort/pod12345678-1234-1234-1234-123456789abc/0123abcd",
            "pod",
            "12345678-1234-1234-1234-123456789abc",
        ),
    ],
)
def test_job_and_pod_cgroups_name_their_owner(path: str, kind: str, owner_id: str) -> None:
    owner = cgroup_owner(path)
    assert owner is not None and (owner.kind, owner.id) == (kind, owner_id)


def test_slurmds_own_cgroup_is_a_job_of_unknown_id() -> None:
    """Without proctrack/cgroup, slurmstepd and the tasks it starts stay in slurmd's service
    cgroup: a job's process, which job cannot be told (never an orphan, never outside)."""
    owner = cgroup_owner("/system.slice/slurmd.service")
    assert owner is not None and (owner.kind, owner.id) == ("slurm_job", "")


@pytest.mark.parametrize(
    "path",
    [
        "/user.slice/user-1002.slice/session-7.scope",  # an ssh login, not adopted by a job
        "/system.slice/slurmstepd.scope/system",  # slurmstepd's waiting area, no job
        "/system.slice/nvidia-dcgm.service",
        "/job_12",  # a job_ folder anywhere is not Slurm's
        "/",
    ],
)
def test_other_cgroups_have_no_owner(path: str) -> None:
    assert cgroup_owner(path) is None


def test_cgroup_path_prefers_the_unified_line() -> None:
    assert cgroup_path("0::/system.slice/x.service\n") == "/system.slice/x.service"
    v1 = "12:memory:/slurm/uid_1/job_5/step_0\n11:cpuset:/\n1:name=systemd:/user.slice\n"
    assert cgroup_path(v1) == "/slurm/uid_1/job_5/step_0"
    assert cgroup_path("") is None


# --- /proc reader ---------------------------------------------------------------------------


def test_proc_reader_reads_user_command_cgroup_and_job_state(
    fake_root: Callable[[str], Path],
) -> None:
    reader = ProcReader(fake_root(PROCS))
    miner = reader.process(4404)
    assert (miner.found, miner.uid, miner.user, miner.comm) == (True, 1001, "alice", "kworker-gpu")
    assert miner.cmdline[:2] == ("./kworker-gpu", "-a")
    assert miner.cgroup == "/system.slice/slurmstepd.scope/job_3385/step_1/user/task_0"
    assert miner.job_running is True  # job 3385 has its slurmstepd
    assert reader.process(4202).job_running is False  # job 3377: no slurmstepd left
    assert reader.process(4303).job_running is None  # not in a job
    gone = reader.process(999999)
    assert gone.found is False and gone.user is None


def test_a_path_relative_to_a_cgroup_namespace_does_not_make_an_orphan(
    fake_root: Callable[[str], Path],
) -> None:
    """In a container's own cgroup namespace, a host process's path starts with '/..'
    (cgroups(7), "Cgroup namespaces") and the job's folder is not under /sys/fs/cgroup:
    the job's state cannot be told, which must not read as "ended"."""
    root = fake_root(PROCS)
    (root / "proc/4101/cgroup").write_text(
        "0::/../../system.slice/slurmstepd.scope/job_3385/step_0/user/task_0\n"
    )
    (root / "proc/4202/cgroup").write_text(
        "0::/../../system.slice/slurmstepd.scope/job_3377/step_0/user/task_1\n"
    )
    reader = ProcReader(root)
    assert reader.process(4101).job_running is None
    assert reader.process(4202).job_running is None


def test_an_unknown_uid_is_shown_as_a_number(fake_root: Callable[[str], Path]) -> None:
    root = fake_root(PROCS)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    assert ProcReader(root).process(4303).user == "1002"


# --- the check ------------------------------------------------------------------------------


@pytest.fixture
def run(recorded: Callable[[str], RecordedNvml], fake_root: Callable[[str], Path]) -> Any:
    def go(nvml: str = NVML, sysfs: str = PROCS, **checker_args: Any) -> Report:
        api = recorded(nvml)
        checker = NodeChecker(
            node="gpu-0001",
            nvml_factory=lambda: api,
            sysfs=SysfsReader(fake_root(sysfs), timeout_s=2.0),
            expect=NodeExpectation(),
            policy=load_xid_policy(),
            budget_s=4.0,
            **checker_args,
        )
        return checker.run()

    return go


def _process_results(report: Report) -> dict[str, Any]:
    return {r.subject: r for r in report.results if r.check == "gpu.processes"}


def test_every_gpu_process_is_judged(run: Callable[..., Report]) -> None:
    report = run()
    results = _process_results(report)
    statuses = {subject: r.status for subject, r in results.items()}
    assert statuses == {
        "gpu0": "pass",  # in running job 3385
        "gpu1 pid 4202": "fail",  # job 3377 ended, the process stayed: an orphan
        "gpu2 pid 4303": "fail",  # outside any job
        "gpu3 pid 4404": "fail",  # a miner inside a running job is still a miner
        "gpu4": "pass",  # nv-hostengine (DCGM) is allowed
        "gpu5": "pass",  # a pod's container
        "gpu6 pid 4707": "fail",  # a known miner's name
        "gpu7": "pass",  # nothing running
    }
    orphan = results["gpu1 pid 4202"]
    assert "job 3377" in orphan.observed and "alice" in orphan.observed
    assert "eval.py" in orphan.observed and "GPU-a1010000" in orphan.observed
    outside = results["gpu2 pid 4303"]
    assert "mallory" in outside.observed and "/tmp/.x/cuda-bench --all" in outside.observed
    assert outside.severity == "critical" and outside.gpu == 2
    miner = results["gpu3 pid 4404"]
    assert "stratum+tcp://" in miner.observed and "miner" in miner.observed
    assert "xmrig" in results["gpu6 pid 4707"].observed
    assert report.status == "fail"


def test_foreign_processes_drain_the_node(run: Callable[..., Report]) -> None:
    reason = drain_reason(run())
    assert "gpu.processes: gpu2 pid 4303" in reason
    assert "gpu.processes: gpu3 pid 4404" in reason


def test_a_node_whose_gpus_run_only_jobs_passes(run: Callable[..., Report]) -> None:
    report = run("h100-healthy.json", PROCS)
    assert report.status == "pass"  # no process lists (older fixture): nothing to judge
    assert _process_results(report) == {}


def test_the_allow_list_is_configurable_but_never_allows_a_miner(
    run: Callable[..., Report],
) -> None:
    policy = load_process_policy(extra_allowed=("cuda-bench", "xmrig", "kworker-gpu"))
    statuses = {s: r.status for s, r in _process_results(run(process_policy=policy)).items()}
    assert statuses["gpu2"] == "pass"  # the site allows its benchmark
    assert statuses["gpu3 pid 4404"] == "fail"  # a stratum URL is a miner whatever its name
    assert statuses["gpu6 pid 4707"] == "fail"  # a miner's name cannot be allowed


def test_an_empty_allowed_name_is_a_clear_error() -> None:
    with pytest.raises(CheckError, match="allowed process name"):
        load_process_policy(extra_allowed=("",))


def test_a_process_that_exited_between_the_readings_is_unknown_not_drained(
    run: Callable[..., Report], fake_root: Callable[[str], Path], tmp_path: Path
) -> None:
    fixture = tmp_path / "gone.json"
    fixture.write_text(
        '{"base": "%s", "gpu_patches": {"0": {"processes": [{"pid": 777777}]}}}'
        % (NVML_FIXTURES / "h100-healthy.json")
    )
    api = RecordedNvml.from_file(fixture)
    checker = NodeChecker(
        node="gpu-0001",
        nvml_factory=lambda: api,
        sysfs=SysfsReader(fake_root(PROCS), timeout_s=2.0),
        expect=NodeExpectation(),
        policy=load_xid_policy(),
        budget_s=4.0,
    )
    report = checker.run()
    result = _process_results(report)["gpu0 pid 777777"]
    assert result.status == "unknown" and "hostPID" in result.remedy
    assert report.status == "pass"


# --- NVML: fixture format and the real adapter ----------------------------------------------


def test_recorded_process_lists_round_trip(recorded: Callable[[str], RecordedNvml]) -> None:
    snapshot = collect_gpu_snapshot(recorded(NVML))
    assert snapshot.gpus[0].processes == (GpuProcess(pid=4101, used_memory_mib=61440.0),)
    assert snapshot.gpus[6].processes == (GpuProcess(pid=4707, used_memory_mib=None),)
    assert snapshot.gpus[7].processes == ()
    fixture = snapshot_to_fixture(snapshot, "round trip")
    again = collect_gpu_snapshot(RecordedNvml(fixture))
    assert [g.processes for g in again.gpus] == [g.processes for g in snapshot.gpus]


def test_readings_with_processes_round_trip_through_json() -> None:
    from clusterforge.ops.readings import GpuSnapshot, NodeReading

    reading = NodeReading(
        node="n",
        taken_at_s=1.0,
        gpu=GpuSnapshot(gpus=(GpuReading(index=0, processes=(GpuProcess(5, 1.5),)),)),
        processes=(ProcessReading(pid=5, found=True, uid=0, cmdline=("a", "b")),),
    )
    assert node_reading_from_dict(to_jsonable(reading)) == reading


def test_pynvml_adapter_lists_compute_and_graphics_processes() -> None:
    import pynvml
    from test_ops_nvml import _fake_pynvml

    mib = 1024 * 1024
    fake = _fake_pynvml(
        {
            "nvmlDeviceGetComputeRunningProcesses": lambda h: [
                SimpleNamespace(pid=11, usedGpuMemory=512 * mib),
                SimpleNamespace(pid=12, usedGpuMemory=None),  # NVML: value not available
            ],
            "nvmlDeviceGetGraphicsRunningProcesses": lambda h: [
                SimpleNamespace(pid=11, usedGpuMemory=512 * mib),  # also a graphics context
                SimpleNamespace(pid=13, usedGpuMemory=64 * mib),
            ],
        }
    )
    gpu = collect_gpu_snapshot(PynvmlApi(fake)).gpus[0]  # type: ignore[arg-type]
    assert gpu.processes == (
        GpuProcess(pid=11, used_memory_mib=512.0),
        GpuProcess(pid=12, used_memory_mib=None),
        GpuProcess(pid=13, used_memory_mib=64.0),
    )
    assert pynvml.NVML_ERROR_NOT_SUPPORTED == 3


def test_pynvml_adapter_without_graphics_processes_keeps_the_compute_ones() -> None:
    from test_ops_nvml import _fake_pynvml

    fake = _fake_pynvml(
        {
            "nvmlDeviceGetComputeRunningProcesses": lambda h: [
                SimpleNamespace(pid=21, usedGpuMemory=0)
            ]
        }
    )
    gpu = collect_gpu_snapshot(PynvmlApi(fake)).gpus[0]  # type: ignore[arg-type]
    assert gpu.processes == (GpuProcess(pid=21, used_memory_mib=0.0),)


# --- exporter -------------------------------------------------------------------------------


def _families(exporter: Exporter) -> dict[str, list[tuple[dict[str, str], float]]]:
    text = generate_latest(exporter.registry).decode()
    return {
        f.name: [(s.labels, s.value) for s in f.samples if not s.name.endswith("_created")]
        for f in text_string_to_metric_families(text)
    }


def test_exporter_counts_foreign_processes_per_gpu_and_kind(
    fake_root: Callable[[str], Path],
) -> None:
    source = SourceOptions(
        node="gpu-0001",
        nvml_fixture=NVML_FIXTURES / NVML,
        sysfs_root=fake_root(PROCS),
        budget_s=4.0,
    )
    exporter = Exporter(build_checker(source))
    exporter.refresh()
    families = _families(exporter)
    # the generated alert rules read this metric by this name
    assert EXPORTER_FOREIGN_PROCESS_METRIC == "clusterforge_gpu_foreign_processes"
    counts = {(s["gpu"], s["kind"]): v for s, v in families[EXPORTER_FOREIGN_PROCESS_METRIC]}
    assert counts[("1", "outside_job")] == 1 and counts[("1", "miner")] == 0
    assert counts[("2", "outside_job")] == 1
    assert counts[("3", "miner")] == 1 and counts[("3", "outside_job")] == 0
    assert counts[("6", "miner")] == 1
    assert counts[("0", "outside_job")] == 0 and counts[("0", "miner")] == 0
    assert len(counts) == 16  # every GPU, both kinds: an alert sees 0, not an absent series
    info = {s["pid"]: s for s, _v in families["clusterforge_gpu_foreign_process_info"]}
    assert set(info) == {"4202", "4303", "4404", "4707"}
    assert info["4303"]["user"] == "mallory" and info["4303"]["kind"] == "outside_job"
    assert info["4404"]["command"].startswith("./kworker-gpu -a kawpow")


def test_the_check_command_allows_processes_by_name(
    fake_root: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from clusterforge.cli.main import main

    root = fake_root(PROCS)
    args = ["check", "--json", "--nvml-fixture", str(NVML_FIXTURES / NVML), "--sysfs-root",
            str(root), "--node", "gpu-0001", "--timeout-s", "4"]  # fmt: skip
    assert main([*args, "--allow-process", "cuda-bench"]) == 1
    report = json.loads(capsys.readouterr().out)
    subjects = {
        r["subject"]: r["status"] for r in report["results"] if r["check"] == "gpu.processes"
    }
    assert subjects["gpu2"] == "pass" and subjects["gpu1 pid 4202"] == "fail"


def test_a_path_as_allowed_process_is_one_user_error(
    fake_root: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    from clusterforge.cli.main import main

    args = ["check", "--nvml-fixture", str(NVML_FIXTURES / NVML), "--sysfs-root",
            str(fake_root(PROCS)), "--allow-process", "/usr/bin/dcgmi"]  # fmt: skip
    assert main(args) == 1
    err = capsys.readouterr().err
    assert "allowed process name '/usr/bin/dcgmi'" in err and "Traceback" not in err


def test_process_policy_is_a_frozen_value() -> None:
    policy = load_process_policy()
    assert "nv-hostengine" in policy.allowed_names and "xmrig" in policy.miner_names
    with pytest.raises(dataclasses.FrozenInstanceError):
        policy.allowed_names = ()  # type: ignore[misc]
