"""Nothing secret is ever written: the scan of every example's every generated file.

Keys, the munge key, database passwords and tokens are made and kept on the cluster (the
generated slurm/README.md says where); a generated file only names where they live.  The
patterns catch what a leak would look like: a PEM or OpenSSH private-key block, a munge key
file, a password / secret / token given a value (a ``<placeholder>`` is not a value), a
Kubernetes Secret, a JSON Web Token, cloud and Git-host access keys.

The scan runs in tests/generate/test_generate.py, on the files it renders for every example
(:func:`tests.generate.leak_scan.secrets_in`); here the patterns are checked on known texts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.generate.leak_scan import leaks


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
