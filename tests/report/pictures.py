"""Reading the pictures back: SVG groups by id, their path points and texts; PNG and PDF
headers; counting the pictures drawn (not found in the picture cache)."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from clusterforge.report import figure_file
from clusterforge.report.figure_file import PICTURES

NS = {"svg": "http://www.w3.org/2000/svg"}
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def svg_root(svg: bytes | str) -> ET.Element:
    return ET.fromstring(svg.encode() if isinstance(svg, str) else svg)


def group(root: ET.Element, gid: str) -> ET.Element:
    found = root.find(f".//svg:g[@id='{gid}']", NS)
    assert found is not None, f"no group {gid!r} in the SVG"
    return found


def ids(root: ET.Element, prefix: str) -> list[str]:
    """The ids of the groups whose id starts with ``prefix``, in document order."""
    return [g.get("id", "") for g in root.iter(f"{{{NS['svg']}}}g")
            if g.get("id", "").startswith(prefix)]  # fmt: skip


def points(root: ET.Element, gid: str) -> list[tuple[float, float]]:
    """The (x, y) vertices of the first path in group ``gid`` (SVG y grows downwards)."""
    path = group(root, gid).find("svg:path", NS)
    assert path is not None
    values = [float(v) for v in _NUMBER.findall(path.get("d", ""))]
    return list(zip(values[::2], values[1::2], strict=True))


def texts(root: ET.Element) -> list[str]:
    """Every text of the picture (matplotlib writes one element per line)."""
    return [t.text or "" for t in root.iter(f"{{{NS['svg']}}}text")]


def png_size(data: bytes) -> tuple[int, int]:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "PNG"
        return image.size


def count_draws(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Empty the picture cache and count every picture drawn from now on, by its painter's
    function (the first part of its qualified name)."""
    drawn: Counter[str] = Counter()
    real = figure_file._draw

    def counting(size_in, fmt, paint, *, constrained):  # type: ignore[no-untyped-def]
        drawn[paint.__qualname__.split(".")[0]] += 1
        return real(size_in, fmt, paint, constrained=constrained)

    PICTURES.clear()
    monkeypatch.setattr(figure_file, "_draw", counting)
    return drawn
