"""Published training runs as validation data, and their predictions on designed clusters.

Every TOML file here holds runs of one source. Each run is in one of three sets, written
next to it (``set``, see :mod:`validation.sets`): ``calibration`` (the constants of
``clusterforge/perf/data/efficiency.toml`` were chosen while looking at these),
``development`` (errors may guide mechanisms) or ``heldout`` (frozen, locked, scored only as
a whole). Each run has a class (:func:`clusterforge.perf.uncertainty.run_class`, from its
plan and model); a row may state it (``class``), and the tests check that it agrees.

Two layouts are read: *tables* (``[table]`` + ``[[row]]`` with model dimensions, as the two
calibration tables transcribe their papers) and *runs* (``[defaults]`` + ``[[row]]``, one
row per run with its model, cluster, stack and plan), each predicted on a design of its
cluster (``parse_spec`` + ``design.plan``, collectives simulated on that fabric). What a
source does not publish is chosen alike for every row: among the micro-batches, interleaving
degrees (one when the source gives it) and recomputation modes the row allows, the fastest
predicted plan that fits (the authors tuned); uneven interleaving: ``JobLayout.split_layers``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Literal, get_args

from clusterforge.catalog import ModelArch, load_catalog
from clusterforge.design import Design
from clusterforge.design import plan as design_cluster
from clusterforge.errors import PlanError
from clusterforge.job import JobLayout
from clusterforge.perf.comm import CommModel
from clusterforge.perf.optimizer_state import optimizer_state_error
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.power_limit import power_limited
from clusterforge.perf.predict import design_comm, design_host
from clusterforge.perf.search import least_recompute
from clusterforge.perf.stack import Stack, stack_named
from clusterforge.perf.stack_options import MoeDispatcher, RematName
from clusterforge.perf.step import Prediction, predict_step
from clusterforge.perf.uncertainty import run_class
from clusterforge.spec import parse_spec
from validation.sets import Subset, data_files, file_rows, kind_of

HERE = Path(__file__).parent
MICRO_BATCHES = (1, 2, 4, 8)
VIRTUAL_STAGES = (1, 2, 3, 4, 6, 8)
RAIL_IB = {"fabric": "infiniband", "topology": "rail-optimized"}
TABLE_KEYS = ("set", "source", "stack", "node", "metric", "precision", "sequence_parallel", "class")

Metric = Literal["tokens_per_s_per_gpu", "model_tflops_per_gpu", "hardware_tflops_per_gpu"]


@dataclass(frozen=True)
class Run:
    """One published run: what ran, where, and what it measured."""

    file: str
    name: str
    subset: Subset
    source: str
    arch: ModelArch
    base: ParallelPlan
    micro_batches: tuple[int, ...]
    virtual_stages: tuple[int, ...]
    recompute: tuple[str, ...]
    stack: Stack
    node: str
    network: tuple[tuple[str, Any], ...]
    facility: tuple[tuple[str, Any], ...]
    metric: Metric
    published: float
    sweep: str | None = None  # plans of one model on one cluster, ranked against each other
    stated_class: str | None = None  # the class the row states (``class``), if any
    gpu: tuple[tuple[str, Any], ...] = ()  # catalog GPU fields the run's GPU differs in
    gpu_power_limit_w: float | None = None  # board power limit, W (nvidia-smi -pl)

    @property
    def base_class(self) -> str:
        """The run's class before any prediction: its plan with the smallest micro-batch it
        allows (:func:`clusterforge.perf.uncertainty.run_class`)."""
        return run_class(
            self.arch, self.base.with_(micro_batch=min(self.micro_batches)), self.stack
        )


# Row keys that set the Stack field of the same name: the run's own configuration.
STACK_KEYS = (
    "fp8_scaling",
    "dropout",
    "cp_overlap",
    "attention",
    "flash_unpad",  # the model unpads Q, K, V around FlashAttention-2 (LLM Foundry)
    "fsdp_reshard_after_forward",  # FSDP2 fully_shard(reshard_after_forward=) of the run
    "fsdp_backward_prefetch",  # FSDP1 BACKWARD_PRE / BACKWARD_POST of the run
    "train_metric_passes",  # cross-entropies over the logits for training metrics
    "optimizer",  # Composer's DecoupledAdamW: per tensor, behind a blocking .item()
    "cross_entropy",
    "liger_kernels",  # Liger-Kernel's Llama patches (memory: perf/liger_memory.py)
    "tp_overlap",
    "grad_reduce_bytes",  # the run's gradient reduction dtype (2 = BF16)
    "distribute_checkpoints",  # Megatron --distribute-checkpointed-activations
    "scan_carry_copies",  # XLA's pipelined all-gather without loop double buffering
    "layer_input_dropout",  # praxis' input dropout on every repeated layer
    "xla_pipelined_all_gather",  # XLA's collective pipeliner on the layer scan's all-gathers
    "unrolled_all_reduce_combine_bytes",  # XLA's all-reduce combiner over unrolled layers
    "fused_grad_accumulation",  # Megatron gradient_accumulation_fusion of the run's recipe
)


def _stack(row: dict[str, Any]) -> Stack:
    """The row's stack, with the run's own settings where its configuration states them."""
    stack = stack_named(row["stack"])
    stack = replace(stack, **{key: row[key] for key in STACK_KEYS if key in row})
    for key in ("compile", "torch_compile"):
        if key in row:
            stack = replace(stack, fused_elementwise=row[key])
    if "cuda_graph_modules" in row:  # Megatron --cuda-graph-modules of the run's recipe
        stack = replace(stack, cuda_graph_modules=tuple(row["cuda_graph_modules"]))
    stack = _moe_stack(row, stack)
    if "recompute_modules" in row:  # Megatron --recompute-modules of the run's recipe
        stack = replace(stack, recompute_modules=tuple(row["recompute_modules"]))
    if "remat_saved" in row:  # the tensors a MaxText remat_policy keeps (JAX checkpoint names)
        unknown = set(row["remat_saved"]) - set(get_args(RematName))
        if unknown:
            raise ValueError(
                f"{row.get('name', '?')}: remat_saved names {sorted(unknown)} unknown; use "
                f"MaxText's checkpoint names {list(get_args(RematName))}"
            )
        stack = replace(stack, remat_saved=tuple(row["remat_saved"]))
    return stack


def _moe_stack(row: dict[str, Any], stack: Stack) -> Stack:
    """The row's MoE dispatcher settings (Megatron-Core's names) applied to ``stack``."""
    if "moe_dispatcher" in row:  # Megatron moe_token_dispatcher_type ("flex": DeepEP/HybridEP)
        if row["moe_dispatcher"] not in get_args(MoeDispatcher):
            raise PlanError(
                f"row {row.get('name', '?')}: moe_dispatcher = {row['moe_dispatcher']!r}: use one of "
                f"{', '.join(get_args(MoeDispatcher))} (Megatron's moe_token_dispatcher_type)"
            )
        stack = replace(stack, moe_dispatcher=row["moe_dispatcher"])
    if "moe_flex_sms" in row:  # Megatron moe_flex_dispatcher_num_sms
        stack = replace(stack, moe_flex_sms=row["moe_flex_sms"])
    if "moe_a2a_overlap" in row:  # Megatron overlap_moe_expert_parallel_comm
        stack = replace(stack, moe_a2a_overlap=row["moe_a2a_overlap"])
    if "moe_drop_and_pad" in row:  # Megatron moe_pad_expert_input_to_capacity (token drop)
        if not isinstance(row["moe_drop_and_pad"], bool):
            raise PlanError(
                f"row {row.get('name', '?')}: moe_drop_and_pad = {row['moe_drop_and_pad']!r}: "
                "use true (moe_pad_expert_input_to_capacity with a capacity factor) or false"
            )
        stack = replace(stack, moe_drop_and_pad=row["moe_drop_and_pad"])
    return stack


def _arch(row: dict[str, Any]) -> ModelArch:
    if "arch" in row:
        return ModelArch(**row["arch"])
    return load_catalog().models[row["model"]]


def _expert_parallel(row: dict[str, Any], arch: ModelArch) -> int:
    """The row's expert-parallel degree (``ep``, default 1), checked against its model.

    The performance model splits each expert over the TP ranks (expert tensor parallelism
    equal to TP, Megatron-LM's default ``expert_tensor_parallel_size = None``) and its EP
    groups are blocks of DP x CP ranks; a row that states another ``etp`` is refused.
    """
    ep = row.get("ep", 1)
    if isinstance(ep, bool) or not isinstance(ep, int):
        raise PlanError(f"ep = {ep}: the expert-parallel degree is a whole number (1 = none)")
    if ep < 1:
        raise PlanError(f"ep = {ep}: use at least 1 (1 = no expert parallelism)")
    if ep > 1 and arch.num_experts % ep:
        kind = "a dense model" if arch.num_experts == 1 else f"{arch.num_experts} experts"
        raise PlanError(
            f"ep = {ep} does not divide the {kind} of {arch.id}: expert parallelism needs a "
            "MoE model whose expert count it divides"
        )
    etp = row.get("etp", row["tp"])
    if etp != row["tp"]:
        raise PlanError(
            f"etp = {etp} with tp = {row['tp']}: the performance model splits experts over "
            "the TP ranks (expert tensor parallelism = TP); state etp = tp or leave it out"
        )
    return ep


def _run(file: str, row: dict[str, Any]) -> Run:
    where = f"validation/{file}, row {row.get('name', '?')}"
    arch = _arch(row)
    try:
        ep = _expert_parallel(row, arch)
        job = JobLayout.for_gpus(row["num_gpus"], tp=row["tp"], pp=row["pp"], cp=row["cp"], ep=ep)
    except PlanError as err:
        raise PlanError(f"{where}: {err}") from err
    state = row.get("optimizer_state", "fp32")  # the recipe's optimizer dtype / remainders
    if error := optimizer_state_error(state, row.get("precision", "bf16"), row["stack"]):
        raise PlanError(f"{where}: {error}")
    base = ParallelPlan(
        job,
        global_batch=row["global_batch"],
        seq_length=row["seq_length"],
        sequence_parallel=row["tp"] > 1 and row.get("sequence_parallel", True),
        recompute=row["recompute"][0],
        zero_stage=row["zero_stage"],
        precision=row.get("precision", "bf16"),
        shard_size=row.get("shard_size"),
        offload_layers=row.get("offload_layers", 0),
        offload_modules=tuple(row.get("offload_modules", ())),  # Megatron-Core --offload-modules
        optimizer_offload=row.get("optimizer_offload", False),  # DeepSpeed offload_optimizer cpu
        optimizer_state=state,
    )
    return Run(
        file=file,
        name=row["name"],
        subset=row["set"],
        source=row["source"],
        arch=arch,
        base=base,
        micro_batches=tuple(row.get("micro_batch", MICRO_BATCHES)),
        virtual_stages=tuple(row.get("vpp", VIRTUAL_STAGES)),
        recompute=tuple(row["recompute"]),
        stack=_stack(row),
        node=row["node"],
        network=tuple(sorted(row["network"].items())),
        facility=tuple(sorted(row.get("facility", {}).items())),
        metric=row["metric"],
        published=float(row["published"]),
        sweep=row.get("sweep"),
        stated_class=row.get("class"),
        gpu=tuple(sorted(row.get("gpu", {}).items())),
        gpu_power_limit_w=row.get("gpu_power_limit_w"),
    )


def _table_rows(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """Rows of a transcribed paper table in the run layout."""
    meta = raw["table"]
    rows = []
    for r in raw["row"]:
        arch = {
            "id": f"{meta['name']}-{r['name']}",
            "num_layers": r["num_layers"],
            "hidden_size": r["hidden_size"],
            "num_heads": r["num_heads"],
            "vocab_size": meta["vocab_size"],
            "seq_length": meta["seq_length"],
            "position_embedding": meta.get("position_embedding", "rope"),
        }
        rows.append(
            {
                **{k: meta[k] for k in TABLE_KEYS if k in meta},
                "name": f"{meta['name']}-{r['name']}",
                "arch": arch,
                "num_gpus": r["num_gpus"],
                "tp": r["tp"],
                "pp": r["pp"],
                "cp": 1,
                "global_batch": r["global_batch"],
                "seq_length": meta["seq_length"],
                "zero_stage": meta["zero_stage"],
                "recompute": [meta["recompute"]],
                "network": RAIL_IB,
                "published": r["tflops_per_gpu"],
            }
        )
    return rows


def run_rows(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The training-run rows of one parsed file, in the run layout (defaults merged)."""
    if "table" in raw:
        return _table_rows(raw)
    # Only training runs name a throughput metric; other rows here are collective
    # benchmarks (network simulator) or goodput records.
    return [r for r in file_rows(raw) if kind_of(r) == "run"]


@cache
def load_runs() -> tuple[Run, ...]:
    """Every training run of the TOML files in this folder (all three sets)."""
    runs = []
    for path in data_files():
        rows = run_rows(tomllib.loads(path.read_text()))
        runs += [_run(path.name, row) for row in rows]
    return tuple(runs)


_DESIGNS: dict[tuple[Any, ...], Design] = {}


def run_design(run: Run) -> Design:
    """The run's cluster as a clusterforge design (built once per cluster and layout)."""
    key = (run.node, run.base.layout.num_gpus, run.network, run.facility, run.arch.id, run.base)
    if key not in _DESIGNS:
        job = run.base.layout
        workload = {
            "model": run.arch.model_dump(),
            "tensor_parallel": job.tp,
            "pipeline_parallel": job.pp,
            "context_parallel": job.cp,
            "expert_parallel": job.ep,
            "global_batch": run.base.global_batch,
            "seq_length": run.base.seq_length,
        }
        spec = parse_spec(
            {
                "num_gpus": run.base.layout.num_gpus,
                "node": run.node,
                "network": dict(run.network),
                "facility": dict(run.facility),
                "workload": workload,
            },
            source=f"validation run {run.name}",
        )
        _DESIGNS[key] = design_cluster(spec)
    return _DESIGNS[key]


def candidates(run: Run) -> list[ParallelPlan]:
    """Micro-batch x interleaving plans the run allows (recomputation is chosen per plan).

    Interleaving degrees divide the pipeline slots of a stage into equal chunks: the slots
    are the layers plus the embedding and the loss when the stages are uneven (Llama 3:
    126 + 2 = 128 slots, 8 per stage); a chunk without a layer only at a row's one stated VP
    (``JobLayout.accounts_embedding_and_loss``)."""
    base, job, n = run.base, run.base.layout, run.arch.num_layers
    stages, stated = job.split_layers(n), len(run.virtual_stages) == 1
    slots = n + (2 if min(stages) < max(stages) else 0)
    vpps = [1]
    if job.pp > 1:
        vpps = [
            v
            for v in run.virtual_stages
            if (stated and replace(job, vpp=v).accounts_embedding_and_loss(n))
            or (v <= min(stages) and (stated or slots % (job.pp * v) == 0))
        ]
    layouts = [replace(job, vpp=v) for v in vpps]
    return [base.with_(micro_batch=mb, layout=j) for mb in run.micro_batches for j in layouts]


@dataclass(frozen=True)
class Outcome:
    """A run's prediction: the best fitting plan, or None when no allowed plan fits."""

    run: Run
    prediction: Prediction | None

    @property
    def predicted(self) -> float:
        assert self.prediction is not None
        return float(getattr(self.prediction, self.run.metric))

    @property
    def run_class(self) -> str:
        """The class ``predict`` gives the chosen plan (the run's own when none fits): the
        range a prediction prints is its class's, so residuals are grouped the same way."""
        if self.prediction is None:
            return self.run.base_class
        return run_class(self.run.arch, self.prediction.plan, self.run.stack)

    @property
    def error(self) -> float:
        """Signed relative error, (predicted - published) / published."""
        return self.predicted / self.run.published - 1.0


_COMMS: dict[int, CommModel] = {}


def run_comm(design: Design) -> CommModel:
    """The netsim communication model of a design (one per design: it memoises)."""
    if id(design) not in _COMMS:
        _COMMS[id(design)] = design_comm(design)
    return _COMMS[id(design)]


@cache
def predict_run(run: Run) -> Outcome:
    """The fastest fitting plan among the run's candidates, each with its least recompute."""
    return Outcome(run, best_prediction(run, run_comm(run_design(run))))


def best_prediction(run: Run, comm: CommModel) -> Prediction | None:
    """:func:`predict_run`'s search, the collectives timed by ``comm``."""
    design = run_design(run)
    gpu, domain = design.compute.gpu, design.compute.nvlink_domain_gpus
    gpu = gpu.model_copy(update=dict(run.gpu)) if run.gpu else gpu
    gpu = power_limited(gpu, run.gpu_power_limit_w)
    host, best = design_host(design), None
    for plan in candidates(run):
        try:
            fitting = least_recompute(run.arch, plan, gpu, run.stack, run.recompute)
        except PlanError:
            continue
        if fitting is not None:
            pred = predict_step(run.arch, fitting, gpu, comm, domain, run.stack, host=host)
            best = pred if best is None or pred.step_time_s < best.step_time_s else best
    return best
