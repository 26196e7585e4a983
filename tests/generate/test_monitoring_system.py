"""The generated monitoring files on Debian's promtool: config, rules, and rule unit tests.

Each alert gets a synthetic failing series (it must fire, with its labels and summary) and a
healthy one (it must stay quiet).  The series are written by hand here, not derived from the
rules, so a wrong expression, threshold or ``for`` fails the test.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterforge.design import Design, plan
from clusterforge.generate import render, write_files
from clusterforge.generate.monitoring.alerts import alert_groups
from clusterforge.generate.monitoring.dashboards import dashboards
from clusterforge.spec import load_spec
from tests.generate.conftest import SPECS

pytestmark = [
    pytest.mark.system,
    pytest.mark.skipif(
        shutil.which("promtool") is None, reason="needs promtool (apt-get install prometheus)"
    ),
]

GPU = 'node="gpu-0001", gpu="0", rack="r001-01", leaf_group="leaf-0001"'
GPU_LABELS = {"node": "gpu-0001", "gpu": "0", "rack": "r001-01", "leaf_group": "leaf-0001"}
NIC = 'node="gpu-0002", device="mlx5_3", port="1", rail="3"'
NIC_LABELS = {"node": "gpu-0002", "device": "mlx5_3", "port": "1", "rail": "3"}


def _s(metric: str, labels: str, values: str) -> dict[str, str]:
    return {"series": f"{metric}{{{labels}}}", "values": values}


# alert -> (eval time, failing series, healthy series, extra labels of the firing alert, summary)
CASES: dict[str, tuple[str, list[dict[str, str]], list[dict[str, str]], dict[str, str], str]] = {
    # Hardware XIDs page; the raw gauge keeps the last XID forever, the windowed count is back
    # to 0 in the healthy series; an application XID (13) is not a hardware page.
    "GpuXidHardware": (
        "3m",
        [_s("DCGM_EXP_XID_ERRORS_COUNT", GPU + ', xid="79"', "0 1 1 1")],
        [
            _s("DCGM_EXP_XID_ERRORS_COUNT", GPU + ', xid="79"', "1 1 0 0"),
            _s("DCGM_FI_DEV_XID_ERRORS", GPU, "79 79 79 79"),
            _s("DCGM_EXP_XID_ERRORS_COUNT", GPU + ', xid="13"', "1 1 1 1"),
        ],
        {"xid": "79"},
        "XID 79 on gpu-0001 GPU 0: a hardware fault, drain the node and reset or replace the GPU",
    ),
    "GpuXidWarning": (
        "3m",
        [_s("DCGM_EXP_XID_ERRORS_COUNT", GPU + ', xid="63"', "0 1 1 1")],
        [
            _s("DCGM_EXP_XID_ERRORS_COUNT", GPU + ', xid="79"', "1 1 1 1"),
            _s("DCGM_EXP_XID_ERRORS_COUNT", GPU + ', xid="31"', "1 1 1 1"),
        ],
        {"xid": "63"},
        "XID 63 on gpu-0001 GPU 0: watch for repeats",
    ),
    "GpuXidApplication": (
        "3m",
        [_s("DCGM_EXP_XID_ERRORS_COUNT", GPU + ', xid="13"', "0 1 1 1")],
        # a single scrape with the count up does not last the one minute of `for`
        [_s("DCGM_EXP_XID_ERRORS_COUNT", GPU + ', xid="13"', "0 0 0 1")],
        {"xid": "13"},
        "XID 13 on gpu-0001 GPU 0: the application's fault (tell the job's owner)",
    ),
    "GpuDoubleBitEcc": (
        "4m",
        [_s("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GPU, "0 0 0 1 1")],
        [_s("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", GPU, "3 3 3 3 3")],
        {},
        "Double-bit ECC errors on gpu-0001 GPU 0",
    ),
    "GpuRowRemapFailure": (
        "2m",
        [_s("DCGM_FI_DEV_ROW_REMAP_FAILURE", GPU, "0 0 1")],
        [_s("DCGM_FI_DEV_ROW_REMAP_FAILURE", GPU, "0 0 0")],
        {},
        "Row remapping failed on gpu-0001 GPU 0: replace the GPU",
    ),
    "GpuThermalThrottling": (
        "20m",
        # the counter adds nanoseconds: 30 s of each minute is 50 %, 1 s is 1.7 %
        [_s("DCGM_FI_DEV_THERMAL_VIOLATION", GPU, "0+30000000000x20")],
        [_s("DCGM_FI_DEV_THERMAL_VIOLATION", GPU, "0+1000000000x20")],
        {},
        "gpu-0001 GPU 0 is thermally throttled",
    ),
    "GpuPowerThrottling": (
        "20m",
        [_s("DCGM_FI_DEV_POWER_VIOLATION", GPU, "0+30000000000x20")],
        [_s("DCGM_FI_DEV_POWER_VIOLATION", GPU, "0+1000000000x20")],
        {},
        "gpu-0001 GPU 0 is power throttled",
    ),
    "GpuPowerOverCap": (
        "10m",
        [_s("DCGM_FI_DEV_POWER_USAGE", GPU, "750x10")],
        [_s("DCGM_FI_DEV_POWER_USAGE", GPU, "650x10")],
        {},
        "gpu-0001 GPU 0 draws more than the 700 W the racks were sized for",
    ),
    "GpuPcieLinkDowngraded": (
        "15m",
        [
            _s("DCGM_FI_DEV_PCIE_LINK_WIDTH", GPU, "8x15"),
            _s("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", GPU, "16x15"),
        ],
        # an idle GPU at gen 1 of 5 is power saving, not a fault
        [
            _s("DCGM_FI_DEV_PCIE_LINK_WIDTH", GPU, "16x15"),
            _s("DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH", GPU, "16x15"),
            _s("DCGM_FI_DEV_PCIE_LINK_GEN", GPU, "1x15"),
            _s("DCGM_FI_DEV_PCIE_MAX_LINK_GEN", GPU, "5x15"),
            _s("DCGM_FI_DEV_GPU_UTIL", GPU, "0x15"),
        ],
        {},
        "PCIe link of gpu-0001 GPU 0 runs below its maximum",
    ),
    "GpuIdleWhileAllocated": (
        "40m",
        [_s("DCGM_FI_DEV_GPU_UTIL", GPU + ', pod="train-0"', "0x40")],
        [
            _s("DCGM_FI_DEV_GPU_UTIL", GPU + ', pod="train-0"', "90x40"),
            _s("DCGM_FI_DEV_GPU_UTIL", 'node="gpu-0003", gpu="1"', "0x40"),
        ],  # idle, not allocated
        {"pod": "train-0"},
        "gpu-0001 GPU 0 is allocated but idle",
    ),
    "GpuNvlinkErrors": (
        "3m",
        [_s("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", GPU, "0 0 2 2")],
        [_s("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", GPU, "5 5 5 5")],
        {},
        "NVLink errors on gpu-0001 GPU 0",
    ),
    # A miner pages at the first evaluation; a count of 0 (a clean GPU) never fires.
    "GpuCryptoMiner": (
        "1m",
        [_s("clusterforge_gpu_foreign_processes", GPU + ', kind="miner"', "0 1")],
        [
            _s("clusterforge_gpu_foreign_processes", GPU + ', kind="miner"', "0 0"),
            _s("clusterforge_gpu_foreign_processes", GPU + ', kind="outside_job"', "1 1"),
        ],
        {"kind": "miner"},
        "A cryptocurrency miner runs on gpu-0001 GPU 0: drain the node, kill it, find how it got there",
    ),
    # Outside a job for two check runs pages; one run (a job's processes being cleaned up) not.
    "GpuProcessOutsideJob": (
        "5m",
        [_s("clusterforge_gpu_foreign_processes", GPU + ', kind="outside_job"', "0 0 2 2 2 2")],
        [
            _s("clusterforge_gpu_foreign_processes", GPU + ', kind="outside_job"', "0 0 0 0 1 1"),
            _s("clusterforge_gpu_foreign_processes", GPU + ', kind="miner"', "0 0 0 0 0 0"),
        ],
        {"kind": "outside_job"},
        "2 process(es) outside any running job on gpu-0001 GPU 0",
    ),
    "NicDropRateHigh": (
        "15m",
        [
            _s("node_infiniband_port_packets_received_total", NIC, "0+60000x15"),
            _s("node_infiniband_port_packets_transmitted_total", NIC, "0+60000x15"),
            _s("node_infiniband_port_discards_received_total", NIC, "0+300x15"),  # 0.25 %
            _s("node_infiniband_port_discards_transmitted_total", NIC, "0+300x15"),
        ],
        [
            _s("node_infiniband_port_packets_received_total", NIC, "0+60000x15"),
            _s("node_infiniband_port_packets_transmitted_total", NIC, "0+60000x15"),
            _s("node_infiniband_port_discards_received_total", NIC, "0+30x15"),  # 0.025 %
            _s("node_infiniband_port_discards_transmitted_total", NIC, "0+30x15"),
        ],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) drops more than 0.1 % of packets",
    ),
    "IbPortDown": (
        "5m",
        [_s("node_infiniband_state_id", NIC, "4 1 1 1 1 1")],
        [_s("node_infiniband_state_id", NIC, "4 4 4 4 4 4")],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) is not ACTIVE: the rail is down",
    ),
    "IbLinkDowned": (
        "4m",
        [_s("node_infiniband_link_downed_total", NIC, "0 0 1 1 1")],
        [_s("node_infiniband_link_downed_total", NIC, "2 2 2 2 2")],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) went down and came back (link downed)",
    ),
    "IbLinkErrorRecovery": (
        "4m",
        [_s("node_infiniband_link_error_recovery_total", NIC, "0 0 1 1 1")],
        [_s("node_infiniband_link_error_recovery_total", NIC, "7 7 7 7 7")],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) retrained its link in the last hour (check cable and transceiver)",
    ),
    "IbSymbolErrors": (
        "30m",
        [_s("node_infiniband_symbol_error_total", NIC, "0+2x30")],  # 60 in 30 minutes
        [_s("node_infiniband_symbol_error_total", NIC, "100+0x30")],  # old errors, none new
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) counts symbol errors (a marginal cable or transceiver)",
    ),
    "IbPortErrorRate": (
        "20m",
        [
            _s("node_infiniband_port_packets_received_total", NIC, "0+1000000x20"),
            _s("node_infiniband_port_errors_received_total", NIC, "0+100x20"),  # 1e-4
        ],
        [
            _s("node_infiniband_port_packets_received_total", NIC, "0+1000000x20"),
            _s("node_infiniband_port_errors_received_total", NIC, "0+1x20"),  # 1e-6
        ],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) receives packets with errors",
    ),
    "NodeUnhealthy": (
        "10m",
        [_s("clusterforge_node_healthy", 'node="gpu-0004"', "0x10")],
        [_s("clusterforge_node_healthy", 'node="gpu-0004"', "1x10")],
        {"node": "gpu-0004"},
        "clusterforge check fails on gpu-0004",
    ),
    "ExporterDown": (
        "10m",
        [_s("up", 'job="dcgm", node="gpu-0005"', "0x10")],
        [_s("up", 'job="dcgm", node="gpu-0005"', "1x10")],
        {"job": "dcgm", "node": "gpu-0005"},
        "dcgm exporter on gpu-0005 is down",
    ),
}


@pytest.fixture(scope="module")
def monitoring_dir(lab_design: Design, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cfgen-monitoring")
    write_files(render(lab_design, ["monitoring"]), out)
    return out / "monitoring"


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["promtool", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def test_promtool_accepts_config_and_rules(monitoring_dir: Path) -> None:
    config = _promtool("check", "config", "prometheus.yml", cwd=monitoring_dir)
    assert config.returncode == 0, config.stdout + config.stderr
    rules = _promtool(
        "check",
        "rules",
        *sorted(str(p) for p in (monitoring_dir / "rules").glob("*.yml")),
        cwd=monitoring_dir,
    )
    assert rules.returncode == 0, rules.stdout + rules.stderr


def test_every_alert_has_a_case(lab_design: Design) -> None:
    alerts = {
        r["alert"]
        for g in alert_groups(lab_design).values()
        for grp in g["groups"]
        for r in grp["rules"]
        if "alert" in r
    }
    assert alerts == set(CASES) | {"RackPowerNearFeedLimit"}


def _rule_file_of(alert: str, monitoring_dir: Path) -> str:
    for path in sorted((monitoring_dir / "rules").glob("*.yml")):
        if f"alert: {alert}\n" in path.read_text():
            return str(path)
    raise AssertionError(f"no rule file has {alert}")


Case = tuple[str, list[dict[str, str]], list[dict[str, str]], dict[str, str], str]


def _unit_test(alert: str, rule_file: str, severity: str, case: Case) -> dict[str, Any]:
    eval_time, failing, healthy, extra, summary = case
    labels = {
        **({} if alert in NOT_PER_GPU else GPU_LABELS),
        **extra,
    }
    labels["severity"] = severity
    if alert == "ExporterDown":
        labels.update(job="dcgm", node="gpu-0005")
    return {
        "rule_files": [rule_file],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": failing,
                "alert_rule_test": [
                    {
                        "eval_time": eval_time,
                        "alertname": alert,
                        "exp_alerts": [
                            {"exp_labels": labels, "exp_annotations": {"summary": summary}}
                        ],
                    }
                ],
            },
            {
                "interval": "1m",
                "input_series": healthy,
                "alert_rule_test": [{"eval_time": eval_time, "alertname": alert, "exp_alerts": []}],
            },
        ],
    }


def _severity(alert: str, design: Design) -> str:
    for g in alert_groups(design).values():
        for grp in g["groups"]:
            for rule in grp["rules"]:
                if rule.get("alert") == alert:
                    return str(rule["labels"]["severity"])
    raise AssertionError(alert)


def _run_case(alert: str, case: Case, design: Design, rules_dir: Path, tmp_path: Path) -> None:
    test_file = tmp_path / f"{alert}.test.yml"
    spec = _unit_test(alert, _rule_file_of(alert, rules_dir), _severity(alert, design), case)
    test_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    result = _promtool("test", "rules", str(test_file), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("alert", sorted(CASES))
def test_alert_fires_on_failure_and_stays_quiet_when_healthy(
    alert: str, lab_design: Design, monitoring_dir: Path, tmp_path: Path
) -> None:
    _run_case(alert, CASES[alert], lab_design, monitoring_dir, tmp_path)


def test_rack_power_from_the_pdus_alerts_near_the_feed_limit(
    lab_design: Design, monitoring_dir: Path, tmp_path: Path
) -> None:
    """Two PDUs of one rack (APC MIB: hundredths of kW) add up past 90 % of the feed."""
    usable_kw = min(r.circuit.usable_kw for r in lab_design.racks if r.role == "gpu")
    limit_w = round(0.9 * usable_kw * 1000)
    half = limit_w / 2 / 10  # each PDU, in the MIB's hundredths of kW
    pdu = 'job="pdu", rack="r001-01", pdu="{}"'
    over, under = f"{half + 50:g}x15", f"{half - 50:g}x15"
    case: Case = (
        "15m",
        [_s("rPDU2DeviceStatusPower", pdu.format(p), over) for p in ("a1", "b1")],
        [_s("rPDU2DeviceStatusPower", pdu.format(p), under) for p in ("a1", "b1")],
        {"rack": "r001-01"},
        f"rack r001-01 draws more than {limit_w} W, 90% of its feed's usable power (PDU reading)",
    )
    _run_case("RackPowerNearFeedLimit", case, lab_design, monitoring_dir, tmp_path)


def _nic(metric: str, values: str, labels: str = NIC) -> dict[str, str]:
    return _s(metric, labels, values)


ETH, ROCE = "clusterforge_eth_", "clusterforge_roce_"
# RoCE alert -> case, on the clusterforge exporter's Ethernet/RoCE metrics (ops.ethernet)
ROCE_CASES: dict[str, Case] = {
    "RocePortDown": (
        "5m",
        [_nic(f"{ETH}port_up", "1 0 0 0 0 0")],
        [_nic(f"{ETH}port_up", "1 1 1 1 1 1")],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) is not ACTIVE / LinkUp: the rail is down",
    ),
    "RoceLinkDownEvents": (
        "4m",
        [_nic(f"{ETH}link_down_events_total", "0 0 1 1 1")],
        [_nic(f"{ETH}link_down_events_total", "2 2 2 2 2")],  # old flaps, none new
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) went down and came back (link down events: check cable and "
        "transceiver)",
    ),
    "RoceSymbolErrors": (
        "4m",
        [_nic(f"{ETH}rx_symbol_errors_total", "0 0 3 3 3")],
        [_nic(f"{ETH}rx_symbol_errors_total", "9 9 9 9 9")],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) drops packets for symbol errors (check cable and transceiver)",
    ),
    "RoceFecUncorrectedErrors": (
        "4m",
        [_nic(f"{ETH}rx_fec_uncorrected_symbols_total", "0 0 5 5 5")],
        [_nic(f"{ETH}rx_fec_uncorrected_symbols_total", "5 5 5 5 5")],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) has symbol errors FEC could not correct: traffic is lost "
        "(replace cable or transceiver)",
    ),
    "RocePreFecBerHigh": (
        "20m",
        # 400 Gb/s = 2.4e13 bits a minute; 1e-3 of them corrected fires, 1e-6 does not
        [
            _nic(f"{ETH}rx_bits_total", "0+24000000000000x20"),
            _nic(f"{ETH}rx_fec_corrected_bits_total", "0+24000000000x20"),
        ],
        [
            _nic(f"{ETH}rx_bits_total", "0+24000000000000x20"),
            _nic(f"{ETH}rx_fec_corrected_bits_total", "0+24000000x20"),
        ],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) pre-FEC bit error ratio is above 0.00024, the IEEE 802.3 "
        "limit for RS-FEC links",
    ),
    "RocePfcPauseHigh": (
        "20m",
        # paused 30 of every 60 s on priority 3 (microseconds); 0.6 s a minute is quiet, and
        # pauses on another priority are not the lossless class's
        [_nic(f"{ETH}rx_pause_microseconds_total", "0+30000000x20", NIC + ', priority="3"')],
        [
            _nic(f"{ETH}rx_pause_microseconds_total", "0+600000x20", NIC + ', priority="3"'),
            _nic(f"{ETH}rx_pause_microseconds_total", "0+30000000x20", NIC + ', priority="0"'),
        ],
        {**NIC_LABELS, "priority": "3"},
        "gpu-0002 mlx5_3 (rail 3) is paused by PFC more than 10% of the time",
    ),
    "RocePfcPauseStorm": (
        "4m",
        [_nic(f"{ETH}tx_pause_storm_errors_total", "0 0 1 1 1")],
        [_nic(f"{ETH}tx_pause_storm_errors_total", "1 1 1 1 1")],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) sent PFC pauses until its watchdog stopped them (a pause "
        "storm: the host cannot take its traffic)",
    ),
    "RoceEcnMarksHigh": (
        "25m",
        [
            _nic(f"{ROCE}rx_packets_total", "0+1000000x25"),
            _nic(f"{ROCE}ecn_marked_packets_total", "0+50000x25"),  # 5 %
        ],
        [
            _nic(f"{ROCE}rx_packets_total", "0+1000000x25"),
            _nic(f"{ROCE}ecn_marked_packets_total", "0+1000x25"),  # 0.1 %
        ],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3): more than 1% of received RoCE packets are ECN-marked",
    ),
    "RoceCnpRateHigh": (
        "25m",
        [_nic(f"{ROCE}cnp_handled_total", "0+1200000x25")],  # 20 000 a second
        [_nic(f"{ROCE}cnp_handled_total", "0+6000x25")],  # 100 a second
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) is told to slow down (CNPs) more than 10000 times a second",
    ),
    "RoceDropRateHigh": (
        "15m",
        [
            _nic(f"{ETH}rx_packets_total", "0+60000x15"),
            _nic(f"{ETH}tx_packets_total", "0+60000x15"),
            _nic(f"{ETH}rx_discards_total", "0+200x15"),
            _nic(f"{ETH}rx_out_of_buffer_total", "0+100x15"),
            _nic(f"{ETH}tx_discards_total", "0+300x15"),  # 0.5 % in all
        ],
        [
            _nic(f"{ETH}rx_packets_total", "0+60000x15"),
            _nic(f"{ETH}tx_packets_total", "0+60000x15"),
            _nic(f"{ETH}rx_discards_total", "0+30x15"),
            _nic(f"{ETH}rx_out_of_buffer_total", "0+0x15"),
            _nic(f"{ETH}tx_discards_total", "0+30x15"),  # 0.05 %
        ],
        dict(NIC_LABELS),
        "gpu-0002 mlx5_3 (rail 3) drops more than 0.1 % of packets",
    ),
}

IB_ALERTS = {
    "NicDropRateHigh",
    "IbPortDown",
    "IbLinkDowned",
    "IbLinkErrorRecovery",
    "IbSymbolErrors",
    "IbPortErrorRate",
}
# alerts whose labels are not those of one GPU
NOT_PER_GPU = (
    {"NodeUnhealthy", "ExporterDown", "RackPowerNearFeedLimit"} | IB_ALERTS | set(ROCE_CASES)
)


@pytest.fixture(scope="module")
def roce_design() -> Design:
    return plan(load_spec(SPECS / "roce-rail-optimized.yaml"))


@pytest.fixture(scope="module")
def roce_monitoring_dir(roce_design: Design, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cfgen-roce-monitoring")
    write_files(render(roce_design, ["monitoring"]), out)
    return out / "monitoring"


def _alert_names(design: Design) -> set[str]:
    return {
        r["alert"]
        for g in alert_groups(design).values()
        for grp in g["groups"]
        for r in grp["rules"]
        if "alert" in r
    }


def test_promtool_accepts_the_roce_rules(roce_monitoring_dir: Path) -> None:
    rules = _promtool(
        "check",
        "rules",
        *sorted(str(p) for p in (roce_monitoring_dir / "rules").glob("*.yml")),
        cwd=roce_monitoring_dir,
    )
    assert rules.returncode == 0, rules.stdout + rules.stderr


def test_every_roce_alert_has_a_case(roce_design: Design) -> None:
    expected = (set(CASES) - IB_ALERTS) | set(ROCE_CASES) | {"RackPowerNearFeedLimit"}
    assert _alert_names(roce_design) == expected


@pytest.mark.parametrize("alert", sorted(ROCE_CASES))
def test_roce_alert_fires_on_failure_and_stays_quiet_when_healthy(
    alert: str, roce_design: Design, roce_monitoring_dir: Path, tmp_path: Path
) -> None:
    _run_case(alert, ROCE_CASES[alert], roce_design, roce_monitoring_dir, tmp_path)


def test_each_fabric_kind_reads_only_its_own_counters(
    roce_design: Design, lab_design: Design, monitoring_dir: Path, roce_monitoring_dir: Path
) -> None:
    """An InfiniBand counter never moves on an Ethernet port (and the other way round): a
    RoCE design's rule file has no InfiniBand rule or counter, an InfiniBand design's none of
    the Ethernet ones."""
    assert lab_design.spec.network.fabric == "infiniband"
    assert roce_design.spec.network.fabric == "roce"
    ib_names, roce_names = _alert_names(lab_design), _alert_names(roce_design)
    assert ib_names >= IB_ALERTS and not IB_ALERTS & roce_names
    assert set(ROCE_CASES) <= roce_names and not set(ROCE_CASES) & ib_names
    ib_file = (monitoring_dir / "rules" / "network.yml").read_text()
    roce_file = (roce_monitoring_dir / "rules" / "network.yml").read_text()
    assert "node_infiniband_" not in roce_file
    assert ETH not in ib_file and ROCE not in ib_file


def test_pdu_scrape_job_reaches_every_pdu_through_the_snmp_exporter(
    lab_design: Design, monitoring_dir: Path
) -> None:
    config = yaml.safe_load((monitoring_dir / "prometheus.yml").read_text())
    job = next(j for j in config["scrape_configs"] if j["job_name"] == "pdu")
    targets = [t for group in job["static_configs"] for t in group["targets"]]
    pdus = [d for r in lab_design.racks for d in r.devices if d.kind == "pdu"]
    assert len(targets) == len(set(targets)) == len(pdus)
    generator = yaml.safe_load((monitoring_dir / "snmp" / "generator.yml").read_text())
    assert job["params"]["module"][0] in generator["modules"]
    assert job["params"]["auth"][0] in generator["auths"]


@pytest.mark.parametrize("design_fixture", ["lab_design", "roce_design"])
def test_dashboard_queries_parse(
    design_fixture: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Every dashboard query, with its $variables filled in, is valid PromQL to promtool
    (InfiniBand and RoCE designs: their network health panels differ)."""
    design: Design = request.getfixturevalue(design_fixture)
    rules = []
    for stem, text in dashboards(design).items():
        for panel in yaml.safe_load(text)["panels"]:
            for target in panel["targets"]:
                expr = re.sub(r"\$\w+", ".*", target["expr"])
                rules.append(
                    {"record": f"dashboard:{stem.replace('-', '_')}:{len(rules)}", "expr": expr}
                )
    (tmp_path / "dash.yml").write_text(
        yaml.safe_dump({"groups": [{"name": "dash", "rules": rules}]})
    )
    result = _promtool("check", "rules", "dash.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(rules) >= 20


def test_dashboard_reads_violation_nanoseconds_as_a_share(
    lab_design: Design, tmp_path: Path
) -> None:
    """The violation counters add nanoseconds (dcgm_fields.h): a GPU held back 30 s of every
    minute is shown at 0.5 of the time on the clock-event panel, not at 500."""
    panel = next(
        p
        for text in dashboards(lab_design).values()
        for p in yaml.safe_load(text)["panels"]
        if p["title"] == "Clock-event time (share)"
    )
    series = [
        _s(f"DCGM_FI_DEV_{kind}_VIOLATION", GPU, "0+30000000000x10")
        for kind in ("POWER", "THERMAL")
    ]
    exprs = [re.sub(r"\$\w+", ".*", target["expr"]) for target in panel["targets"]]
    checks = [
        {
            # to the nearest 0.001: promtool 2.42 compares samples exactly
            "expr": f"round({expr}, 0.001)",
            "eval_time": "10m",
            "exp_samples": [{"labels": f"{{{GPU}}}", "value": 0.5}],
        }
        for expr in exprs
    ]
    assert len(checks) == 2
    test = {"interval": "1m", "input_series": series, "promql_expr_test": checks}
    spec = {"rule_files": [], "evaluation_interval": "1m", "tests": [test]}
    (tmp_path / "panel.test.yml").write_text(yaml.safe_dump(spec, sort_keys=False))
    result = _promtool("test", "rules", "panel.test.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
