"""The planner redraws, on a form change, only the report pictures the change alters: the
others come from the picture cache, byte for byte what drawing them gives."""

from __future__ import annotations

from collections import Counter

import pytest

from clusterforge.web.app import Planner
from tests.conftest import make_spec
from tests.report.pictures import count_draws


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """The pictures drawn from now on, by their painter's function."""
    return count_draws(monkeypatch)


def test_a_cost_change_redraws_only_the_cost_chart(drawn: Counter[str]) -> None:
    base = {"num_gpus": 64, "economics": {"staff_usd_per_year": 200_000}}
    planner = Planner.start(make_spec(**base))
    assert {"elevation_picture", "floor_picture", "fabric_picture", "tco_chart"} <= set(drawn)
    drawn.clear()
    changed = planner.update(make_spec(**{**base, "economics": {"staff_usd_per_year": 400_000}}))
    assert changed is not None and "tco" in changed and "racks" not in changed
    assert drawn == {"tco_chart": 1}


def test_a_rack_power_change_redraws_the_racks_not_the_fabric(drawn: Counter[str]) -> None:
    base = {"num_gpus": 64, "facility": {"max_rack_kw": 40}}
    planner = Planner.start(make_spec(**base))
    racks_before = planner.parts.sections["racks"]
    drawn.clear()
    planner.update(make_spec(**{**base, "facility": {"max_rack_kw": 25}}))
    assert planner.parts.sections["racks"] != racks_before
    assert drawn["elevation_picture"] == 1 and drawn["floor_picture"] == 1
    assert "fabric_picture" not in drawn
    # and back: every picture was drawn before, none is drawn again
    drawn.clear()
    planner.update(make_spec(**base))
    assert planner.parts.sections["racks"] == racks_before and not drawn
