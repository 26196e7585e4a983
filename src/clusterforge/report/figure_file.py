"""Static picture files (SVG, PNG, PDF) drawn with matplotlib (https://matplotlib.org/).

The pictures ``plan``, ``simulate --plot`` and ``goodput --plot`` write are matplotlib
figures built with the object-oriented API (:class:`matplotlib.figure.Figure`, no ``pyplot``
and so no global figure state, no GUI backend). :func:`draw_picture` saves one in the format
its file name asks for, byte for byte the same on every run: SVG ids are hashed with a fixed
salt (``svg.hashsalt``) and no file carries a creation date. SVG text stays text
(``svg.fonttype = none``): labels can be searched, selected and read by a screen reader.

matplotlib takes about a second to import, so it is imported here, lazily, and only when a
picture is drawn.
"""

from __future__ import annotations

import hashlib
import io
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, assert_never

from clusterforge.errors import SpecError
from clusterforge.report.picture_cache import PictureCache

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["COLORS", "PICTURES", "PICTURE_FORMATS", "PictureFormat", "draw_picture",
           "picture_format", "svg_fragment"]  # fmt: skip

PictureFormat = Literal["svg", "png", "pdf"]
PICTURE_FORMATS: tuple[PictureFormat, ...] = ("svg", "png", "pdf")
PNG_DPI = 150
_RC = {
    "svg.hashsalt": "clusterforge",
    "svg.fonttype": "none",
    "font.family": "sans-serif",
    # matplotlib measures text with DejaVu Sans (it ships the font); viewers without it fall
    # back to metric-alike fonts. A short list: the SVG repeats it on every text.
    "font.sans-serif": ["DejaVu Sans", "Helvetica", "Arial"],
    "font.size": 9.0,
    "axes.titlesize": 10.0,
    "axes.titleweight": "bold",
    "axes.grid": True,
    "grid.color": "#dddddd",
    "axes.axisbelow": True,
}
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)
_XMLNS = re.compile(r'\s+xmlns(?::\w+)?="[^"]*"')
# The pictures drawn in this process, by what they show (see draw_picture's ``key``).
PICTURES = PictureCache()
COLORS = ("#4c78a8", "#f58518", "#54a24b", "#e45756", "#b279a2", "#72b7b2", "#bab0ac")


def picture_format(path: Path | str) -> PictureFormat:
    """The picture format a file name asks for by its extension; a :class:`SpecError`
    naming the file when the extension is none of .svg, .png, .pdf."""
    suffix = Path(path).suffix.lower().lstrip(".")
    for fmt in PICTURE_FORMATS:
        if suffix == fmt:
            return fmt
    raise SpecError(
        f"picture {str(path)[:200]!r}: unknown format {suffix or '(no extension)'!r}; "
        "name the file .svg, .png or .pdf"
    )


def _rc() -> dict[Any, Any]:
    """The house style: the report's palette, grid lines behind the data, text as text."""
    from cycler import cycler

    return _RC | {"axes.prop_cycle": cycler(color=list(COLORS))}


def draw_picture(
    size_in: tuple[float, float],
    fmt: PictureFormat,
    paint: Callable[[Figure], None],
    *,
    constrained: bool = True,
    key: object = None,
) -> bytes:
    """A new figure of ``size_in`` (width, height in inches), drawn by ``paint`` in the house
    style and saved as ``fmt``: the same bytes for the same drawing on every run.

    ``constrained`` lets matplotlib fit titles, labels and legends; a picture with hundreds of
    texts places its axes itself instead (the layout measures every text, seconds).

    ``key``, when given, is every datum ``paint`` draws from (plain values, dataclasses,
    arrays: see :func:`~clusterforge.report.picture_cache.digest`): the picture is then kept
    in :data:`PICTURES` under it (with ``paint``'s name, the size, format and layout) and a
    later call with an equal key returns it without drawing.
    """
    if key is None:
        return _draw(size_in, fmt, paint, constrained=constrained)
    name = f"{paint.__module__}.{paint.__qualname__}"
    return PICTURES.get_or_draw(
        (name, size_in, fmt, constrained, key),
        lambda: _draw(size_in, fmt, paint, constrained=constrained),
    )


def _draw(
    size_in: tuple[float, float],
    fmt: PictureFormat,
    paint: Callable[[Figure], None],
    *,
    constrained: bool,
) -> bytes:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(_rc()):
        figure = Figure(figsize=size_in, layout="constrained" if constrained else None)
        paint(figure)
        out = io.BytesIO()
        figure.savefig(out, format=fmt, metadata=_metadata(fmt), dpi=PNG_DPI)
    return out.getvalue()


def _metadata(fmt: PictureFormat) -> dict[str, str | None]:
    """File metadata without dates (a date would change the file on every run)."""
    match fmt:
        case "svg":
            return {"Date": None}
        case "pdf":
            return {"CreationDate": None, "ModDate": None}
        case "png":
            return {}
        case _:
            assert_never(fmt)


# The ids matplotlib gives every figure's parts ("figure_1", "axes_1", "line2d_3",
# "matplotlib.axis_1") and its hashed clip paths and markers ("p" or "m" and 10 hex digits);
# the ids a drawing sets itself (its gids: "hall", "rack-r001-01", "series-1") are kept.
_ROOT = re.compile(r"<(?![?!])")
_AUTO_ID = re.compile(
    r'(\bid="|href="#|url\(#)([A-Za-z][A-Za-z0-9.]*_\d+|[mp][0-9a-f]{10})(?=[")])'
)


def svg_fragment(svg: str) -> str:
    """An SVG document as an element to place inside an HTML page: the XML declaration,
    DOCTYPE, metadata and namespace declarations dropped. The HTML parser puts an inline
    SVG element and its ``xlink:href`` attributes in their namespaces itself (HTML Living
    Standard, "Parsing main inforeign"), so the page names no URL it does not load.
    matplotlib's own ids (and the references to them) are prefixed with a hash of the
    picture, so several pictures on one page never share one (see ``_AUTO_ID``)."""
    root = _ROOT.search(svg)  # the first tag that is no declaration, DOCTYPE or comment
    if root is None:
        raise ValueError("not an SVG document: no root element")
    start = root.start()
    body = _METADATA.sub("", svg[start:], count=1)
    head, rest = body.split(">", 1)
    prefix = "f" + hashlib.sha1(svg.encode("utf-8")).hexdigest()[:8] + "-"
    fragment = _XMLNS.sub("", head) + ">" + rest
    return _AUTO_ID.sub(lambda m: m.group(1) + prefix + m.group(2), fragment)
