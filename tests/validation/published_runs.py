"""Load the published tables and predict each row with the performance model.

Per-table assumptions (the same for every row; see each TOML header): the software stack,
the recomputation mode, and that the authors tuned micro-batch size and interleaving: the
prediction is the best predicted plan among micro-batch {1, 2, 4, 8} and the interleaving
degrees in common use {1, 2, 3, 4, 6, 8} (where they divide the layers of a stage) that
fits in memory. No constant is set per row.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clusterforge.catalog import ModelArch, load_catalog
from clusterforge.design import plan as design_cluster
from clusterforge.errors import PlanError
from clusterforge.perf.comm import CommModel
from clusterforge.perf.compute import Stack
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.predict import design_comm
from clusterforge.perf.step import Prediction, predict_step
from clusterforge.spec import parse_spec

HERE = Path(__file__).parent
TABLES = {
    "narayanan2021": (HERE / "narayanan2021_table1.toml", Stack.megatron_2021()),
    "megatron_core_h100": (HERE / "megatron_core_h100.toml", Stack.megatron_core()),
}
MICRO_BATCHES = (1, 2, 4, 8)
VIRTUAL_STAGES = (1, 2, 3, 4, 6, 8)


@dataclass(frozen=True)
class Row:
    table: str
    name: str
    arch: ModelArch
    base: ParallelPlan
    published_tflops: float
    metric: str


def load_rows(table: str) -> list[Row]:
    path, _ = TABLES[table]
    raw = tomllib.loads(path.read_text())
    meta = raw["table"]
    rows = []
    for r in raw["row"]:
        arch = ModelArch(
            id=f"{table}-{r['name']}",
            num_layers=r["num_layers"],
            hidden_size=r["hidden_size"],
            num_heads=r["num_heads"],
            vocab_size=meta["vocab_size"],
            seq_length=meta["seq_length"],
        )
        plan = ParallelPlan(
            tp=r["tp"],
            pp=r["pp"],
            dp=r["num_gpus"] // (r["tp"] * r["pp"]),
            global_batch=r["global_batch"],
            seq_length=meta["seq_length"],
            sequence_parallel=table != "narayanan2021",
            recompute=meta["recompute"],
            zero_stage=0 if table == "narayanan2021" else 1,
            precision=meta["precision"],
        )
        rows.append(Row(table, r["name"], arch, plan, r["tflops_per_gpu"], meta["metric"]))
    return rows


def table_node(table: str) -> str:
    path, _ = TABLES[table]
    return str(tomllib.loads(path.read_text())["table"]["node"])


def published_cluster(row: Row) -> Any:
    """The row's cluster as a clusterforge design: its DGX nodes on a non-blocking
    rail-optimised InfiniBand fabric (DGX SuperPOD reference architecture; Selene for the
    A100 table, EOS-class for the H100 one)."""
    spec = parse_spec(
        {
            "num_gpus": row.base.num_gpus,
            "node": table_node(row.table),
            "network": {"fabric": "infiniband", "topology": "rail-optimized"},
            "workload": {
                "tensor_parallel": row.base.tp,
                "pipeline_parallel": row.base.pp,
                "global_batch": row.base.global_batch,
            },
        },
        source=f"{row.table} {row.name}",
    )
    return design_cluster(spec, break_even=False)


def predict_published(row: Row) -> Prediction:
    """Predict a row on its cluster with the network simulator (the production path)."""
    return predict_row(row, design_comm(published_cluster(row)))


def candidates(row: Row) -> list[ParallelPlan]:
    layers_per_stage = row.arch.num_layers // row.base.pp
    vpps = [v for v in VIRTUAL_STAGES if layers_per_stage % v == 0] if row.base.pp > 1 else [1]
    return [row.base.with_(micro_batch=mb, vpp=v) for mb in MICRO_BATCHES for v in vpps]


def predict_row(row: Row, comm: CommModel) -> Prediction:
    """Best predicted plan that fits (the published runs were tuned by their authors)."""
    catalog = load_catalog()
    node = catalog.nodes[table_node(row.table)]
    gpu = catalog.gpus[node.gpu]
    stack = TABLES[row.table][1]
    best: Prediction | None = None
    for plan in candidates(row):
        try:
            pred = predict_step(row.arch, plan, gpu, comm, node.nvlink_domain_gpus, stack)
        except PlanError:
            continue
        if pred.fits and (best is None or pred.step_time_s < best.step_time_s):
            best = pred
    if best is None:
        raise PlanError(f"no candidate plan fits for {row.table} {row.name}")
    return best


def predicted_tflops(row: Row, pred: Prediction) -> float:
    return float(getattr(pred, row.metric))
