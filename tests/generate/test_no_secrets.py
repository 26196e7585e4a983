"""Nothing secret is ever written: every example's every generated file, scanned.

Keys, the munge key, database passwords and tokens are made and kept on the cluster (the
generated slurm/README.md says where); a generated file only names where they live.  The
patterns catch what a leak would look like: a PEM or OpenSSH private-key block, a munge key
file, a password / secret / token given a value (a ``<placeholder>`` is not a value), a
Kubernetes Secret, a JSON Web Token, cloud and Git-host access keys.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from clusterforge.design import plan
from clusterforge.generate import render, write_files
from clusterforge.spec import load_spec
from tests.generate.test_generate import _all_specs

SECRET_PATTERNS = {
    "private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "Kubernetes Secret": re.compile(r"^kind:\s*Secret\s*$"),
    "JSON Web Token": re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\."),
    "AWS access key": re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    "GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b"),
    # A key word given a value on an uncommented line: `StoragePass=x`, `password: x`,
    # `--token abc`.  Placeholders (<...>, ${...}, "$VAR") and empty values are not values.
    "password or token": re.compile(
        r"^(?!\s*#).*\b(?:\w*pass(?:word|wd)?|secret|token|api[_-]?key)\b\"?\s*[:=]\s*"
        r"(?![\"']?(?:<|\$|\"\"|''|$|null\b|~))\S",
        re.IGNORECASE,
    ),
}
KEY_FILE_SUFFIXES = (".key", ".pem", ".p12", ".pfx", ".jwk")
KEY_FILE_NAMES = ("id_rsa", "id_ecdsa", "id_ed25519", "munge.key", ".munge")


def leaks(path: Path, text: str) -> list[str]:
    """What in ``text`` (the content of ``path``) looks like a secret, one line per finding."""
    found = []
    if path.name.endswith(KEY_FILE_SUFFIXES) or path.name in KEY_FILE_NAMES:
        found.append(f"{path}: a key file")
    for number, line in enumerate(text.splitlines(), 1):
        for what, pattern in SECRET_PATTERNS.items():
            if pattern.search(line):
                found.append(f"{path}:{number}: {what}: {line.strip()[:120]}")
    return found


@pytest.mark.parametrize(
    ("text", "leaky"),
    [
        ("StoragePass=hunter2", True),
        ("#StoragePass=<the database password>", False),
        ("  password: s3cr3t", True),
        ('  password: ""', False),
        ("  token: ${TOKEN}", False),
        ("-----BEGIN OPENSSH PRIVATE KEY-----", True),
        ("kind: Secret", True),
        ("ssh_host_ed25519_key.pub", False),
        ("api_key = AKIAABCDEFGHIJKLMNOP", True),
    ],
)
def test_the_scanner_finds_what_it_looks_for(text: str, leaky: bool) -> None:
    assert bool(leaks(Path("f.conf"), text)) is leaky


@pytest.mark.parametrize("spec_path", _all_specs(), ids=lambda p: p.stem)
def test_no_generated_file_holds_a_secret(spec_path: Path, tmp_path: Path) -> None:
    files = write_files(render(plan(load_spec(spec_path))), tmp_path)
    assert files
    found = []
    for path in files:
        with path.open(encoding="utf-8", errors="replace") as f:
            found += leaks(path.relative_to(tmp_path), f.read())
    assert not found, "\n".join(found)
