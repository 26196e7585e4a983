"""Grafana dashboards against Grafana's own dashboard model (grafana-foundation-sdk, the
models generated from Grafana's schemas): every field must be one the model knows, with the
value it keeps, and every panel type one Grafana ships."""

from __future__ import annotations

import importlib
import json
from pathlib import Path
from typing import Any

import pytest

from clusterforge.design import Design, plan
from clusterforge.generate.monitoring.dashboards import dashboards
from clusterforge.spec import load_spec
from tests.generate.conftest import SPECS

sdk_dashboard = pytest.importorskip(
    "grafana_foundation_sdk.models.dashboard", reason="pip install grafana-foundation-sdk"
)
from grafana_foundation_sdk.cog.encoder import JSONEncoder  # noqa: E402
from grafana_foundation_sdk.cog.plugins import register_default_plugins  # noqa: E402

register_default_plugins()


def _differences(ours: Any, model: Any, path: str = "") -> list[str]:
    """Keys the model dropped or values it changed (keys it adds are its defaults)."""
    if isinstance(ours, dict) and isinstance(model, dict):
        found = [f"{path}/{k}: dropped" for k in ours if k not in model]
        for k in ours:
            if k in model:
                found += _differences(ours[k], model[k], f"{path}/{k}")
        return found
    if isinstance(ours, list) and isinstance(model, list):
        if len(ours) != len(model):
            return [f"{path}: {len(ours)} items became {len(model)}"]
        return [
            d
            for i, pair in enumerate(zip(ours, model, strict=True))
            for d in _differences(*pair, f"{path}[{i}]")
        ]
    return [] if ours == model else [f"{path}: {ours!r} became {model!r}"]


def _round_trip(board: dict[str, Any]) -> dict[str, Any]:
    model = sdk_dashboard.Dashboard.from_json(board)
    return dict(json.loads(json.dumps(model, cls=JSONEncoder)))


@pytest.fixture(scope="module", params=sorted(SPECS.glob("*.yaml")), ids=lambda p: p.stem)
def boards(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    design: Design = plan(load_spec(Path(request.param)))
    return {stem: json.loads(text) for stem, text in dashboards(design).items()}


def test_every_field_is_one_grafanas_model_keeps(boards: dict[str, dict[str, Any]]) -> None:
    for stem, board in boards.items():
        assert _differences(board, _round_trip(board)) == [], stem


def test_every_panel_type_is_a_grafana_panel(boards: dict[str, dict[str, Any]]) -> None:
    for board in boards.values():
        for panel in board["panels"]:
            module = importlib.import_module(f"grafana_foundation_sdk.models.{panel['type']}")
            assert hasattr(module, "Options"), panel["type"]


def test_a_misspelt_field_is_caught(boards: dict[str, dict[str, Any]]) -> None:
    """The check itself: a key Grafana does not know is reported, not silently kept."""
    board = json.loads(json.dumps(next(iter(boards.values()))))
    board["panels"][0]["gridPoss"] = board["panels"][0].pop("gridPos")
    assert "/panels[0]/gridPoss: dropped" in _differences(board, _round_trip(board))


def test_panels_tile_the_grid_without_overlap(boards: dict[str, dict[str, Any]]) -> None:
    for stem, board in boards.items():
        cells: set[tuple[int, int]] = set()
        for panel in board["panels"]:
            g = panel["gridPos"]
            assert g["x"] + g["w"] <= 24, stem
            mine = {
                (x, y)
                for x in range(g["x"], g["x"] + g["w"])
                for y in range(g["y"], g["y"] + g["h"])
            }
            assert not cells & mine, (stem, panel["title"])
            cells |= mine
