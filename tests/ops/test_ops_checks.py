"""Every check has a failing and a passing case, fed by recorded NVML and fake sysfs fixtures."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest

from clusterforge.ops.checks import CHECK_IDS, Thresholds, evaluate
from clusterforge.ops.checks.net import drop_ratio
from clusterforge.ops.expect import NodeExpectation, expectation_from_spec
from clusterforge.ops.nvml import RecordedNvml
from clusterforge.ops.readings import NicReading
from clusterforge.ops.runner import NodeChecker, Report
from clusterforge.ops.sysfs import SysfsReader
from clusterforge.ops.xid import load_xid_policy
from clusterforge.spec import parse_spec

DGX_H100 = dataclasses.replace(
    expectation_from_spec(parse_spec({"num_gpus": 64, "node": "dgx-h100"})),
    mounts=("/home", "/scratch"),
)
DGX_H100_ROCE = dataclasses.replace(DGX_H100, fabric="roce")

RunFn = Callable[..., Report]


@pytest.fixture
def run(recorded: Callable[[str], RecordedNvml], fake_root: Callable[[str], Path]) -> RunFn:
    def go(
        nvml: str, sysfs: str = "ib-8x400-healthy.json", expect: NodeExpectation = DGX_H100
    ) -> Report:
        api = recorded(nvml)
        reader = SysfsReader(fake_root(sysfs), timeout_s=2.0)
        checker = NodeChecker(
            node="gpu-0001",
            nvml_factory=lambda: api,
            sysfs=reader,
            expect=expect,
            policy=load_xid_policy(),
            budget_s=4.0,
        )
        return checker.run()

    return go


def status_of(report: Report, check: str, subject: str) -> str:
    matches = [r.status for r in report.results if r.check == check and r.subject == subject]
    assert len(matches) == 1, (check, subject, [(r.check, r.subject) for r in report.results])
    return matches[0]


CASES = [
    # (check, subject, nvml fixture, sysfs fixture, expectation, status)
    ("gpu.nvml", "gpu3", "h100-xid79.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.nvml", "gpu3", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.count", "node", "h100-missing-gpu.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.processes", "gpu0", "h100-gpu-processes.json", "ib-gpu-processes.json", DGX_H100, "pass"),
    ("gpu.processes", "gpu2 pid 4303", "h100-gpu-processes.json", "ib-gpu-processes.json",
     DGX_H100, "fail"),
    ("gpu.count", "node", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.model", "gpu0", "h200-healthy.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.model", "gpu0", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.ecc", "gpu2", "h100-ecc-dbe.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.ecc", "gpu2", "h100-ecc-aggregate-absurd.json", "ib-8x400-healthy.json", DGX_H100, "warn"),
    ("gpu.ecc", "gpu2", "h100-ecc-aggregate.json", "ib-8x400-healthy.json", DGX_H100, "pass"),  # baseline
    ("gpu.ecc", "gpu2", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.memory_repair", "gpu6", "h100-row-remap-failure.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.memory_repair", "gpu6", "h100-row-remap-pending.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.memory_repair", "gpu6", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.xid", "gpu3", "h100-xid79.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.xid", "gpu5", "h100-xid48.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.xid", "gpu1", "h100-xid13.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.xid", "gpu1", "h100-healthy.json", "ib-xid-kernel.json", DGX_H100, "fail"),
    ("gpu.xid", "gpu2", "h100-healthy.json", "ib-xid-kernel.json", DGX_H100, "pass"),
    ("gpu.recovery_action", "gpu2", "h100-recovery-reboot.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.recovery_action", "gpu2", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.thermal", "gpu4", "h100-thermal.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.thermal", "gpu4", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.clocks", "gpu1", "h100-power-brake.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.clocks", "gpu1", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.power", "gpu3", "h100-power-capped.json", "ib-8x400-healthy.json", DGX_H100, "warn"),
    ("gpu.power", "gpu3", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.pcie", "gpu7", "h100-pcie-downgraded.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.pcie", "gpu0", "h100-pcie-gen-idle.json", "ib-8x400-healthy.json", DGX_H100, "warn"),
    ("gpu.pcie", "gpu7", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.nvlink", "gpu0", "h100-nvlink-down.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.nvlink", "gpu0", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("gpu.fabric", "gpu0", "h100-fabric-not-started.json", "ib-8x400-healthy.json", DGX_H100, "fail"),
    ("gpu.fabric", "gpu0", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("nic.count", "node", "h100-healthy.json", "ib-missing-nic.json", DGX_H100, "fail"),
    ("nic.count", "node", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("nic.link", "mlx5_5/1", "h100-healthy.json", "ib-port-down.json", DGX_H100, "fail"),
    ("nic.link", "mlx5_5/1", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("nic.speed", "mlx5_2/1", "h100-healthy.json", "ib-nic-200g.json", DGX_H100, "fail"),
    ("nic.speed", "mlx5_2/1", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("nic.errors", "mlx5_1/1", "h100-healthy.json", "ib-error-counters.json", DGX_H100, "warn"),
    ("nic.errors", "mlx5_1/1", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("nic.drops", "mlx5_4/1", "h100-healthy.json", "ib-drops.json", DGX_H100, "warn"),  # baseline
    ("nic.drops", "mlx5_4/1", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("nic.drops", "mlx5_6/1", "h100-healthy.json", "roce-drops.json", DGX_H100_ROCE, "warn"),
    ("nic.drops", "mlx5_6/1", "h100-healthy.json", "roce-8x400-healthy.json", DGX_H100_ROCE, "pass"),
    ("nic.pause", "mlx5_0/1", "h100-healthy.json", "roce-pause-storm.json", DGX_H100_ROCE, "warn"),
    ("nic.pause", "mlx5_0/1", "h100-healthy.json", "roce-8x400-healthy.json", DGX_H100_ROCE, "pass"),
    ("host.mounts", "/scratch", "h100-healthy.json", "ib-missing-mount.json", DGX_H100, "fail"),
    ("host.mounts", "/scratch", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("host.memory", "node", "h100-healthy.json", "ib-low-memory.json", DGX_H100, "fail"),
    ("host.memory", "node", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
    ("host.affinity", "node", "h100-healthy.json", "ib-numa-skewed.json", DGX_H100, "warn"),
    ("host.affinity", "node", "h100-healthy.json", "ib-8x400-healthy.json", DGX_H100, "pass"),
]  # fmt: skip


@pytest.mark.parametrize(("check", "subject", "nvml", "sysfs", "expect", "status"), CASES)
def test_check_verdict(
    run: RunFn,
    check: str,
    subject: str,
    nvml: str,
    sysfs: str,
    expect: NodeExpectation,
    status: str,
) -> None:
    assert status_of(run(nvml, sysfs, expect), check, subject) == status


def test_every_check_has_a_failing_and_a_passing_case() -> None:
    covered = {(c[0], c[5]) for c in CASES}
    extra = {"gpu.driver", "host.disk_free", "gpu.nvml"}  # tested below with other inputs
    for check in CHECK_IDS:
        assert (check, "pass") in covered or check in extra, check
        assert {(check, "fail"), (check, "warn")} & covered or check in extra, check


@pytest.mark.parametrize(("wanted", "status"), [("550.90.07", "pass"), ("535.183.01", "fail")])
def test_driver_version_against_the_cluster(run: RunFn, wanted: str, status: str) -> None:
    report = run("h100-healthy.json", expect=dataclasses.replace(DGX_H100, driver_version=wanted))
    assert status_of(report, "gpu.driver", "node") == status


@pytest.mark.parametrize(("min_free_gib", "status"), [(0.001, "pass"), (1e9, "fail")])
def test_disk_free(run: RunFn, min_free_gib: float, status: str) -> None:
    report = run(
        "h100-healthy.json", expect=dataclasses.replace(DGX_H100, min_free_gib=min_free_gib)
    )
    assert status_of(report, "host.disk_free", "/scratch") == status


@pytest.mark.parametrize(
    ("nvml", "status", "exit_code"),
    [
        ("h100-healthy.json", "pass", 0),
        ("h100-power-capped.json", "warn", 0),
        ("h100-xid79.json", "fail", 1),
        ("nvml-missing.json", "unknown", 2),
    ],
)
def test_overall_status_and_exit_code(run: RunFn, nvml: str, status: str, exit_code: int) -> None:
    report = run(nvml)
    assert (report.status, report.exit_code) == (status, exit_code)


def test_healthy_h100_and_h200_nodes_pass_everything(run: RunFn) -> None:
    h200 = dataclasses.replace(
        expectation_from_spec(parse_spec({"num_gpus": 64, "node": "dgx-h200"})),
        mounts=("/scratch",),
    )
    for nvml, expect in (("h100-healthy.json", DGX_H100), ("h200-healthy.json", h200)):
        report = run(nvml, expect=expect)
        assert [r for r in report.results if r.status != "pass"] == []
        assert len({r.check for r in report.results}) >= 20


def test_hung_nvml_call_is_reported_within_budget_not_waited_out(run: RunFn) -> None:
    report = run("h100-hung.json")
    assert report.status == "unknown" and report.exit_code == 2
    assert any("hung" in e and "power_w of GPU 4" in e for e in report.errors)
    # budget 4 s -> per-call limit 2.4 s; the hung call is abandoned, not awaited for 3600 s
    assert report.duration_s < 4.0
    # GPUs read before the hang are still judged
    assert status_of(report, "gpu.ecc", "gpu3") == "pass"


def test_nvlink_crc_errors_rising_faster_than_dcgm_limit_fail(run: RunFn) -> None:
    before = run("h100-healthy.json").reading
    after_gpu = dataclasses.replace(before.gpu.gpus[0], nvlink_crc_errors=101 * 10)
    after = dataclasses.replace(
        before,
        taken_at_s=before.taken_at_s + 10.0,
        gpu=dataclasses.replace(before.gpu, gpus=(after_gpu, *before.gpu.gpus[1:])),
    )
    results = evaluate(after, DGX_H100, load_xid_policy(), Thresholds(), previous=before)
    nvlink0 = next(r for r in results if r.check == "gpu.nvlink" and r.subject == "gpu0")
    assert nvlink0.status == "fail"  # 101/s > DCGM_LIMIT_MAX_NVLINK_CRC_ERROR 100/s
    slower = dataclasses.replace(after_gpu, nvlink_crc_errors=99 * 10)
    after_slow = dataclasses.replace(
        after, gpu=dataclasses.replace(after.gpu, gpus=(slower, *before.gpu.gpus[1:]))
    )
    results = evaluate(after_slow, DGX_H100, load_xid_policy(), Thresholds(), previous=before)
    assert (
        next(r for r in results if r.check == "gpu.nvlink" and r.subject == "gpu0").status == "pass"
    )


@pytest.mark.parametrize(("discards", "status"), [(9, "pass"), (11, "fail")])
def test_drop_rate_threshold_is_one_tenth_of_a_percent(discards: int, status: str) -> None:
    nic = NicReading(
        name="mlx5_0",
        link_layer="Ethernet",
        counters={"rx_packets_phy": 10_000, "rx_discards_phy": discards, "tx_packets_phy": 10_000},
    )
    ratio = drop_ratio(nic, None)
    assert ratio is not None
    assert (ratio > Thresholds().max_drop_ratio) == (status == "fail")


def test_counters_are_judged_by_their_increase_when_a_previous_reading_exists() -> None:
    before = NicReading(
        name="mlx5_0",
        link_layer="InfiniBand",
        counters={"port_xmit_discards": 5_000_000, "port_xmit_packets": 1_000_000_000},
    )
    after = dataclasses.replace(
        before, counters={"port_xmit_discards": 5_000_010, "port_xmit_packets": 1_100_000_000}
    )  # fmt: skip
    assert drop_ratio(before, None) == pytest.approx(0.005)
    assert drop_ratio(after, before) == pytest.approx(10 / 100_000_000)
