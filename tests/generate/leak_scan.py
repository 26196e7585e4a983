"""What a leaked secret in a generated file would look like, and the scan for it.

Used by tests/generate/test_generate.py on every example's every generated file (the files
it already renders, so the 100k-GPU example is planned and rendered once) and checked on
known texts by tests/generate/test_no_secrets.py.
"""

from __future__ import annotations

import re
from pathlib import Path

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


def secrets_in(root: Path, files: list[Path]) -> list[str]:
    """Every finding of :func:`leaks` in ``files`` (paths under ``root``)."""
    found = []
    for path in files:
        with path.open(encoding="utf-8", errors="replace") as f:
            found += leaks(path.relative_to(root), f.read())
    return found
