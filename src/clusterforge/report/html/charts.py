"""Charts of the HTML report, drawn with plotly (https://plotly.com/python/).

Each function takes plain series and returns an HTML fragment (a ``div`` and the script that
draws it); :func:`plotly_js` is the library itself, inlined once per report so the file opens
without a network. Figures are written as plotly.js figure dictionaries (traces and layout,
https://plotly.com/javascript/reference/) and serialised without plotly's Python-side
validation, which costs a quarter of a second per chart. plotly is an optional dependency
(the ``ui`` extra), imported lazily.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from clusterforge.errors import AdapterError

__all__ = [
    "bar_chart",
    "floor_chart",
    "floor_heatmap",
    "histogram_chart",
    "line_chart",
    "plotly_js",
    "require_plotly",
    "sankey_chart",
]

INSTALL_HINT = "pip install 'clusterforge[ui]'"
HEIGHT_PX = 420
_CONFIG = {"displaylogo": False, "responsive": True}


def require_plotly() -> Any:
    """The ``plotly.io`` module, or an :class:`AdapterError` saying how to install it."""
    try:
        import plotly.io as pio
    except ImportError:
        raise AdapterError(
            f"the HTML report needs plotly; install it with {INSTALL_HINT}"
        ) from None
    return pio


@functools.cache
def plotly_js() -> str:
    """The plotly.js bundle shipped inside the plotly package (about 4.8 MB, MIT licence)."""
    require_plotly()
    from plotly.offline import get_plotlyjs

    return str(get_plotlyjs())


def _html(
    traces: list[dict[str, Any]],
    title: str,
    layout: dict[str, Any] | None = None,
    *,
    height_px: int = HEIGHT_PX,
) -> str:
    pio = require_plotly()
    base: dict[str, Any] = {
        "title": {"text": title, "x": 0.01},
        "height": height_px,
        "margin": {"l": 60, "r": 20, "t": 50, "b": 50},
        "legend": {"orientation": "h", "y": -0.2},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "xaxis": {"gridcolor": "#eee"},
        "yaxis": {"gridcolor": "#eee"},
    }
    for key, value in (layout or {}).items():
        base[key] = base[key] | value if isinstance(base.get(key), dict) else value
    figure = {"data": traces, "layout": base}
    return str(
        pio.to_html(figure, full_html=False, include_plotlyjs=False, config=_CONFIG, validate=False)
    )


def line_chart(
    title: str,
    *,
    series: Sequence[tuple[str, Sequence[float], Sequence[float]]],
    x_title: str,
    y_title: str,
    log_x: bool = False,
    markers: bool = True,
    x_ticks: Sequence[tuple[float, str]] = (),
) -> str:
    """Lines, one per (label, xs, ys); ``markers`` marks each point (a simulated size);
    ``x_ticks`` as (value, label) replaces plotly's own tick labels (whose SI suffixes read
    1e9 bytes as "1G" and 1 byte as "1")."""
    mode = "lines+markers" if markers else "lines"
    traces = [
        {"type": "scatter", "mode": mode, "name": label, "x": list(xs), "y": list(ys)}
        for label, xs, ys in series
    ]
    xaxis: dict[str, Any] = {"title": {"text": x_title}, "type": "log" if log_x else "linear"}
    if x_ticks:
        xaxis |= {"tickmode": "array", "tickvals": [v for v, _ in x_ticks],
                  "ticktext": [label for _, label in x_ticks]}  # fmt: skip
    layout = {"xaxis": xaxis, "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"}}
    return _html(traces, title, layout)


def bar_chart(
    title: str,
    *,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float]]],
    y_title: str,
    limit: tuple[str, Sequence[float]] | None = None,
    stacked: bool = False,
) -> str:
    """Bars, one trace per (name, values), grouped or ``stacked``; ``limit`` draws a dashed
    line across the bars (a circuit's capacity)."""
    traces: list[dict[str, Any]] = [
        {"type": "bar", "name": name, "x": list(labels), "y": list(values)}
        for name, values in series
    ]
    if limit is not None:
        traces.append(
            {"type": "scatter", "mode": "lines", "name": limit[0], "x": list(labels),
             "y": list(limit[1]), "line": {"dash": "dash", "color": "#e45756"}}
        )  # fmt: skip
    layout = {
        "barmode": "stack" if stacked else "group",
        "yaxis": {"title": {"text": y_title}, "rangemode": "tozero"},
    }
    return _html(traces, title, layout)


def floor_chart(
    title: str,
    *,
    x_m: Sequence[float],
    y_m: Sequence[float],
    value_kw: Sequence[float],
    hover: Sequence[str],
    symbols: Sequence[str],
) -> str:
    """Racks as squares at their floor position, coloured by kW (the colour bar)."""
    trace = {
        "type": "scatter",  # SVG: WebGL (scattergl) is refused by GPU-less browsers
        "mode": "markers", "x": list(x_m), "y": list(y_m), "text": list(hover),
        "hoverinfo": "text",
        "marker": {"symbol": list(symbols), "size": 12, "color": list(value_kw),
                   # plotly.js's YlOrRd runs dark to light: reversed, the hot racks are red
                   "colorscale": "YlOrRd", "reversescale": True,
                   "colorbar": {"title": {"text": "kW"}},
                   "line": {"width": 1}},
    }  # fmt: skip
    layout = {
        # equal metres on both axes; the plot narrows instead of padding x with empty floor
        "xaxis": {"title": {"text": "x (m)"}, "constrain": "domain"},
        "yaxis": {"title": {"text": "y (m)"}, "scaleanchor": "x", "autorange": "reversed"},
    }
    return _html([trace], title, layout, height_px=min(900, max(HEIGHT_PX, 60 * len(set(y_m)))))


def floor_heatmap(
    title: str,
    *,
    x_m: Sequence[float],
    y_m: Sequence[float],
    value_kw: Sequence[Sequence[float | None]],
    hover: Sequence[Sequence[str]],
) -> str:
    """Racks as cells of a grid (``value_kw[i][j]`` at ``y_m[i]``, ``x_m[j]``; None where no
    rack stands), coloured by kW: one image however many racks, where a marker per rack
    would be an SVG element per rack. A row of racks is a few pixels tall whatever the
    floor's proportions (metres are not kept equal on both axes: a long hall would be a
    sliver)."""
    trace = {
        "type": "heatmap", "x": list(x_m), "y": list(y_m), "z": [list(r) for r in value_kw],
        "text": [list(r) for r in hover], "hoverinfo": "text", "colorscale": "YlOrRd",
        "reversescale": True, "colorbar": {"title": {"text": "kW"}}, "hoverongaps": False,
    }  # fmt: skip
    layout = {
        "xaxis": {"title": {"text": "x (m)"}, "constrain": "domain", "showgrid": False},
        "yaxis": {"title": {"text": "y (m)"}, "autorange": "reversed", "showgrid": False},
    }
    height_px = min(1400, max(HEIGHT_PX, 8 * len(y_m)))
    return _html([trace], title, layout, height_px=height_px)


def sankey_chart(
    title: str, *, nodes: Sequence[str], links: Sequence[tuple[int, int, float, str]]
) -> str:
    """A flow diagram: ``nodes`` by label, ``links`` as (source, target, count, label)."""
    trace = {
        "type": "sankey",
        "node": {"label": list(nodes), "pad": 20, "thickness": 18},
        "link": {"source": [s for s, _, _, _ in links], "target": [t for _, t, _, _ in links],
                 "value": [v for _, _, v, _ in links], "label": [lb for *_, lb in links]},
    }  # fmt: skip
    return _html([trace], title)


def histogram_chart(title: str, *, values: Sequence[float], x_title: str) -> str:
    """A histogram of ``values`` (plotly.js chooses the bins)."""
    trace = {"type": "histogram", "x": list(values), "name": x_title}
    layout = {"xaxis": {"title": {"text": x_title}}, "yaxis": {"title": {"text": "count"}}}
    return _html([trace], title, layout)
