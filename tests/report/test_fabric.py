"""The fabric diagram (fabric.svg, fabric.drawio, fabric.dot): a box for every switch tier,
a colour per rail, one node group in full and the rest summarised, for every topology."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from clusterforge.design import plan
from clusterforge.report.fabric.diagram import fabric_diagram
from clusterforge.report.fabric.export import fabric_dot, fabric_drawio
from clusterforge.report.fabric.picture import fabric_svg
from clusterforge.spec import load_spec
from tests.conftest import EXAMPLES, make_spec

EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.glob("*.yaml"))
TOPOLOGIES = {  # every topology kind the design sizes, small enough to plan in a second
    "rail-optimized-3-tier": {"num_gpus": 4096, "network": {"topology": "rail-optimized",
                                                            "tiers": 3}},
    "leaf-spine": {"num_gpus": 512, "network": {"topology": "leaf-spine"}},
    "fat-tree": {"num_gpus": 1024, "network": {"topology": "fat-tree", "tiers": 3}},
    "rail-only": {"num_gpus": 512, "network": {"topology": "rail-only"}},
    "dragonfly": {"num_gpus": 2048, "network": {"topology": "dragonfly"}},
    "single-switch": {"num_gpus": 64, "network": {"topology": "single-switch"}},
}  # fmt: skip


def _design(case: str):
    if case.endswith(".yaml"):
        return plan(load_spec(EXAMPLES / case))
    return plan(make_spec(**TOPOLOGIES[case]))


def _tiers(design) -> set[str]:
    c = design.fabric.connectivity
    tiers = {"router" if c.kind == "dragonfly" else "leaf"} if c.num_leaves else set()
    return tiers | ({"spine"} if c.num_spines else set()) | ({"core"} if c.num_cores else set())


def _stroke(svg: str, gid: str) -> str:
    block = re.search(rf'<g id="{re.escape(gid)}">(.*?)</g>', svg, flags=re.S)
    assert block is not None, gid
    colour = re.search(r"stroke: (#[0-9a-f]{6})", block.group(1))
    assert colour is not None, gid
    return colour.group(1)


@pytest.mark.parametrize("case", EXAMPLE_NAMES + sorted(TOPOLOGIES))
def test_every_switch_tier_has_a_box_and_every_rail_a_colour(case):
    design = _design(case)
    svg = fabric_svg(design)
    for tier in _tiers(design):
        assert re.search(rf'<g id="box-{tier}-\d+">', svg), f"{case}: no {tier} drawn"
    c = design.fabric.connectivity
    if c.rail_optimized or c.kind == "rail-only":
        colours = {}
        for gid in re.findall(r'<g id="(link-node-[^"]+-rail-\d+)">', svg):
            rail = int(gid.rsplit("-", 1)[1])
            colours.setdefault(rail, set()).add(_stroke(svg, gid))
        assert sorted(colours) == list(range(1, c.nics_per_node + 1)), case
        assert all(len(v) == 1 for v in colours.values())  # one colour per rail...
        assert len({next(iter(v)) for v in colours.values()}) == c.nics_per_node  # ...distinct


def test_a_large_fabric_draws_one_su_and_counts_the_rest():
    design = _design("colossus-100k-h100.yaml")
    diagram = fabric_diagram(design)
    labels = " ".join(b.label for b in diagram.boxes)
    assert "x 195 more SUs" in labels
    leaves = [b for b in diagram.boxes if b.tier == "leaf"]
    assert len(leaves) == 8 and {b.rail for b in leaves} == set(range(8))
    assert "oversubscription" not in labels  # told per tier, in the tier text
    text = " ".join(t for _, t in diagram.tier_text)
    assert "1,568 x sn5600" in text and "1:1" in text and "spares: 250 nodes" in text
    assert {b.id for b in diagram.boxes} >= {"fabric-storage", "fabric-in-band",
                                              "fabric-out-of-band"}  # fmt: skip


def test_an_nvl72_rack_is_one_nvlink_domain_around_its_trays():
    diagram = fabric_diagram(_design("gb200-nvl72-pod.yaml"))
    domain = diagram.box("nvlink-domain-1")
    assert "72 GPUs (18 nodes)" in domain.label
    trays = [b for b in diagram.boxes if b.kind == "node"]
    inside = [b for b in trays if domain.x <= b.x and b.x + b.w <= domain.x + domain.w]
    assert len(inside) == min(18, len(trays))


@pytest.mark.parametrize("case", ["colo-512-h100.yaml", "dragonfly", "lab-8-gpu.yaml"])
def test_drawio_file_is_an_mxgraph_model(case):
    design = _design(case)
    root = ET.fromstring(fabric_drawio(design))
    assert root.tag == "mxfile"
    model = root.find("./diagram/mxGraphModel/root")
    assert model is not None
    cells = model.findall("mxCell")
    assert [c.get("id") for c in cells[:2]] == ["0", "1"] and cells[1].get("parent") == "0"
    vertices = {c.get("id") for c in cells if c.get("vertex") == "1"}
    edges = [c for c in cells if c.get("edge") == "1"]
    assert len({c.get("id") for c in cells}) == len(cells)  # ids unique
    for cell in cells[2:]:
        assert cell.get("parent") == "1"
        geometry = cell.find("mxGeometry")
        assert geometry is not None and geometry.get("as") == "geometry"
    for edge in edges:
        assert edge.get("source") in vertices and edge.get("target") in vertices
    boxes = fabric_diagram(design).boxes
    assert vertices >= {b.id for b in boxes}


@pytest.mark.parametrize("case", ["colo-512-h100.yaml", "gb200-nvl72-pod.yaml", "dragonfly",
                                  "rail-only", "lab-8-gpu.yaml"])  # fmt: skip
def test_dot_file_is_laid_out_by_graphviz(case):
    dot = shutil.which("dot")
    if dot is None:
        pytest.skip("Graphviz is not installed (Debian package 'graphviz')")
    text = fabric_dot(_design(case))
    result = subprocess.run([dot, "-Tsvg"], input=text, capture_output=True, text=True,
                            timeout=60, check=False)  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # no warnings either
    drawn = {html.unescape(t) for t in re.findall(r"<title>([^<]+)</title>", result.stdout)}
    assert {b.id for b in fabric_diagram(_design(case)).boxes
            if b.kind not in ("group", "domain")} <= drawn  # fmt: skip
