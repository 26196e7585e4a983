"""Who may reach what on a Slurm cluster: node logins, other users' data, munge, accounting.

Sources (Slurm 25.11 documentation, slurm.schedmd.com, read 2026-12-01):

* **Logins only with a job.**  ``pam_slurm_adopt`` (Slurm "pam_slurm_adopt" guide) admits an
  ssh login to a compute node only for a user with a job there, and moves the session into
  that job's ``extern`` step, so it is confined and accounted like the job and ends with it.
  The guide requires ``PrologFlags=Contain`` (which creates the extern step at allocation)
  and the ``task/cgroup`` and ``proctrack/cgroup`` plugins; the module must be the last of
  the sshd account stack, and ``action_adopt_failure=deny action_generic_failure=deny`` keep
  a failing plugin from letting users in unconfined.  Members of :data:`ADMIN_GROUP` pass
  through ``pam_access`` before it.
* **Private data.**  ``PrivateData`` (slurm.conf(5)) hides other users' jobs, usage, user
  records and account records from ordinary users: ``accounts,jobs,usage,users``.
* **Munge key.**  munged refuses a key readable by others (munge's ``munged(8)``); the key
  must belong to the munge user with mode 0400 (or 0600).  The generated preflight script
  checks that, and slurmdbd.conf's 0600 mode for SlurmUser (slurmdbd.conf(5)).
* **The accounting database.**  slurmdbd talks to MariaDB on the same host
  (``StorageHost=localhost``); clients reach slurmdbd on ``DbdPort`` (6819).  Compute nodes
  never need either: slurmctld forwards their job records.  The nftables file admits 6819
  from the controllers and login nodes only (``sacct`` and ``sacctmgr`` there talk to
  slurmdbd directly) and 3306 from the loopback only.
"""

from __future__ import annotations

from clusterforge.design import Design
from clusterforge.generate.common import GeneratedFile, checked_name, render_template
from clusterforge.generate.slurm.accounting import (
    SLURMDBD_PORT,
    controllers,
    management_roles,
)

__all__ = [
    "ADMIN_GROUP",
    "MARIADB_PORT",
    "MUNGE_KEY",
    "PRIVATE_DATA",
    "PROLOG_FLAGS",
    "access_files",
]

# Contain makes the extern step pam_slurm_adopt adopts into; it implies Alloc (slurm.conf(5)).
PROLOG_FLAGS = "Alloc,Contain"
PRIVATE_DATA = "accounts,jobs,usage,users"
ADMIN_GROUP = "clusteradmin"  # may log in to any node (pam_access); root always may
MUNGE_KEY = "/etc/munge/munge.key"
SLURMDBD_CONF = "/etc/slurm/slurmdbd.conf"
MARIADB_PORT = 3306  # MariaDB's default port


def slurmdbd_clients(design: Design) -> list[str]:
    """Hosts that talk to slurmdbd: the controllers, then the login nodes."""
    roles = management_roles(design)
    hosts = list(controllers(design).hosts) + roles.get("login", [])
    return [checked_name(h, "management server") for h in dict.fromkeys(hosts)]


def _pam_snippet(design: Design) -> str:
    return render_template(
        "slurm/pam.d-sshd-account.j2", cluster=design.spec.name, admin_group=ADMIN_GROUP
    )


def _preflight(design: Design) -> str:
    return render_template(
        "slurm/security-preflight.sh.j2",
        cluster=checked_name(design.spec.name, "cluster name"),
        # Constant paths without shell metacharacters, placed inside double quotes.
        munge_key=MUNGE_KEY,
        slurmdbd_conf=SLURMDBD_CONF,
    )


def _nftables(design: Design) -> str:
    c = controllers(design)
    return render_template(
        "slurm/nftables-accounting.nft.j2",
        cluster=design.spec.name,
        accounting_host=c.accounting_host,
        clients=", ".join(slurmdbd_clients(design)),
        dbd_port=SLURMDBD_PORT,
        mariadb_port=MARIADB_PORT,
    )


def _readme(design: Design) -> str:
    c = controllers(design)
    return render_template(
        "slurm/README.md.j2",
        cluster=design.spec.name,
        slurm_version=design.spec.slurm.version,
        accounting_host=c.accounting_host,
        prolog_flags=PROLOG_FLAGS,
        private_data=PRIVATE_DATA,
        admin_group=ADMIN_GROUP,
        dbd_port=SLURMDBD_PORT,
        dbd_clients=", ".join(slurmdbd_clients(design)),
        munge_key=MUNGE_KEY,
    )


def access_files(design: Design) -> list[GeneratedFile]:
    """The PAM account stack, the preflight script, the accounting firewall and the README
    (where keys live and how to rotate them)."""
    return [
        GeneratedFile("slurm/README.md", _readme(design)),
        GeneratedFile("slurm/pam.d-sshd-account", _pam_snippet(design)),
        GeneratedFile("slurm/clusterforge-security-preflight.sh", _preflight(design), 0o755),
        GeneratedFile("slurm/nftables-accounting.nft", _nftables(design)),
    ]
