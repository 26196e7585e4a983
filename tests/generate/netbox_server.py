"""A real NetBox on loopback for the inventory system test, and the two ways to talk to it.

NetBox is not on the package registry.  Its source (v4.6.8, trimmed, with a dump of the
migrated database) and the scripts that run it (``notes/netbox-up.sh``, ``netbox-reset.sh``,
``netbox-down.sh``: a private PostgreSQL cluster, Redis and gunicorn, all state in one work
folder) live in the workspace's ``shared/`` folder beside the checkout, which is where CI finds
them too.  :func:`missing_prerequisites` names whatever is absent so that the test can skip
with that reason; ``tests/generate/netbox_venv.sh`` builds NetBox's virtualenv ahead of time.

* :class:`ImportForm` posts CSV text to NetBox's bulk import form (``/<app>/<model>/import/``),
  the path a person uses with these files: it needs a session login and a CSRF token (API
  tokens are refused by UI views).  Success redirects to the object list; failure renders
  the form again with the reasons in toast messages.
* :class:`Api` reads objects back over the REST API with the token (``Bearer`` header for
  NetBox 4.6 v2 tokens).
"""

from __future__ import annotations

import glob
import html
import http.cookiejar
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

__all__ = [
    "Api",
    "ImportForm",
    "NetBoxRejected",
    "find_shared",
    "free_port",
    "missing_prerequisites",
]

REQUEST_TIMEOUT_S = 900  # one import POST is one transaction; cables take ~0.3 s each


def find_shared() -> Path | None:
    """The ``shared/`` folder beside the checkout (the checkout's parent holds it)."""
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared"
        if (candidate / "notes" / "netbox-up.sh").is_file():
            return candidate
    return None


def _python_312() -> bool:
    """netbox-up.sh needs Python >= 3.12 (Django 6): NETBOX_PYTHON, on PATH, or pyenv's."""
    if os.environ.get("NETBOX_PYTHON") or sys.version_info >= (3, 12):
        return True
    if any(shutil.which(p) for p in ("python3.12", "python3.13", "python3.14")):
        return True
    root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    return bool(glob.glob(f"{root}/versions/3.1[2-9]*/bin/python3"))


def missing_prerequisites() -> str | None:
    """Why a NetBox cannot be started here, or None when everything is in place."""
    shared = find_shared()
    if shared is None:
        return "no shared/notes/netbox-up.sh beside the checkout (the vendored NetBox)"
    vendor = shared / "vendor" / "netbox"
    if not (vendor / "netbox" / "manage.py").is_file():
        return f"no vendored NetBox source at {vendor}"
    if not glob.glob("/usr/lib/postgresql/*/bin/initdb"):
        return "no PostgreSQL server (apt-get install postgresql)"
    for program in ("redis-server", "redis-cli", "curl", "flock", "bc"):
        if shutil.which(program) is None:
            return f"no {program} (apt-get install redis-server curl util-linux bc)"
    if not _python_312():
        return "no Python >= 3.12 for NetBox (Django 6 needs it); set NETBOX_PYTHON"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class NetBoxRejected(AssertionError):
    """NetBox rejected an import; the message holds NetBox's own reasons."""


class ImportForm:
    """A logged-in session on NetBox's CSV bulk import forms."""

    def __init__(self, base_url: str, username: str, password: str) -> None:
        self.base = base_url
        self.jar = http.cookiejar.CookieJar()
        handler = urllib.request.HTTPCookieProcessor(self.jar)
        self.opener = urllib.request.build_opener(handler)
        self.opener.open(f"{base_url}/login/", timeout=60).read()  # sets the CSRF cookie
        url, _ = self._post("/login/", {"username": username, "password": password, "next": "/"})
        if "/login/" in url:
            raise NetBoxRejected(f"login to {base_url} as {username!r} failed")

    def _post(self, path: str, fields: dict[str, str]) -> tuple[str, str]:
        csrf = next(c.value for c in self.jar if c.name == "csrftoken")
        data = urllib.parse.urlencode({"csrfmiddlewaretoken": csrf, **fields}).encode()
        request = urllib.request.Request(
            self.base + path, data=data, headers={"Referer": self.base + path}
        )
        with self.opener.open(request, timeout=REQUEST_TIMEOUT_S) as response:
            return response.geturl(), response.read().decode()

    def import_csv(self, model: str, text: str) -> None:
        """Import CSV ``text`` into ``model`` (``dcim/cables``); raise with NetBox's reasons
        when any row is rejected (one POST is one transaction: nothing is kept then)."""
        path = f"/{model}/import/"
        fields = {"import_method": "direct", "data": text, "format": "csv", "csv_delimiter": ","}
        url, body = self._post(path, fields)
        if path not in url:
            return  # redirected to the object list: every row was created
        reasons = re.findall(r'class="toast-body">(.*?)</div>', body, re.S)
        errors = [html.unescape(re.sub(r"<[^>]+>", " ", r)).strip() for r in reasons]
        raise NetBoxRejected(f"NetBox rejected {model}: {errors or body[:2000]}")


class Api:
    """Read-only REST client (token auth, JSON)."""

    def __init__(self, base_url: str, token: str) -> None:
        self.base, self.token = base_url, token

    def get(self, path: str, **query: Any) -> Any:
        url = f"{self.base}/api/{path.strip('/')}/?{urllib.parse.urlencode(query)}"
        request = urllib.request.Request(
            url, headers={"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=300) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise AssertionError(f"GET {url} -> {exc.code}: {exc.read()[:500]!r}") from None

    def count(self, path: str, **query: Any) -> int:
        total: int = self.get(path, limit=1, brief="true", **query)["count"]
        return total

    def all(self, path: str, fields: str, **query: Any) -> list[dict[str, Any]]:
        """Every object of ``path``, only ``fields`` (comma-separated), 1,000 a page."""
        rows: list[dict[str, Any]] = []
        while True:
            page = self.get(path, limit=1000, offset=len(rows), fields=fields, **query)
            rows += page["results"]
            if not page["next"]:
                return rows


def run_script(shared: Path, name: str, *args: str, timeout_s: float = 1800) -> None:
    """Run ``shared/notes/<name>`` with bash (shared/ has no exec bits in CI)."""
    result = subprocess.run(
        ["bash", str(shared / "notes" / name), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{name} failed ({result.returncode}):\n{result.stderr[-3000:]}")
