"""The catalog: every row has a source; references resolve; unknown ids suggest close matches."""

from __future__ import annotations

import pytest

from clusterforge.errors import CatalogError


def test_every_row_has_a_source(catalog):
    for table in (
        catalog.gpus,
        catalog.nodes,
        catalog.cpus,
        catalog.nics,
        catalog.switches,
        catalog.media,
        catalog.storage,
        catalog.facility,
        catalog.models,
    ):
        for row in table:
            assert row.source.strip(), row.id


def test_issue_required_parts_are_present(catalog):
    for gpu in ("a100-80gb", "h100-sxm", "h200-sxm", "b200", "gb200", "mi300x", "rtx-4090"):
        assert gpu in catalog.gpus
    for switch in ("qm9700", "sn5600", "q3400", "tomahawk5-51t"):
        assert switch in catalog.switches


def test_published_figures(catalog):
    h100 = catalog.gpus["h100-sxm"]
    assert (h100.bf16_dense_tflops, h100.tdp_w, h100.hbm_gbyte) == (989, 700, 80)
    dgx = catalog.nodes["dgx-h100"]
    assert (dgx.u_height, dgx.max_kw, dgx.num_psus, dgx.psus_required) == (8, 10.2, 6, 4)
    assert catalog.switches["qm9700"].radix_at(400) == 64
    assert catalog.switches["sn5600"].radix_at(800) == 64


def test_unknown_id_suggests(catalog):
    with pytest.raises(CatalogError, match="did you mean 'dgx-h100'"):
        catalog.nodes["dgx-h10"]
