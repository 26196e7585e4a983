"""The generated NetBox CSVs, imported into a real NetBox (v4.6.8) through its bulk import
forms, file by file in their numbered order, then read back over the REST API.

Marked ``system`` and ``slow``: it starts PostgreSQL, Redis and gunicorn on loopback (about
20 s once NetBox's virtualenv exists; ``tests/generate/netbox_venv.sh`` builds it) and stops
them when the module ends.  Skipped, with the reason, where the vendored NetBox or a
prerequisite is missing (see netbox_server.missing_prerequisites).

Zero rejected rows: each file is one transaction, so a single bad row fails the test with
NetBox's message; and every CSV row must be an object in NetBox afterwards.  The counts
read back must also be the design's: racks, devices, power feeds, compute-fabric cables,
every interface and every feed cabled.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from clusterforge.design import Design, plan
from clusterforge.generate import render
from clusterforge.generate.inventory.devices import bastion
from clusterforge.generate.inventory.files import NETBOX_MODELS
from clusterforge.spec import load_spec
from tests.generate.netbox_server import (
    Api,
    ImportForm,
    find_shared,
    free_port,
    missing_prerequisites,
    run_script,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SPECS_DIR = Path(__file__).resolve().parent / "specs"
# Small enough for CI: NetBox creates about 3 objects a second here (cables ~0.3 s each). The
# one-node lab has no compute fabric; the 48-GPU leaf-spine lab (6 racks, two leaves, spines,
# storage, in-band and out-of-band fabrics, 222 cables) loads every kind of cable and feed.
SPECS = [EXAMPLES / "lab-8-gpu.yaml", SPECS_DIR / "lab-leaf-spine.yaml"]

_MISSING = missing_prerequisites()
pytestmark = [
    pytest.mark.system,
    pytest.mark.slow,
    pytest.mark.skipif(_MISSING is not None, reason=f"NetBox cannot run here: {_MISSING}"),
]


@pytest.fixture(scope="module")
def netbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One NetBox for the module, stopped (and its PostgreSQL cluster deleted) afterwards."""
    shared = find_shared()
    assert shared is not None
    work = tmp_path_factory.mktemp("netbox")
    ports = [str(free_port()) for _ in range(3)]
    try:
        run_script(shared, "netbox-up.sh", str(work), *ports)
        env = dict(line.split("=", 1) for line in (work / "netbox.env").read_text().splitlines())
        yield {**env, "WORKDIR": str(work)}
    finally:
        run_script(shared, "netbox-down.sh", str(work), timeout_s=120)


@pytest.fixture
def empty_netbox(netbox: dict[str, str]) -> dict[str, str]:
    shared = find_shared()
    assert shared is not None
    run_script(shared, "netbox-reset.sh", netbox["WORKDIR"], timeout_s=120)
    return netbox


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def _import_all(design: Design, form: ImportForm) -> dict[str, int]:
    """Import every inventory file in order; rows per NetBox model."""
    rows_per_model: dict[str, int] = {}
    for f in render(design, ["inventory"]):
        model = NETBOX_MODELS[Path(f.path).name]
        text = f.content
        form.import_csv(model, text)
        rows_per_model[model] = rows_per_model.get(model, 0) + len(_rows(text))
    return rows_per_model


def _design_counts(design: Design) -> dict[str, int]:
    fabric = design.fabric
    return {
        "dcim/racks": len(design.racks),
        # racked devices, and the out-of-band network's VPN bastion (unracked, like a PDU)
        "dcim/devices": sum(len(r.devices) for r in design.racks) + (bastion(design) is not None),
        "dcim/power-feeds": sum(
            r.circuit.num_feeds * r.circuit.circuits_per_feed for r in design.racks
        ),
        "compute cables": fabric.num_node_links
        + fabric.num_leaf_spine_links
        + fabric.num_spine_core_links,
    }


@pytest.mark.parametrize("spec", SPECS, ids=lambda p: p.stem)
def test_inventory_imports_into_netbox(spec: Path, empty_netbox: dict[str, str]) -> None:
    design = plan(load_spec(spec))
    form = ImportForm(
        empty_netbox["NETBOX_URL"], empty_netbox["NETBOX_USERNAME"], empty_netbox["NETBOX_PASSWORD"]
    )
    imported = _import_all(design, form)  # raises with NetBox's reasons on any rejected row

    api = Api(empty_netbox["NETBOX_URL"], empty_netbox["NETBOX_TOKEN"])
    in_netbox = {model: api.count(model) for model in imported}
    assert in_netbox == imported, "every CSV row is an object in NetBox"

    want = _design_counts(design)
    for model in ("dcim/racks", "dcim/devices", "dcim/power-feeds"):
        assert in_netbox[model] == want[model], model
    cables: list[dict[str, Any]] = api.all("dcim/cables", "id,description")
    compute = [c for c in cables if c["description"].startswith("compute ")]
    assert len(compute) == want["compute cables"]
    assert api.count("dcim/interfaces", cabled="false") == 0, "an interface has no cable"
    assert api.count("dcim/power-feeds", cabled="true") == want["dcim/power-feeds"]
    assert api.count("dcim/power-ports", cabled="false") == 0, "a PSU or PDU inlet is unplugged"
    assert _cable_ends(api) == _csv_cable_ends(design), "every cable's two ends read back"


def _ends(terminations: list[dict[str, Any]]) -> tuple[str, str]:
    """(device, port) of a cable side's one termination."""
    (end,) = terminations
    thing = end["object"]
    return thing["device"]["name"], thing["name"]


def _cable_ends(api: Api) -> dict[str, tuple[tuple[str, str], tuple[str, str]]]:
    """Each device-to-device cable in NetBox (data links and power cords; not the feeds) by
    label: its A end and its B end."""
    cables = api.all("dcim/cables", "id,label,a_terminations,b_terminations")
    return {
        c["label"]: (_ends(c["a_terminations"]), _ends(c["b_terminations"]))
        for c in cables
        if c["a_terminations"] and c["a_terminations"][0]["object_type"] != "dcim.powerfeed"
    }


def _csv_cable_ends(design: Design) -> dict[str, tuple[tuple[str, str], tuple[str, str]]]:
    """Each cable of the generated device-to-device cable file by label: its two ends."""
    (cables,) = [f for f in render(design, ["inventory"]) if Path(f.path).name == "13-cables.csv"]
    return {
        row["label"]: (
            (row["side_a_device"], row["side_a_name"]),
            (row["side_b_device"], row["side_b_name"]),
        )
        for row in _rows(cables.content)
    }
