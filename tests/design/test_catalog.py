"""The catalog: every row has a source; references resolve; unknown ids suggest close matches."""

from __future__ import annotations

import pytest

from clusterforge.design import plan
from clusterforge.errors import CatalogError, SpecError
from clusterforge.spec import parse_spec
from tests.conftest import make_spec


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


def test_every_model_has_a_tagged_schedule_and_a_tokenizer(catalog):
    for model in catalog.models:
        schedule = model.lr_schedule
        assert schedule.source[:3] in ("[V]", "[S]", "[D]", "[U]"), model.id
        assert 0 < schedule.min_lr < schedule.peak_lr, model.id
        assert model.tokenizer, model.id


def test_llama3_architecture_is_the_papers(catalog):
    """Llama 3 Herd paper §3.2, Table 3 and §3.4.1."""
    model = catalog.models["llama3.1-405b"]
    assert (model.normalization, model.linear_bias, model.gated_mlp) == ("rmsnorm", False, True)
    assert (model.rotary_base, model.vocab_size, model.tied_embeddings) == (500_000, 128_256, False)
    schedule = model.lr_schedule
    assert (schedule.peak_lr, schedule.min_lr, schedule.warmup_steps) == (8e-5, 8e-7, 8000)
    assert schedule.decay_style == "cosine"


def test_parts_users_buy_are_present(catalog):
    for gpu in (
        "a100-40gb",
        "a100-80gb",
        "h100-sxm",
        "h200-sxm",
        "b200",
        "b300",
        "gb200",
        "gb300",
        "mi300x",
        "rtx-4090",
    ):
        assert gpu in catalog.gpus
    for node in ("dgx-a100-40gb", "dgx-b300", "gb300-nvl72-tray"):
        assert node in catalog.nodes
    for switch in ("qm9700", "qm8700", "sb7800", "sn2700", "sn5600", "q3400", "tomahawk5-51t"):
        assert switch in catalog.switches
    for nic in ("cx8-800g", "cx6-hdr", "cx6-hdr100", "cx5-edr"):
        assert nic in catalog.nics


def test_every_gpu_has_a_default_node_carrying_it_and_dated_rent(catalog):
    for gpu in catalog.gpus:
        assert catalog.nodes[gpu.default_node].gpu == gpu.id
        assert gpu.rent_on_demand_usd_per_gpu_hour >= gpu.rent_reserved_usd_per_gpu_hour > 0
        assert len(gpu.rent_price_date) == 7, gpu.id  # YYYY-MM


def test_hdr100_and_edr_fabrics_have_switch_ports(catalog):
    assert catalog.switches["qm8700"].radix_at(200) == 40
    assert catalog.switches["qm8700"].radix_at(100) == 80  # HDR100 on splitter cables
    assert catalog.switches["sb7800"].radix_at(100) == 36


@pytest.mark.parametrize(
    ("fields", "node"),
    [
        ({"gpu": "a100-40gb"}, "dgx-a100-40gb"),
        ({"gpu": "b300"}, "dgx-b300"),
        ({"gpu": "gb300", "num_gpus": 72}, "gb300-nvl72-tray"),
    ],
)
def test_new_parts_plan(fields, node):
    data = {"num_gpus": 64, **fields, "facility": {"max_rack_kw": 150}}
    design = plan(parse_spec(data))
    assert design.compute.node.id == node


def test_a100_cluster_on_hdr_switches():
    spec = make_spec(num_gpus=64, node="dgx-a100-40gb", network={"switch": "qm8700"})
    design = plan(spec)
    assert design.fabric.switch.id == "qm8700"
    assert design.fabric.nic_gbit_per_s == 200


@pytest.mark.parametrize(
    ("network", "expected"),
    [
        ({"nic_gbit_per_s": 800}, ["network.nic_gbit_per_s", "800", "cx7-400g", "400"]),
        ({"nics_per_node": 16}, ["network.nics_per_node", "16", "8 compute NIC ports"]),
    ],
)
def test_network_fields_beyond_the_nodes_nic_are_refused(network, expected):
    with pytest.raises(SpecError) as info:
        make_spec(node="dgx-h100", network=network)
    for part in expected:
        assert part in str(info.value)


def test_infiniband_on_an_ethernet_only_nic_is_refused():
    with pytest.raises(SpecError, match=r"network.fabric: infiniband.*bf3-b3140h"):
        make_spec(node="hgx-h100-4u-liquid", network={"fabric": "infiniband"})


def test_a_slower_port_speed_than_the_nic_is_accepted():
    spec = make_spec(node="dgx-h100", network={"nic_gbit_per_s": 200})  # NDR200
    assert spec.network.nic_gbit_per_s == 200


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


def test_800g_nics_get_an_xdr_switch_by_default():
    design = plan(parse_spec({"num_gpus": 64, "gpu": "b300"}))
    assert design.fabric.nic_gbit_per_s == 800
    assert design.fabric.switch.id == "q3400"  # Quantum-X800; the NDR default has no 800G


def test_host_link_is_the_gpus_own_generation(catalog):
    each_way = {"pcie4": 32.0, "pcie5": 64.0, "nvlink-c2c": 450.0}
    for gpu in catalog.gpus:
        assert gpu.host_link_gbyte_per_s == each_way[gpu.host_link], gpu.id
        assert gpu.host_link_source.strip(), gpu.id
        assert (gpu.host_link == "nvlink-c2c") == (gpu.form_factor == "superchip"), gpu.id
    assert catalog.gpus["a100-80gb"].host_link == "pcie4"
    assert catalog.gpus["h100-sxm"].host_link == "pcie5"
