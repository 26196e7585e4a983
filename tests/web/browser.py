"""Headless Chromium for system tests: a page's DOM after its scripts ran, its console
messages, and a screenshot. Name resolution is disabled so a page that reached for the
network would fail to load what it asked for."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

__all__ = ["BrowserRun", "chromium_or_skip", "open_page", "selenium_chromium"]

CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
CONSOLE = re.compile(r":CONSOLE[^\]]*\] (.*)")
TIMEOUT_S = 120


@dataclass(frozen=True)
class BrowserRun:
    dom: str
    console: list[str]
    screenshot: Path | None


def chromium_or_skip() -> str:
    for name in CANDIDATES:
        if path := shutil.which(name):
            return path
    pytest.skip("headless Chromium is not installed (Debian package 'chromium')")


def _flags(width: int, height: int) -> list[str]:
    return [
        "--headless",
        "--no-sandbox",  # tests run as root in CI containers
        "--disable-gpu",
        "--no-first-run",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # no DNS: nothing from the network
        f"--window-size={width},{height}",
        "--virtual-time-budget=10000",  # let the page's scripts finish before the dump
    ]


def open_page(url: str, *, screenshot: Path | None = None, height: int = 4000) -> BrowserRun:
    """Load ``url``: the DOM after scripts, the console lines, and optionally a screenshot."""
    binary = chromium_or_skip()
    dumped = subprocess.run(
        [binary, *_flags(1400, height), "--enable-logging=stderr", "--v=0", "--dump-dom", url],
        capture_output=True, text=True, timeout=TIMEOUT_S, check=True,
    )  # fmt: skip
    console = [m.group(1) for m in CONSOLE.finditer(dumped.stderr)]
    if screenshot is not None:
        subprocess.run(
            [binary, *_flags(1400, height), f"--screenshot={screenshot}", url],
            capture_output=True, timeout=TIMEOUT_S, check=True,
        )  # fmt: skip
    return BrowserRun(dumped.stdout, console, screenshot)


def selenium_chromium(*, width: int, host_rules: str = "MAP * ~NOTFOUND") -> Any:
    """A headless Chromium driven by Selenium (skips when Selenium, Chromium or chromedriver
    is missing), its console kept for ``get_log("browser")``. ``host_rules`` keep pages off
    the network; the caller quits the driver."""
    webdriver = pytest.importorskip("selenium.webdriver", reason="Selenium drives Chromium")
    binary, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (binary and driver):
        pytest.skip("Chromium and chromedriver are not installed (Debian: chromium-driver)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", f"--window-size={width},1000",
                 f"--host-resolver-rules={host_rules}"):  # fmt: skip
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(driver))
