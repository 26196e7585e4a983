"""Slurm controllers, accounting (slurmdbd) and fair-share settings for a shared cluster.

* **Fail-over needs shared state.**  slurm.conf(5), ``StateSaveLocation``: with a backup
  controller the directory must be readable and writable by both controllers, i.e. one file
  system mounted on both; two ``SlurmctldHost`` lines over a local path give two controllers
  with diverging job state.  With two management servers the generated file therefore uses
  :data:`SHARED_STATE_SAVE` and says that it must be a shared mount; with one it writes a
  single controller and the local path.
* **Accounting.**  ``AccountingStorageType=accounting_storage/slurmdbd`` sends job records to
  slurmdbd (slurmdbd.conf(5)), which keeps them in MySQL/MariaDB
  (``accounting_storage/mysql``); ``AccountingStorageEnforce=associations,limits,qos`` admits
  only jobs of users with an account (Slurm "Accounting and Resource Limits" guide), and
  ``AccountingStorageTRES=gres/gpu`` accounts GPU-hours per user.
* **Fair share.**  ``PriorityType=priority/multifactor`` (Slurm "Multifactor Priority
  Plugin"): fair share dominates, with usage decaying with a 7-day half-life (the plugin's
  default ``PriorityDecayHalfLife``); age and job size break ties so large jobs do not starve.
"""

from __future__ import annotations

from dataclasses import dataclass

from clusterforge.design import Design
from clusterforge.design.management import management_servers
from clusterforge.generate.common import checked_name, render_template

__all__ = [
    "LOCAL_STATE_SAVE",
    "PRIORITY_WEIGHTS",
    "SHARED_STATE_SAVE",
    "SLURMDBD_PORT",
    "Controllers",
    "accounting_settings",
    "controllers",
    "management_hosts",
    "management_roles",
    "slurmdbd_conf",
]

LOCAL_STATE_SAVE = "/var/spool/slurmctld"
SHARED_STATE_SAVE = "/shared/slurm/statesave"  # a mount both controllers share
SLURMDBD_PORT = 6819  # slurmdbd.conf(5) DbdPort default
ACCOUNTING_DATABASE = "slurm_acct_db"  # slurmdbd.conf(5) StorageLoc default
PRIORITY_DECAY_HALF_LIFE = "7-0"  # days-hours: the multifactor plugin's default
PRIORITY_MAX_AGE = "7-0"  # a week of waiting earns the whole age factor
# Fair share first; a job that waited a week (age) or spans many nodes (size) gains at most a
# tenth of it each, QOS lets the site lift urgent work above fair share.
PRIORITY_WEIGHTS = {
    "PriorityWeightFairshare": 10000,
    "PriorityWeightAge": 1000,
    "PriorityWeightJobSize": 1000,
    "PriorityWeightQOS": 20000,
}


@dataclass(frozen=True)
class Controllers:
    """Where slurmctld and slurmdbd run and where slurmctld keeps its state."""

    hosts: tuple[str, ...]  # SlurmctldHost lines, primary first
    state_save_location: str
    accounting_host: str  # runs slurmdbd and its database
    comments: tuple[str, ...]  # what the operator must provide, for slurm.conf


def management_hosts(design: Design) -> list[str]:
    """Management servers of the design, sorted by name."""
    names = sorted(
        d.name
        for r in design.racks
        for d in r.devices
        if d.kind == "server" and d.role == "management"
    )
    return [checked_name(n, "management server") for n in names]


def management_roles(design: Design) -> dict[str, list[str]]:
    """Management servers by role (``head``, ``slurm``, ``login``, ``monitoring``, ``ufm``).

    The design numbers its management servers ``mgmt-01``, ``mgmt-02``, ... in the order of
    the roles of :func:`clusterforge.design.management.management_servers`; a design whose count
    differs (a hand-edited layout) has every server as a head node.
    """
    hosts = management_hosts(design)
    counts = management_servers(design.spec, design.compute)
    if sum(counts.values()) != len(hosts):
        return {"head": hosts}
    roles: dict[str, list[str]] = {}
    first = 0
    for role, count in counts.items():
        roles[role] = hosts[first : first + count]
        first += count
    return roles


def controllers(design: Design) -> Controllers:
    """slurmctld on the dedicated Slurm servers, else on the head node(s): one controller
    with local state, or two that share :data:`SHARED_STATE_SAVE`."""
    roles = management_roles(design)
    hosts = tuple((roles.get("slurm") or roles.get("head") or [])[:2]) or ("slurm-controller",)
    if len(hosts) == 1:
        return Controllers(
            hosts=hosts,
            state_save_location=LOCAL_STATE_SAVE,
            accounting_host=hosts[0],
            comments=("One controller (the design has one head node for Slurm): no fail-over.",),
        )
    return Controllers(
        hosts=hosts,
        state_save_location=SHARED_STATE_SAVE,
        accounting_host=hosts[0],
        comments=(
            f"Fail-over: {hosts[1]} takes over from {hosts[0]} only with the same state, so",
            f"{SHARED_STATE_SAVE} must be ONE file system mounted read-write on both",
            "controllers (NFS from the storage system, low latency: slurmctld writes it on",
            "every job change).  A local directory there splits the cluster's job state.",
        ),
    )


def slurmdbd_conf(design: Design) -> str:
    """slurmdbd.conf: slurmdbd on the first controller, records in MySQL/MariaDB there."""
    c = controllers(design)
    return render_template(
        "slurm/slurmdbd.conf.j2",
        cluster=checked_name(design.spec.name, "cluster name"),
        dbd_host=c.accounting_host,
        dbd_port=SLURMDBD_PORT,
        database=ACCOUNTING_DATABASE,
    )


def accounting_settings(design: Design) -> dict[str, object]:
    """The slurm.conf values of accounting and fair share (template variables)."""
    c = controllers(design)
    return {
        "accounting_host": c.accounting_host,
        "dbd_port": SLURMDBD_PORT,
        "priority_decay_half_life": PRIORITY_DECAY_HALF_LIFE,
        "priority_max_age": PRIORITY_MAX_AGE,
        "priority_weights": PRIORITY_WEIGHTS,
    }
