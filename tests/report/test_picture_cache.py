"""Pictures kept by what they show: a picture whose drawn data did not change is not drawn
again (the planner re-renders the report on every form change), one whose data changed is,
and the cache stays bounded."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest

from clusterforge.design import plan
from clusterforge.report.elevation import elevation_svg
from clusterforge.report.fabric.picture import fabric_svg
from clusterforge.report.figure_file import PICTURES, draw_picture
from clusterforge.report.floor import floor_svg
from clusterforge.report.html import charts
from clusterforge.report.picture_cache import PictureCache, digest
from clusterforge.report.plots import tco_chart
from tests.conftest import make_spec
from tests.report.pictures import count_draws


@dataclass(frozen=True)
class _Point:
    x: float
    label: str


def test_digest_reads_content_not_identity() -> None:
    a = (_Point(1.5, "a"), [1, 2], {"k": np.arange(3.0)})
    b = (_Point(1.5, "a"), [1, 2], {"k": np.arange(3.0)})
    assert a[0] is not b[0] and digest(a) == digest(b)
    assert digest(a) != digest((_Point(1.5000001, "a"), [1, 2], {"k": np.arange(3.0)}))
    assert digest(a) != digest((_Point(1.5, "a"), [1, 2], {"k": np.arange(4.0)}))
    # sequences carry their lengths and values their types
    assert digest(("ab",)) != digest(("a", "b"))
    assert len({digest(1), digest(1.0), digest("1"), digest(True)}) == 4
    # a long array is read whole, not as its abbreviated repr
    big = np.zeros(5000)
    changed = big.copy()
    changed[2500] = 1.0
    assert digest(big) != digest(changed)


def test_digest_refuses_what_it_cannot_read_by_value() -> None:
    with pytest.raises(TypeError, match="by value"):
        digest((1, object()))
    with pytest.raises(TypeError, match="by value"):
        digest(np.array([object()], dtype=object))  # its bytes would be addresses


def test_cache_is_bounded_least_recently_used_first() -> None:
    cache = PictureCache(max_pictures=3, max_bytes=1000)
    for key in ("a", "b", "c"):
        cache.get_or_draw(key, lambda: b"x" * 10)
    cache.get_or_draw("a", lambda: pytest.fail("a is cached"))  # a is now the newest
    cache.get_or_draw("d", lambda: b"x" * 10)
    assert len(cache) == 3
    redrawn = []
    cache.get_or_draw("b", lambda: redrawn.append("b") or b"x")  # the oldest went
    assert redrawn == ["b"]
    # a, d (10 bytes each) and b (1 byte) are kept; 995 bytes more go over the bound:
    # the oldest go until the rest fits (a, then d)
    cache.get_or_draw("big", lambda: b"y" * 995)
    assert len(cache) == 2 and cache.num_bytes == 996
    cache.get_or_draw("b", lambda: pytest.fail("b is cached"))


@pytest.fixture
def draws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Counter[str]]:
    """The pictures drawn (not found in the cache), by their painter's qualified name."""
    drawn = count_draws(monkeypatch)
    yield drawn
    PICTURES.clear()


def test_draw_picture_with_a_key_draws_once(draws: Counter[str]) -> None:
    painted = []

    def paint(figure) -> None:  # type: ignore[no-untyped-def]
        painted.append(1)
        figure.add_subplot().plot([0, 1], [0, 1])

    first = draw_picture((2.0, 2.0), "svg", paint, key=("line", (0, 1)))
    again = draw_picture((2.0, 2.0), "svg", paint, key=("line", (0, 1)))
    assert first == again and len(painted) == 1
    draw_picture((2.0, 2.0), "png", paint, key=("line", (0, 1)))  # another format: drawn
    draw_picture((2.0, 2.0), "svg", paint)  # no key: always drawn
    assert len(painted) == 3


def _design_pictures(spec_fields: dict[str, object]) -> tuple[str, str, str, bytes]:
    design = plan(make_spec(**spec_fields))
    return elevation_svg(design), floor_svg(design), fabric_svg(design), tco_chart(design)


def test_a_change_redraws_only_the_pictures_that_show_it(draws: Counter[str]) -> None:
    base = {"num_gpus": 64, "facility": {"max_rack_kw": 40}}
    first = _design_pictures(base)
    assert set(draws) == {"elevation_picture", "floor_picture", "fabric_picture", "tco_chart"}
    draws.clear()

    # the same spec planned again: a new design object, the same pictures, none drawn
    assert _design_pictures(base) == first and not draws

    # a rent price is drawn only by the build-vs-rent chart
    priced = _design_pictures({**base, "economics": {"cloud_usd_per_gpu_hour": 9.99}})
    assert draws == {"tco_chart": 1}
    assert priced[:3] == first[:3] and priced[3] != first[3]
    draws.clear()

    # a lower rack power puts fewer nodes in a rack: the racks and the floor change
    racked = _design_pictures({**base, "facility": {"max_rack_kw": 25}})
    assert draws["elevation_picture"] == 1 and draws["floor_picture"] == 1
    assert racked[0] != first[0] and racked[1] != first[1]
    draws.clear()

    # more GPUs: a larger fabric is drawn
    _design_pictures({**base, "num_gpus": 256})
    assert draws["fabric_picture"] == 1


def test_a_cached_picture_is_the_drawn_picture(draws: Counter[str]) -> None:
    design = plan(make_spec(num_gpus=64))
    cached = (elevation_svg(design), fabric_svg(design))
    PICTURES.clear()
    assert (elevation_svg(design), fabric_svg(design)) == cached
    assert draws == {"elevation_picture": 2, "fabric_picture": 2}


def test_charts_redraw_when_a_shown_value_changes(draws: Counter[str]) -> None:
    def chart(values: list[float], title: str = "kW by rack") -> str:
        return charts.bar_chart(title, labels=["r1", "r2"], series=[("kW", values)],
                                y_title="kW")  # fmt: skip

    first = chart([10.0, 12.0])
    assert chart([10.0, 12.0]) == first and draws == {"_draw": 1}
    assert chart([10.0, 12.5]) != first and draws == {"_draw": 2}
    assert chart([10.0, 12.0], "max kW by rack") != first and draws == {"_draw": 3}


def test_no_picture_is_stale_after_a_run_of_changes() -> None:
    """Each variant's report built after the others (the cache holding their pictures) is
    the report built from nothing: no key misses a datum its picture shows."""
    from clusterforge.assess import QUICK, assess
    from clusterforge.report.html import build_report, render_html

    variants = [
        {"num_gpus": 64},
        {"num_gpus": 64, "name": "renamed"},
        {"num_gpus": 64, "facility": {"rack_u": 52}},
        {"num_gpus": 64, "facility": {"max_rack_kw": 25}},
        {"num_gpus": 128},
    ]
    PICTURES.clear()
    try:
        warm = [render_html(build_report(assess(plan(make_spec(**v)), QUICK))) for v in variants]
        for fields, page in zip(variants, warm, strict=True):
            PICTURES.clear()
            cold = render_html(build_report(assess(plan(make_spec(**fields)), QUICK)))
            assert page == cold, f"a stale picture in the report of {fields}"
    finally:
        PICTURES.clear()
