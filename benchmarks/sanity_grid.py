"""The grid of the sanity sweep (``benchmarks/sanity_sweep.py``): the cases and how each is
predicted, through the same entry point as ``validation/runs.py`` (``parse_spec`` ->
``design.plan`` -> ``design_comm`` -> ``predict_step``).
"""

from __future__ import annotations

import traceback
from dataclasses import dataclass, replace
from typing import Any

from clusterforge.catalog import ModelArch, load_catalog
from clusterforge.design import Design
from clusterforge.design import plan as design_cluster
from clusterforge.errors import ClusterforgeError
from clusterforge.job import JobLayout
from clusterforge.perf.comm import CommModel
from clusterforge.perf.parallel import ParallelPlan
from clusterforge.perf.predict import design_comm, design_host
from clusterforge.perf.stack import Stack, stack_named
from clusterforge.perf.step import Prediction, predict_step
from clusterforge.spec import parse_spec

NODES = {  # GPU -> its catalog node
    "a100-80gb": "dgx-a100",
    "h100-sxm": "dgx-h100",
    "h200-sxm": "dgx-h200",
    "b200": "dgx-b200",
    "gb200": "gb200-nvl72-tray",
    "gb300": "gb300-nvl72-tray",
    "mi300x": "mi300x-8gpu",
}
NETWORK = {"fabric": "infiniband", "topology": "rail-optimized"}
STACKS = ("megatron-core", "nemo", "megatron-bridge", "torchtitan", "fsdp", "deepspeed", "maxtext")
# model -> (TP, PP, VP, EP) of its Megatron-style layout; FSDP-style stacks use TP only
LAYOUTS: dict[str, tuple[int, int, int, int]] = {
    "llama3-8b": (1, 1, 1, 1),
    "llama3-70b": (4, 4, 5, 1),
    "llama3.1-405b": (8, 8, 2, 1),
    "gpt3-175b": (8, 8, 3, 1),
    "mixtral-8x7b": (1, 4, 2, 8),
    "qwen3-30b-a3b": (1, 2, 1, 8),
    "gpt-oss-120b": (1, 2, 1, 8),
}
FSDP_STACKS = ("torchtitan", "fsdp", "maxtext")
GPU_COUNTS = (8, 64, 512, 4096, 16384)
MFU_BF16_CEILING, MFU_FP8_CEILING, MFU_FLOOR = 0.75, 0.6, 0.05
TIME_TOL = 1e-6  # relative change treated as no change


@dataclass(frozen=True)
class Case:
    """One point of the grid."""

    gpu: str
    model: str
    stack: str
    gpus: int
    tp: int
    pp: int
    vpp: int
    cp: int
    ep: int
    zero: int
    mb: int
    m: int  # micro-batches per step per DP rank
    seq: int
    precision: str
    recompute: str = "full"
    extra_layers: int = 0
    sequence_parallel: bool = True
    stack_changes: tuple[tuple[str, Any], ...] = ()
    plan_changes: tuple[tuple[str, Any], ...] = ()  # ParallelPlan fields set explicitly

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp * self.cp)

    def label(self) -> str:
        return (
            f"{self.gpu} {self.model} {self.stack} {self.gpus}g TP{self.tp} PP{self.pp} "
            f"v{self.vpp} CP{self.cp} EP{self.ep} Z{self.zero} mb{self.mb} m{self.m} "
            f"s{self.seq} {self.precision} {self.recompute}"
            + (f" +{self.extra_layers}L" if self.extra_layers else "")
            + (f" {dict(self.stack_changes)}" if self.stack_changes else "")
            + (f" {dict(self.plan_changes)}" if self.plan_changes else "")
            + ("" if self.sequence_parallel else " noSP")
        )


_DESIGNS: dict[tuple[str, int], tuple[Design, CommModel, Any]] = {}


def design_of(gpu: str, gpus: int) -> tuple[Design, CommModel, Any]:
    key = (gpu, gpus)
    if key not in _DESIGNS:
        workload = {"model": "llama3-8b", "global_batch": gpus, "seq_length": 4096}
        spec = parse_spec(
            {
                "num_gpus": gpus,
                "node": NODES[gpu],
                "network": NETWORK,
                "facility": {"max_rack_kw": 140},  # an NVL72 rack's power (the rows' value)
                "workload": workload,
            },
            source=f"sanity sweep {gpu} x {gpus}",
        )
        design = design_cluster(spec)
        _DESIGNS[key] = (design, design_comm(design), design_host(design))
    return _DESIGNS[key]


def arch_of(case: Case) -> ModelArch:
    arch = load_catalog().models[case.model]
    if case.extra_layers:
        arch = arch.model_copy(update={"num_layers": arch.num_layers + case.extra_layers})
    return arch


def stack_of(case: Case) -> Stack:
    return replace(stack_named(case.stack), **dict(case.stack_changes))  # type: ignore[arg-type]


def predict(case: Case) -> Prediction | str:
    """The prediction, or ``"refused: ..."`` for a clear error, ``"exception: ..."`` else."""
    try:
        design, comm, host = design_of(case.gpu, case.gpus)
        layout = JobLayout.for_gpus(
            case.gpus, tp=case.tp, pp=case.pp, cp=case.cp, ep=case.ep, vpp=case.vpp
        )
        plan = ParallelPlan(
            layout,
            micro_batch=case.mb,
            global_batch=case.mb * case.m * layout.dp,
            seq_length=case.seq,
            sequence_parallel=case.tp > 1 and case.sequence_parallel,
            recompute=case.recompute,  # type: ignore[arg-type]
            zero_stage=case.zero,
            precision=case.precision,  # type: ignore[arg-type]
        ).with_(**dict(case.plan_changes))
        gpu = design.compute.gpu
        return predict_step(
            arch_of(case),
            plan,
            gpu,
            comm,
            design.compute.nvlink_domain_gpus,
            stack_of(case),
            host=host,
        )
    except ClusterforgeError as err:
        return f"refused: {err}"
    except Exception as err:
        where = traceback.extract_tb(err.__traceback__)[-1]
        return f"exception: {type(err).__name__}: {err} at {where.filename}:{where.lineno}"


def base_cases(quick: bool) -> list[Case]:
    """The grid: every GPU x model x stack x GPU count x precision x micro-batch."""
    cases = []
    counts = GPU_COUNTS[::2] if quick else GPU_COUNTS
    for gpu in NODES:
        fp8 = load_catalog().gpus[gpu].fp8_dense_tflops > 0
        for model, (tp, pp, vpp, ep) in LAYOUTS.items():
            for stack in STACKS:
                zero = 1
                if stack in FSDP_STACKS:
                    tp, pp, vpp, zero = min(tp, 8), 1, 1, 3
                for gpus in counts:
                    if gpus % (tp * pp * ep) or gpus < tp * pp * max(1, ep // 8):
                        continue
                    for precision in ("bf16", "fp8") if fp8 else ("bf16",):
                        cases += _variants(
                            Case(
                                gpu,
                                model,
                                stack,
                                gpus,
                                tp,
                                pp,
                                vpp,
                                1,
                                ep,
                                zero,
                                1,
                                max(4, 2 * pp),
                                load_catalog().models[model].seq_length,
                                precision,
                            )
                        )
    return cases + long_context_cases() + deepspeed_cases()


def _variants(case: Case) -> list[Case]:
    """Micro-batch 1 and 2 with full recomputation; on the 8B model also micro-batch 4 and
    8, selective and no recomputation, a 2K sequence and one micro-batch per step."""
    out = [case, replace(case, mb=2)]
    if case.model == "llama3-8b" and case.gpus <= 512:
        out += [replace(case, mb=mb) for mb in (4, 8)]
        out += [replace(case, recompute=r) for r in ("selective", "none")]
        out += [replace(case, seq=2048), replace(case, m=1)]
    return out


def long_context_cases() -> list[Case]:
    """Dense models at 32K-128K tokens with context parallelism (Megatron stacks)."""
    cases = []
    for gpu in ("h100-sxm", "b200", "gb200"):
        for model in ("llama3-8b", "llama3-70b"):
            tp, pp, vpp, _ = LAYOUTS[model]
            for seq, cp in ((32768, 2), (65536, 4), (131072, 8)):
                for stack in ("megatron-core", "megatron-bridge"):
                    cases.append(
                        Case(
                            gpu,
                            model,
                            stack,
                            512,
                            tp,
                            pp,
                            vpp,
                            cp,
                            1,
                            1,
                            1,
                            max(4, 2 * pp),
                            seq,
                            "bf16",
                        )
                    )
    return cases


def deepspeed_cases() -> list[Case]:
    """DeepSpeed ZeRO stages 0-3 on the 8B and 70B models."""
    return [
        Case(gpu, model, "deepspeed", gpus, 1, 1, 1, 1, 1, zero, mb, 4, 4096, "bf16")
        for gpu in ("a100-80gb", "h100-sxm", "h200-sxm")
        for model in ("llama3-8b", "llama3-70b")
        for gpus in (8, 64, 512)
        for zero in (0, 1, 2, 3)
        for mb in (1, 4, 8)
    ]


def refusal_cases() -> list[tuple[str, Case]]:
    """Plans no run could start: each must end in a clear refusal (a ClusterforgeError)."""
    b = Case("h100-sxm", "llama3-8b", "megatron-core", 64, 1, 1, 1, 1, 1, 1, 1, 4, 8192, "bf16")
    return [
        ("FP8 on A100 (no FP8 tensor cores)", replace(b, gpu="a100-80gb", precision="fp8")),
        (
            "FP8 on A100 under FSDP",
            replace(b, gpu="a100-80gb", precision="fp8", stack="torchtitan", zero=3),
        ),
        ("global batch 0", replace(b, m=0)),
        ("micro-batch 0", replace(b, mb=0)),
        ("PP above the layer count", replace(b, pp=64, m=64)),
        ("VP above the layers per stage", replace(b, pp=8, vpp=8, m=16)),
        ("EP on a dense model", replace(b, ep=8)),
        ("EP not dividing the experts", replace(b, model="mixtral-8x7b", ep=3)),
        ("CP not splitting the sequence", replace(b, cp=3, gpus=48)),
        ("TP not dividing the heads", replace(b, tp=3, gpus=48)),
        ("GPU count not a whole node", replace(b, gpus=12)),
        ("ZeRO stage 4", replace(b, zero=4)),
    ]
