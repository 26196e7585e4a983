"""Counter state between one-shot runs: baseline, rising vs flat counters, a broken state file."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ops_fixtures import NVML_FIXTURES

from clusterforge.cli.main import main
from clusterforge.ops.checks import Thresholds, evaluate
from clusterforge.ops.checks.net import drop_ratio
from clusterforge.ops.expect import NodeExpectation
from clusterforge.ops.readings import GpuReading, GpuSnapshot, NicReading, NodeReading, XidEvent
from clusterforge.ops.state import (
    default_state_path,
    load_state,
    save_state,
    state_from_reading,
)
from clusterforge.ops.xid import load_xid_policy

EXPECT_IB = ["--gpu", "h100-sxm", "--num-gpus", "8", "--num-nics", "8", "--nic-gbit-per-s", "400",
             "--fabric", "infiniband"]  # fmt: skip
EXPECT_ROCE = [*EXPECT_IB[:-1], "roce"]

Run = Callable[..., dict[str, Any]]


@pytest.fixture
def run(
    fake_root: Callable[[str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Run:
    """run(nvml, sysfs) -> the JSON report of one `clusterforge check` with a state file."""
    state = tmp_path / "state" / "check-state.json"

    def go(nvml: str, sysfs: str, expect: list[str] = EXPECT_IB) -> dict[str, Any]:
        args = ["check", "--json", "--nvml-fixture", str(NVML_FIXTURES / nvml),
                "--sysfs-root", str(fake_root(sysfs)), "--node", "gpu-0001", "--timeout-s", "4",
                "--state-file", str(state), *expect]  # fmt: skip
        code = main(args)
        data: dict[str, Any] = json.loads(capsys.readouterr().out)
        assert data["exit_code"] == code
        return data

    return go


def status(data: dict[str, Any], check: str, subject: str) -> str:
    (found,) = [r for r in data["results"] if r["check"] == check and r["subject"] == subject]
    return str(found["status"])


def observed(data: dict[str, Any], check: str, subject: str) -> str:
    (found,) = [r for r in data["results"] if r["check"] == check and r["subject"] == subject]
    return str(found["observed"])


def test_first_run_is_a_baseline_and_writes_the_state(run: Run, tmp_path: Path) -> None:
    data = run("h100-healthy.json", "ib-error-counters.json")
    assert data["baseline"] is True and any("baseline" in n for n in data["notes"])
    # 1543 symbol errors since the counters were reset: absurd even as a lifetime total
    assert status(data, "nic.errors", "mlx5_1/1") == "warn"
    state = json.loads((tmp_path / "state" / "check-state.json").read_text())
    assert state["node"] == "gpu-0001" and state["nics"]["mlx5_1/1"]["symbol_error"] == 1543
    assert state["gpus"]["0"]["nvlink_crc_errors"] == 0
    assert list((tmp_path / "state").iterdir()) == [tmp_path / "state" / "check-state.json"]


def test_ib_error_counters_rising_warn_and_flat_pass(run: Run) -> None:
    first = run("h100-healthy.json", "ib-8x400-healthy.json")
    assert status(first, "nic.errors", "mlx5_1/1") == "pass"
    rising = run("h100-healthy.json", "ib-error-counters.json")
    assert rising["baseline"] is False
    assert status(rising, "nic.errors", "mlx5_1/1") == "warn"
    assert "symbol_error +1543" in observed(rising, "nic.errors", "mlx5_1/1")
    flat = run("h100-healthy.json", "ib-error-counters.json")
    assert status(flat, "nic.errors", "mlx5_1/1") == "pass"  # same totals: nothing new


def test_drop_rate_since_last_run_fails_and_flat_lifetime_drops_pass(run: Run) -> None:
    assert status(run("h100-healthy.json", "ib-drops.json"), "nic.drops", "mlx5_4/1") == "warn"
    # the same 0.5 % lifetime discards, not rising: the node is fine now
    flat = run("h100-healthy.json", "ib-drops.json")
    assert (flat["status"], status(flat, "nic.drops", "mlx5_4/1")) == ("pass", "pass")
    run("h100-healthy.json", "ib-8x400-healthy.json")  # counters reset (reboot)
    rising = run("h100-healthy.json", "ib-drops.json")
    assert status(rising, "nic.drops", "mlx5_4/1") == "fail" and rising["exit_code"] == 1
    assert "since last run" in observed(rising, "nic.drops", "mlx5_4/1")


def test_roce_drops_rising_over_a_tenth_of_a_percent_fail(run: Run) -> None:
    base = run("h100-healthy.json", "roce-8x400-healthy.json", EXPECT_ROCE)
    assert status(base, "nic.drops", "mlx5_6/1") == "pass"
    rising = run("h100-healthy.json", "roce-drops-rising.json", EXPECT_ROCE)
    assert status(rising, "nic.drops", "mlx5_6/1") == "fail"  # +200,000 of +100 M = 0.2 %
    flat = run("h100-healthy.json", "roce-drops-rising.json", EXPECT_ROCE)
    assert status(flat, "nic.drops", "mlx5_6/1") == "pass"


def test_aggregate_ecc_rising_warns_and_flat_passes(run: Run) -> None:
    run("h100-healthy.json", "ib-8x400-healthy.json")
    rising = run("h100-ecc-aggregate.json", "ib-8x400-healthy.json")
    assert status(rising, "gpu.ecc", "gpu2") == "warn"
    assert "+1 since last run" in observed(rising, "gpu.ecc", "gpu2")
    assert status(run("h100-ecc-aggregate.json", "ib-8x400-healthy.json"), "gpu.ecc", "gpu2") == (
        "pass"
    )


def test_new_xids_are_named_against_the_stored_counts(run: Run) -> None:
    first = run("h100-healthy.json", "ib-xid-kernel.json")
    assert "new since last run" not in observed(first, "gpu.xid", "gpu1")
    again = run("h100-xid79-healed.json", "ib-xid-kernel.json")
    assert "new since last run" not in observed(again, "gpu.xid", "gpu1")
    nvml_event = run("h100-xid48.json", "ib-xid-kernel.json")
    assert "new since last run: XID 48 x1" in observed(nvml_event, "gpu.xid", "gpu5")


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{not json", "corrupt"),
        ('{"version": 99}', "corrupt"),
        ('["a list"]', "corrupt"),
        ('{"version": 1, "node": "gpu-0001", "taken_at_s": 1, "gpus": [1], "nics": {}}', "corrupt"),
        ('{"version": 1, "node": "gpu-0042", "taken_at_s": 1, "gpus": {}, "nics": {}}', "gpu-0042"),
        ('{"version": 1, "node": "gpu-0001", "taken_at_s": 9e12, "gpus": {}, "nics": {}}', "future"),
    ],
)  # fmt: skip
def test_a_bad_state_file_is_reported_and_replaced(
    run: Run, tmp_path: Path, content: str, words: str
) -> None:
    state = tmp_path / "state" / "check-state.json"
    state.parent.mkdir()
    state.write_text(content)
    data = run("h100-healthy.json", "ib-8x400-healthy.json")
    assert data["status"] == "pass" and data["baseline"] is True
    assert any(words in n for n in data["notes"]), data["notes"]
    assert json.loads(state.read_text())["version"] == 1  # replaced by a good one
    assert run("h100-healthy.json", "ib-8x400-healthy.json")["baseline"] is False


def test_an_unreadable_or_unwritable_state_path_is_a_note_not_a_crash(
    run: Run, tmp_path: Path
) -> None:
    (tmp_path / "state" / "check-state.json").mkdir(parents=True)  # a folder where the file goes
    data = run("h100-healthy.json", "ib-8x400-healthy.json")
    assert data["exit_code"] == 0 and data["baseline"] is True
    assert any("unreadable" in n for n in data["notes"])
    assert any("could not write" in n for n in data["notes"])


def test_failed_readings_do_not_overwrite_the_state(run: Run, tmp_path: Path) -> None:
    run("h100-healthy.json", "ib-8x400-healthy.json")
    before = (tmp_path / "state" / "check-state.json").read_text()
    data = run("nvml-missing.json", "ib-8x400-healthy.json")
    assert data["exit_code"] == 2 and any("not updated" in n for n in data["notes"])
    assert (tmp_path / "state" / "check-state.json").read_text() == before


def test_state_none_makes_every_run_a_baseline(
    fake_root: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["check", "--json", "--nvml-fixture", str(NVML_FIXTURES / "h100-healthy.json"),
            "--sysfs-root", str(fake_root("ib-8x400-healthy.json")), "--state-file", "none"]  # fmt: skip
    for _ in range(2):
        assert main(args) == 0
        assert json.loads(capsys.readouterr().out)["baseline"] is True


def test_default_state_path_is_per_node_and_only_when_writable(tmp_path: Path) -> None:
    assert (
        default_state_path("gpu-0001", tmp_path / "cf")
        == tmp_path / "cf" / "check-state-gpu-0001.json"
    )
    assert default_state_path("a/b", tmp_path) == tmp_path / "check-state-a_b.json"
    assert default_state_path("gpu-0001", tmp_path / "no" / "such" / "dir") is None  # fmt: skip


def _reading(taken_at_s: float, crc: int, discards: int, packets: int) -> NodeReading:
    gpu = GpuReading(index=0, uuid="GPU-a", nvlink_active=(True,) * 18, nvlink_crc_errors=crc)
    nic = NicReading(name="mlx5_0", link_layer="InfiniBand", state="ACTIVE", phys_state="LinkUp",
                     counters={"port_xmit_discards": discards, "port_xmit_packets": packets})  # fmt: skip
    return NodeReading(
        node="n1",
        taken_at_s=taken_at_s,
        gpu=GpuSnapshot(gpus=(gpu,)),
        nics=(nic,),
        kernel_xids=(XidEvent(xid=79, pci_bus_id="0000:2a:00", source="kernel"),),
    )


def test_state_round_trip_feeds_the_rate_rules(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    assert save_state(path, _reading(1000.0, crc=0, discards=0, packets=10**6)) is None
    loaded = load_state(path, "n1", now_s=1010.0)
    assert loaded.notes == () and loaded.previous is not None
    assert loaded.previous.kernel_xids[0].pci_bus_id == "0000:2a:00"
    now = _reading(1010.0, crc=2000, discards=5, packets=2 * 10**6)  # 200 CRC/s > 100/s
    results = evaluate(now, NodeExpectation(), load_xid_policy(), Thresholds(), loaded.previous)
    by_check = {r.check: r.status for r in results}
    assert by_check["gpu.nvlink"] == "fail" and by_check["nic.drops"] == "pass"
    assert state_from_reading(now)["xids"] == {"pci0000:2a:00:79": 1}


def test_a_reset_counter_counts_from_zero_and_a_swapped_gpu_is_a_baseline() -> None:
    before = _reading(1000.0, crc=10**6, discards=10**6, packets=10**9)
    after = _reading(1010.0, crc=5, discards=50, packets=10_000)  # rebooted in between
    assert drop_ratio(after.nics[0], before.nics[0]) == pytest.approx(50 / 10_000)
    swapped = dataclasses.replace(
        after,
        gpu=GpuSnapshot(gpus=(dataclasses.replace(after.gpu.gpus[0], uuid="GPU-b", nvlink_crc_errors=10**7),)),
    )  # fmt: skip
    results = evaluate(swapped, NodeExpectation(), load_xid_policy(), Thresholds(), before)
    assert next(r for r in results if r.check == "gpu.nvlink").status == "pass"


def test_a_counter_not_read_last_time_is_a_baseline_not_an_increase() -> None:
    now = _reading(1010.0, crc=0, discards=5_000_000, packets=10**9)  # 0.5 % lifetime
    before = dataclasses.replace(now, nics=(dataclasses.replace(now.nics[0], counters={}),))
    results = evaluate(now, NodeExpectation(), load_xid_policy(), Thresholds(), before)
    drops = next(r for r in results if r.check == "nic.drops")
    assert (drops.status, "baseline" in drops.observed) == ("warn", True)
