"""The report as a paginated PDF, printed by headless Chromium (an adapter: the one program
this module runs).

Chromium loads the written page as ``<page>#print``, on which the page's script opens every
table and draws every row of racks, and prints it with the page's print stylesheet (A4, a
section per page, the title and page numbers in the margins) through its ``--print-to-pdf``
switch (https://developer.chrome.com/docs/chromium/headless, "Save a page as a PDF").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from clusterforge.errors import AdapterError
from clusterforge.userfiles import write_file

__all__ = ["CHROMIUM_NAMES", "INSTALL_HINT", "find_chromium", "print_pdf"]

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT = (
    "install Chromium (Debian/Ubuntu: apt-get install chromium; macOS: brew install --cask "
    "chromium) or put its folder on PATH"
)
PRINT_TIMEOUT_S = 600
# virtual time Chromium lets the page's script run before printing: the script is
# synchronous, so this bounds only a page stuck in a loop
SCRIPT_BUDGET_MS = 30_000


def find_chromium() -> str:
    """The path of a Chromium (or Chrome) on PATH, or an :class:`AdapterError` saying how to
    install one."""
    for name in CHROMIUM_NAMES:
        if found := shutil.which(name):
            return found
    raise AdapterError(
        f"the PDF is printed by headless Chromium, and none was found: {INSTALL_HINT}"
    )


def _flags() -> list[str]:
    flags = [
        "--headless",
        "--disable-gpu",
        "--no-first-run",
        "--no-pdf-header-footer",  # the page's own margins carry the title and page numbers
        "--host-resolver-rules=MAP * ~NOTFOUND",  # the page is self-contained: no network
        f"--virtual-time-budget={SCRIPT_BUDGET_MS}",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        flags.append("--no-sandbox")  # Chromium's sandbox refuses to start as root
    return flags


def print_pdf(page: Path, pdf: Path) -> Path:
    """Print the HTML file ``page`` to ``pdf`` (written whole or not at all, as every output
    is); an :class:`AdapterError` when Chromium is missing or fails. Returns the path written."""
    binary = find_chromium()
    with tempfile.TemporaryDirectory(prefix="clusterforge-pdf-") as folder:
        staged = Path(folder) / "report.pdf"
        # a profile of its own: a Chromium already open for the user keeps its own
        profile = Path(folder) / "profile"
        command = [binary, *_flags(), f"--user-data-dir={profile}",
                   f"--print-to-pdf={staged}", page.resolve().as_uri() + "#print"]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True,
                                  timeout=PRINT_TIMEOUT_S, check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise AdapterError(
                f"Chromium did not print {page.name} within {PRINT_TIMEOUT_S} s"
            ) from None
        if done.returncode != 0 or not staged.is_file() or staged.stat().st_size == 0:
            last = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
            raise AdapterError(
                f"Chromium ({binary}) did not print the PDF (exit {done.returncode}): {last}"
            )
        return write_file(pdf, staged.read_bytes(), "report PDF")
