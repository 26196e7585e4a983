"""XID policy and kernel-log parsing, sysfs reading, and expectations from the spec."""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from clusterforge.design import plan
from clusterforge.errors import CatalogError, CheckError
from clusterforge.ops.checks.base import Thresholds
from clusterforge.ops.checks.gpu_links import check_power
from clusterforge.ops.expect import (
    ExpectOverrides,
    NodeExpectation,
    expectation_from_design,
    expectation_from_spec,
    with_overrides,
)
from clusterforge.ops.readings import GpuReading
from clusterforge.ops.sysfs import SysfsReader, parse_ethtool_stats
from clusterforge.ops.xid import load_xid_policy, parse_kernel_xids
from clusterforge.spec import parse_spec

# --- XID policy -------------------------------------------------------------------------


@pytest.mark.parametrize("xid", [48, 79, 94, 95])
def test_default_policy_drains_on_fatal_xids(xid: int) -> None:
    # DCGM's health watch fails on these everywhere ("devastating", DcgmHealthWatch.cpp)
    assert load_xid_policy().rule(xid).action == "drain"


@pytest.mark.parametrize("xid", [13, 31, 43])
def test_default_policy_leaves_application_xids_alone(xid: int) -> None:
    # NVIDIA's XID catalog buckets these RESTART_APP: the application's fault, not the GPU's
    assert load_xid_policy().rule(xid).action == "ignore"


def test_unlisted_xid_gets_the_default_action() -> None:
    assert load_xid_policy().rule(9999).action == "warn"


def test_site_policy_overrides_single_codes(tmp_path: Path) -> None:
    site = tmp_path / "xid.yaml"
    site.write_text("xids:\n  63: drain\n  79: {action: warn}\ndefault_action: ignore\n")
    policy = load_xid_policy(site)
    assert policy.rule(63).action == "drain"
    assert policy.rule(79).action == "warn" and policy.rule(79).catalog == "RESTART_BM"
    assert policy.rule(48).action == "drain"  # untouched codes keep the default
    assert policy.rule(9999).action == "ignore"


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("xids:\n  79: reboot\n", "not one of"),
        ("xids:\n  abc: drain\n", "not an XID"),
        ("[1, 2]\n", "mapping"),
    ],
)
def test_bad_site_policy_names_the_problem(tmp_path: Path, text: str, match: str) -> None:
    site = tmp_path / "xid.yaml"
    site.write_text(text)
    with pytest.raises(CheckError, match=match):
        load_xid_policy(site)


def test_kernel_xids_are_parsed_with_their_age() -> None:
    log = (
        "2026-11-30T09:50:00,123456+00:00 NVRM: Xid (PCI:0000:2a:00): 79, pid=1, GPU has fallen off the bus.\n"
        "2026-11-30T09:55:00,000000+00:00 mlx5_core 0000:18:00.0: something else\n"
        "NVRM: Xid (PCI:0000:3A:00): 48, pid=9, An uncorrectable double bit error\n"
    )
    events = parse_kernel_xids(log, now=datetime(2026, 11, 30, 10, 0, tzinfo=UTC))
    assert [(e.xid, e.pci_bus_id) for e in events] == [(79, "0000:2a:00"), (48, "0000:3a:00")]
    assert events[0].age_s == pytest.approx(600 - 0.123456)
    assert events[1].age_s is None


def test_kernel_xids_outside_the_window_are_dropped() -> None:
    log = "2026-11-29T10:00:00,000000+00:00 NVRM: Xid (PCI:0000:2a:00): 79, pid=1, x\n"
    now = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    assert parse_kernel_xids(log, now=now, window_s=7200) == []
    assert len(parse_kernel_xids(log, now=now, window_s=2 * 86400)) == 1


# --- sysfs ------------------------------------------------------------------------------


def test_infiniband_ports_are_read_from_the_tree(fake_root: Callable[[str], Path]) -> None:
    nics = SysfsReader(fake_root("ib-8x400-healthy.json")).nics()
    ib = [n for n in nics if n.link_layer == "InfiniBand"]
    assert len(ib) == 8 and len(nics) == 10
    first = ib[0]
    assert (first.name, first.port, first.state, first.phys_state) == (
        "mlx5_0",
        1,
        "ACTIVE",
        "LinkUp",
    )
    assert first.rate_gbit_per_s == 400.0 and first.numa_node == 0
    assert first.counters["port_xmit_packets"] == 981234567


def test_roce_ports_get_ethtool_counters(fake_root: Callable[[str], Path]) -> None:
    nic = SysfsReader(fake_root("roce-8x400-healthy.json")).nics()[0]
    assert nic.link_layer == "Ethernet" and nic.counters["rx_packets_phy"] == 900000000
    assert nic.netdev is not None and nic.errors == {}


def test_ethtool_output_parsing() -> None:
    text = "NIC statistics:\n     rx_packets_phy: 12\n     rx_prio3_pause: 0\n     bogus line\n"
    assert parse_ethtool_stats(text) == {"rx_packets_phy": 12, "rx_prio3_pause": 0}


def test_host_facts_and_mounts(fake_root: Callable[[str], Path]) -> None:
    host = SysfsReader(fake_root("ib-missing-mount.json")).host("n1", ("/home", "/scratch"))
    assert host.num_numa_nodes == 2
    assert host.mem_total_gib == pytest.approx(2113245184 / 1024**2)
    home, scratch = host.mounts
    assert (home.mounted, home.fstype, home.writable) == (True, "nfs4", True)
    assert scratch.mounted is False


def test_a_hung_mount_is_reported_not_waited_for(tmp_path: Path) -> None:
    def hanging_statvfs(path: str) -> os.statvfs_result:
        time.sleep(30)
        return os.statvfs(path)

    start = time.monotonic()
    mount = SysfsReader(tmp_path, timeout_s=0.3, statvfs=hanging_statvfs).mount("/")
    assert time.monotonic() - start < 2.0
    assert mount.error is not None and "did not return within 0.3 s" in mount.error


def test_real_root_reads_this_machine() -> None:
    reader = SysfsReader("/")
    host = reader.host("here", ("/tmp",))
    assert host.mem_total_gib is not None and host.mem_total_gib > 0.5
    assert host.mounts[0].writable is True


# --- expectations -----------------------------------------------------------------------


def test_expectation_from_a_dgx_h100_spec() -> None:
    expect = expectation_from_spec(parse_spec({"num_gpus": 64, "node": "dgx-h100"}))
    assert expect.num_gpus == 8 and expect.gpu_nvml_names == ("NVIDIA H100 80GB HBM3",)
    assert expect.num_compute_nics == 8 and expect.nic_gbit_per_s == 400
    assert expect.fabric == "infiniband" and expect.nvswitch is True
    assert expect.num_nvlinks_per_gpu == 18


def test_expectation_follows_the_spec_network() -> None:
    spec = parse_spec(
        {"num_gpus": 64, "gpu": "h200-sxm", "network": {"fabric": "roce", "nic_gbit_per_s": 200}}
    )
    expect = expectation_from_spec(spec)
    assert expect.gpu_nvml_names == ("NVIDIA H200",) and expect.fabric == "roce"
    assert expect.nic_gbit_per_s == 200


def test_overrides() -> None:
    base = NodeExpectation(fabric="roce", mounts=("/home",))
    expect = with_overrides(base, ExpectOverrides(gpu_id="h200-sxm", num_gpus=4))
    assert expect.num_gpus == 4 and expect.gpu_tdp_w == 700 and expect.fabric == "roce"
    assert expect.gpu_nvml_names == ("NVIDIA H200",) and expect.mounts == ("/home",)
    with pytest.raises(CatalogError, match="h200-sxn"):
        with_overrides(NodeExpectation(), ExpectOverrides(gpu_id="h200-sxn"))


def test_a_gpu_override_is_looked_up_in_the_designs_catalog() -> None:
    design = plan(parse_spec({"num_gpus": 64, "node": "dgx-h100"}))
    gpus = design.catalog.gpus
    renamed = dataclasses.replace(gpus, rows={**gpus.rows, "site-gpu": gpus.rows["h200-sxm"]})
    catalog = dataclasses.replace(design.catalog, gpus=renamed)
    expect = with_overrides(NodeExpectation(), ExpectOverrides(gpu_id="site-gpu"), catalog)
    assert expect.gpu_nvml_names == ("NVIDIA H200",)


def test_expectation_from_the_design_matches_the_catalog_view() -> None:
    spec = parse_spec({"num_gpus": 64, "node": "dgx-h100"})
    assert expectation_from_design(plan(spec)) == expectation_from_spec(spec)


def test_a_designed_power_cap_becomes_the_expected_limit() -> None:
    # a 9 kW rack cannot carry a 10.2 kW DGX H100 at full TDP: the design caps the GPUs
    expect = expectation_from_design(
        plan(
            parse_spec(
                {
                    "num_gpus": 64,
                    "node": "dgx-h100",
                    "facility": {"max_rack_kw": 9, "allow_power_capping": True},
                }
            )
        )
    )
    assert expect.gpu_power_limit_w is not None and expect.gpu_power_limit_w < 700
    capped = GpuReading(index=0, power_w=100.0, power_limit_w=expect.gpu_power_limit_w)
    uncapped = GpuReading(index=1, power_w=100.0, power_limit_w=700.0)
    statuses = [r.status for r in check_power((capped, uncapped), expect, Thresholds())]
    assert statuses == ["pass", "warn"]
