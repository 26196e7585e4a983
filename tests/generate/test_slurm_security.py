"""Slurm access control: pam_slurm_adopt, private data, the munge key, the accounting database.

The real slurmctld loads these settings in test_slurm_security_system.py.
"""

from __future__ import annotations

import os
import pwd
import re
import subprocess
from pathlib import Path

import pytest

from clusterforge.design import Design, plan
from clusterforge.generate import render
from clusterforge.generate.slurm.accounting import management_roles
from clusterforge.spec import load_spec
from tests.generate.conftest import SPECS


def _files(design: Design) -> dict[str, str]:
    return {f.path: f.content for f in render(design, ["slurm"])}


def _setting(conf: str, key: str) -> str:
    values = re.findall(rf"^{key}=(\S+)$", conf, flags=re.M)
    assert len(values) == 1, (key, values)
    return values[0]


def test_only_job_owners_may_log_in_to_a_node(lab_design: Design) -> None:
    """pam_slurm_adopt needs PrologFlags=Contain (the extern step it adopts ssh into) and the
    cgroup task and proctrack plugins (Slurm's pam_slurm_adopt guide)."""
    files = _files(lab_design)
    conf = files["slurm/slurm.conf"]
    assert "contain" in _setting(conf, "PrologFlags").lower().split(",")
    assert _setting(conf, "ProctrackType") == "proctrack/cgroup"
    assert "task/cgroup" in _setting(conf, "TaskPlugin").split(",")
    pam = files["slurm/pam.d-sshd-account"]
    account = [line.split() for line in pam.splitlines() if re.match(r"^-?account\s", line)]
    # The module decides last; admins listed in access.conf pass before it.
    assert account[-1][:3] == ["account", "required", "pam_slurm_adopt.so"]
    assert {"action_adopt_failure=deny", "action_generic_failure=deny"} <= set(account[-1])
    assert account[0][:3] == ["account", "sufficient", "pam_access.so"]


def test_users_see_only_their_own_jobs_and_usage(lab_design: Design) -> None:
    conf = _files(lab_design)["slurm/slurm.conf"]
    assert set(_setting(conf, "PrivateData").split(",")) == {"accounts", "jobs", "usage", "users"}


def test_accounting_database_is_not_reachable_from_compute_nodes() -> None:
    """MariaDB only on the loopback; slurmdbd's port only from controllers and login nodes."""
    design = plan(load_spec(SPECS / "roce-rail-optimized.yaml"))
    files = _files(design)
    dbd = files["slurm/slurmdbd.conf"]
    assert _setting(dbd, "StorageHost") == "localhost"
    assert "bind-address = 127.0.0.1" in dbd
    nft = files["slurm/nftables-accounting.nft"]
    roles = management_roles(design)
    allowed = re.search(r"define slurmdbd_clients = \{ (.*) \}", nft)
    assert allowed and set(allowed[1].split(", ")) == set(roles["slurm"] + roles["login"])
    assert re.search(r"tcp dport 6819 ip saddr \$slurmdbd_clients accept", nft)
    assert re.search(r'tcp dport 3306 iifname "lo" accept', nft)
    assert re.search(r"tcp dport \{ 3306, 6819 \} drop", nft)
    assert not set(design.compute.node_names) & set(allowed[1].split(", "))


def _preflight(script: Path, key: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MUNGE_KEY": str(key), "SLURMDBD_CONF": str(key.parent / "absent")}
    return subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env)


def test_preflight_refuses_a_readable_or_foreign_munge_key(
    lab_design: Design, tmp_path: Path
) -> None:
    script = tmp_path / "preflight.sh"
    script.write_text(_files(lab_design)["slurm/clusterforge-security-preflight.sh"])
    key = tmp_path / "munge.key"
    key.write_bytes(b"\0" * 128)
    key.chmod(0o644)
    out = _preflight(script, key)
    assert out.returncode == 1 and "mode 644" in out.stdout, out.stdout
    key.chmod(0o400)
    if os.geteuid() != 0:
        pytest.skip("changing the key's owner to munge needs root")
    out = _preflight(script, key)
    assert out.returncode == 1 and "owned by root" in out.stdout, out.stdout
    try:
        munge = pwd.getpwnam("munge")
    except KeyError:
        pytest.skip("no munge user on this machine (apt-get install munge)")
    os.chown(key, munge.pw_uid, munge.pw_gid)
    out = _preflight(script, key)
    assert out.returncode == 0, out.stdout
    key.chmod(0o600)
    assert _preflight(script, key).returncode == 0


def test_readme_says_where_keys_live_and_how_to_rotate_them(lab_design: Design) -> None:
    readme = _files(lab_design)["slurm/README.md"]
    where = readme.split("## Where keys and secrets live")[1].split("## Rotating them")[0]
    for secret in ("/etc/munge/munge.key", "StoragePass", "/etc/ssh/ssh_host_", "authorized_keys"):
        assert secret in where, secret
    rotation = readme.split("## Rotating them")[1]
    for step in ("ssh-keygen -t ed25519", "ssh-keygen -A", "mungekey --create", "ALTER USER"):
        assert step in rotation, step
    controller = management_roles(lab_design)["head"][0]
    assert f"on {controller}" in readme
