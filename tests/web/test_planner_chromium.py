"""The planner in a real browser (headless Chromium driven by Selenium): the page loads with
no script errors, changing a field re-plans and updates the page, and an invalid value is
shown at its field. The app runs on a loopback port in this process."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the planner needs the ui extra (uvicorn)")
pytest.importorskip("selenium.webdriver", reason="Selenium drives Chromium")
pytestmark = pytest.mark.system

WAIT_S = 60.0


def _wait(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def _set(browser, path: str, value: str) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    field = browser.find_element(By.ID, f"f-{path}")
    field.clear()
    field.send_keys(value, Keys.TAB)  # leaving the field fires 'change'


def _errors(browser) -> list[str]:
    return [e["message"] for e in browser.get_log("browser") if e["level"] == "SEVERE"]


def test_the_planner_replans_on_change_and_shows_field_errors(server, browser, tmp_path):
    from selenium.webdriver.common.by import By

    browser.get(server + "/")
    headline = browser.find_element(By.ID, "headline")
    assert "76 racks" in headline.text
    _set(browser, "facility.max_rack_kw", "35")
    _wait(lambda: "76 racks" not in headline.text, "the new design's headline")
    frame = browser.find_element(By.ID, "report")
    assert not frame.get_attribute("src").endswith("v=0")  # the frame loads the new version
    browser.switch_to.frame(frame)
    _wait(lambda: len(browser.find_elements(By.CSS_SELECTOR, "figure svg")) > 0, "the charts")
    browser.switch_to.default_content()
    _set(browser, "num_gpus", "lots")
    error = browser.find_element(By.ID, "error-num_gpus")
    # Clearing the field fires its own 'change' ("Field required"); wait for the answer to
    # the typed value, which a fast server may send after the first one is already shown.
    _wait(lambda: error.is_displayed() and "whole number" in error.text, "the field error")
    shot = tmp_path / "planner.png"
    browser.save_screenshot(str(shot))
    if folder := os.environ.get("CLUSTERFORGE_TEST_ARTIFACTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(folder) / shot.name)
    assert _errors(browser) == []


def test_errors_offer_fixes_the_report_is_marked_stale_and_only_changes_reload(server, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    browser.get(server + "/")
    frame = browser.find_element(By.ID, "report")
    src = frame.get_attribute("src")
    _set(browser, "economics.years", "6")
    status = browser.find_element(By.ID, "status")
    _wait(lambda: "updated" in status.text, "the sections that changed")
    assert frame.get_attribute("src") == src  # swapped in place, not reloaded
    browser.switch_to.frame(frame)
    _wait(lambda: "6 years" in browser.find_element(By.ID, "summary").text, "the new summary")
    browser.switch_to.default_content()

    headline = browser.find_element(By.ID, "headline")
    before = headline.text
    Select(browser.find_element(By.ID, "f-node")).select_by_value("gb200-nvl72-tray")
    browser.find_element(By.ID, "f-node").send_keys("\t")
    stale = browser.find_element(By.ID, "stale")
    _wait(stale.is_displayed, "the out-of-date mark")
    for path in ("facility.cooling_available", "facility.max_rack_kw"):
        assert browser.find_element(By.ID, f"error-{path}").is_displayed(), path
    assert len(browser.find_elements(By.CSS_SELECTOR, "button.fix")) == 2
    browser.find_element(By.ID, "fix-all").click()
    _wait(lambda: not stale.is_displayed() and headline.text != before, "the fixed spec to plan")
    assert browser.find_element(By.ID, "f-facility.max_rack_kw").get_attribute("value") == "132"
    assert _errors(browser) == []
