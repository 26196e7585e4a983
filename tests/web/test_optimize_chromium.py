"""The Optimize page in a real browser (headless Chromium driven by Selenium): the starting
spec searches to a chart and a table of the front, a bad spec shows its message, and "Open in
planner" loads a front point into the planner, with no script error. The app runs on a
loopback port in this process."""

from __future__ import annotations

import pytest

from tests.web.test_planner_chromium import _errors, _wait

pytest.importorskip("uvicorn", reason="the planner needs the ui extra (uvicorn)")
pytestmark = pytest.mark.system


def test_search_shows_the_front_and_a_point_opens_in_the_planner(server, browser):
    from selenium.webdriver.common.by import By

    browser.get(server + "/optimize")
    text = browser.find_element(By.ID, "spec-yaml")
    good = text.get_attribute("value")
    assert "h100-build-or-rent" in good
    text.clear()
    text.send_keys("objective: fastest\njob: {model: llama3-8b, tokens_b: 1, global_batch: 8}\n")
    browser.find_element(By.ID, "run-search").click()
    error = browser.find_element(By.ID, "optimize-error")
    _wait(error.is_displayed, "the spec's error")
    assert "objective" in error.text
    # the browser logs the 422 answer itself; nothing else (no script error)
    assert all("/api/optimize" in m and "422" in m for m in _errors(browser))

    browser.execute_script("arguments[0].value = arguments[1];", text, good)
    browser.find_element(By.ID, "run-search").click()
    rows = lambda: browser.find_elements(By.CSS_SELECTOR, "#front-table tbody tr")  # noqa: E731
    _wait(lambda: len(rows()) > 0, "the front's table")
    assert not error.is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "#front-chart svg")
    assert "Winner (cost-per-token)" in browser.find_element(By.ID, "winner").text
    design = rows()[0].find_elements(By.TAG_NAME, "td")[1].text
    rows()[0].find_element(By.CSS_SELECTOR, "button.open-point").click()
    _wait(lambda: browser.current_url.rstrip("/") == server, "the planner's page")
    headline = browser.find_element(By.ID, "headline").text
    assert headline.startswith("h100-build-or-rent: ") and design.split(" x ")[0] in headline
    assert _errors(browser) == []
