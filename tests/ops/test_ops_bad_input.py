"""Bad files and values given to `check` / `exporter`: one clear line, exit 1, no traceback."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest
from ops_fixtures import NVML_FIXTURES

from clusterforge.cli.main import main
from clusterforge.errors import CheckError
from clusterforge.ops.nvml import load_fixture
from clusterforge.ops.xid import load_xid_policy


def _one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.startswith("error: ")
    assert len(err.strip().splitlines()) == 1, err
    return err


def test_a_binary_nvml_fixture_is_one_error_line(
    tmp_path: Path, fake_root: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    binary = tmp_path / "readings.json"
    binary.write_bytes(bytes(range(256)) * 4)
    args = ["check", "--nvml-fixture", str(binary), "--node", "n1",
            "--sysfs-root", str(fake_root("ib-8x400-healthy.json"))]  # fmt: skip
    assert main(args) == 1
    err = _one_error_line(capsys)
    assert "readings.json" in err and "not a text file" in err


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("[1, 2]", "holds a JSON list"),
        ('{"base": "loop.json"}', "nest too deep"),
        ('{"base": "h100-healthy.json", "gpu_patches": {"9": {}}}', "no GPU '9'"),
    ],
)
def test_malformed_nvml_fixtures_are_check_errors(tmp_path: Path, text: str, match: str) -> None:
    fixture = tmp_path / "loop.json"
    fixture.write_text(text)
    (tmp_path / "h100-healthy.json").write_text((NVML_FIXTURES / "h100-healthy.json").read_text())
    with pytest.raises(CheckError, match=match):
        load_fixture(fixture)


def test_a_cluster_spec_given_as_xid_policy_is_rejected(
    tmp_path: Path, fake_root: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "cluster.yaml"
    spec.write_text("num_gpus: 64\nnode: dgx-h100\nnetwork:\n  fabric: infiniband\n")
    args = ["check", "--xid-policy", str(spec), "--node", "n1",
            "--nvml-fixture", str(NVML_FIXTURES / "h100-healthy.json"),
            "--sysfs-root", str(fake_root("ib-8x400-healthy.json"))]  # fmt: skip
    assert main(args) == 1
    err = _one_error_line(capsys)
    assert "looks like a cluster spec" in err and "num_gpus" in err
    assert "'xids'" in err and "'default_action'" in err


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("xid:\n  79: drain\n", "unknown key 'xid' \\(did you mean 'xids'"),
        ("xids: [79, 48]\n", "mapping of XID number"),
        ("xids:\n  79: 3\n", "neither an action nor a mapping"),
        ("", "as a YAML mapping"),
    ],
)
def test_malformed_xid_policies_name_the_problem(tmp_path: Path, text: str, match: str) -> None:
    site = tmp_path / "xid.yaml"
    site.write_text(text)
    with pytest.raises(CheckError, match=match):
        load_xid_policy(site)


def test_a_binary_xid_policy_is_a_check_error(tmp_path: Path) -> None:
    site = tmp_path / "xid.yaml"
    site.write_bytes(b"\xff\xfe\x00xids")
    with pytest.raises(CheckError, match="not a text file"):
        load_xid_policy(site)


def _exporter_args(address: str, port: int, root: Path) -> list[str]:
    return ["exporter", "--address", address, "--port", str(port), "--node", "n1",
            "--nvml-fixture", str(NVML_FIXTURES / "h100-healthy.json"),
            "--sysfs-root", str(root)]  # fmt: skip


def test_an_invalid_listen_address_is_named_as_such(
    fake_root: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(_exporter_args("999.1.1.1", 9410, fake_root("ib-8x400-healthy.json"))) == 1
    err = _one_error_line(capsys)
    assert "listen address '999.1.1.1' is invalid" in err
    assert "another" not in err and "--port" not in err


def test_a_port_in_use_says_so(
    fake_root: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(_exporter_args("127.0.0.1", port, fake_root("ib-8x400-healthy.json"))) == 1
    err = _one_error_line(capsys)
    assert f"port {port} is already in use" in err


def test_an_address_of_another_machine_is_not_ours(
    fake_root: Callable[[str], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = fake_root("ib-8x400-healthy.json")
    assert main(_exporter_args("192.0.2.1", 9410, root)) == 1  # TEST-NET-1 (RFC 5737)
    assert "192.0.2.1 is not an address of this machine" in _one_error_line(capsys)
