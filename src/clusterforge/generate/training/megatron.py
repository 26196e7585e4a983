"""Megatron-LM ``pretrain_gpt.py`` arguments for the workload the design was planned for.

Flag names are Megatron-LM's (``megatron/training/arguments.py``, megatron-core 0.19): model
shape (``--num-layers``, ``--hidden-size``, ``--ffn-hidden-size``, ``--num-attention-heads``,
``--group-query-attention``/``--num-query-groups``, ``--num-experts``, ``--moe-router-topk``),
architecture (``--normalization``, ``--disable-bias-linear``, ``--swiglu``,
``--position-embedding-type`` with ``--rotary-base``, ``--untie-embeddings-and-output-weights``),
vocabulary (``--tokenizer-type``, ``--tokenizer-model``, ``--vocab-size``,
``--make-vocab-size-divisible-by``), sequence (``--seq-length``,
``--max-position-embeddings``), batch and length of training (``--micro-batch-size``,
``--global-batch-size``, ``--train-samples``), learning rate (``--lr``, ``--min-lr``,
``--lr-decay-style``, ``--lr-warmup-samples``, ``--lr-decay-samples``), parallelism
(``--tensor-/--pipeline-/--context-/--expert-model-parallel-size``,
``--num-virtual-stages-per-pipeline-rank``, ``--sequence-parallel``,
``--decoder-first-/--decoder-last-pipeline-num-layers``), precision (``--bf16``, ``--fp16``;
FP8 through Transformer Engine: ``--fp8-format hybrid``, E4M3 forward and E5M2 backward, with
BF16 master weights; MXFP8: ``--fp8-format e4m3 --fp8-recipe mxfp8``, Transformer Engine's
``MXFP8BlockScaling`` whose default format is E4M3; NVFP4: ``--fp4-format e2m1 --fp4-recipe
nvfp4``, ``NVFP4BlockScaling``; every layer quantized, as Megatron-LM's default
``--first-last-layers-bf16`` off; BF16 weights kept, no ``--fp8-param-gather`` /
``--fp4-param-gather``), dropout (``--attention-dropout``, ``--hidden-dropout``: 0 when the planned software stack runs
without it), recomputation (``--recompute-granularity selective|full`` with
``--recompute-method uniform --recompute-num-layers 1`` for full), and optimizer sharding
(``--use-distributed-optimizer`` shards optimizer state and gradients, ZeRO stages 1-2;
``--use-torch-fsdp2`` shards parameters too, stage 3), and Megatron-Core's EP all-to-all
overlap (``--overlap-moe-expert-parallel-comm`` with ``--moe-token-dispatcher-type``).

Megatron-LM's own defaults describe another model (LayerNorm, biased linears, GeLU, RoPE base
10,000, tied embeddings) and it refuses to train without a learning rate, so every one of
these comes from the model's catalog row.  The data paths are the site's: the job script
passes its own arguments on, after these (argparse keeps the last value of a flag, so a local
``--tokenizer-model`` path replaces the Hub id).
"""

from __future__ import annotations

from typing import assert_never

from clusterforge.catalog import ModelArch
from clusterforge.design import Design
from clusterforge.errors import GenerateError
from clusterforge.job import JobLayout
from clusterforge.perf.ep_overlap_rules import check_ep_overlap, check_ep_overlap_model
from clusterforge.perf.predict import plan_from_workload
from clusterforge.perf.stack import stack_named, workload_stack
from clusterforge.spec import WorkloadSpec

__all__ = [
    "HF_TOKENIZER",
    "MAX_VOCAB_DIVISOR",
    "MIN_VOCAB_DIVISOR",
    "NULL_TOKENIZER",
    "megatron_args",
    "vocab_divisor",
    "workload_model",
]

_POSITION_TYPES = {"rope": "rope", "learned": "learned_absolute"}
_NORMALIZATIONS = {"rmsnorm": "RMSNorm", "layernorm": "LayerNorm"}
HF_TOKENIZER = "HuggingFaceTokenizer"  # loads the model's tokenizer by Hub id or local path
NULL_TOKENIZER = "NullTokenizer"  # token ids as text: only for --mock-data smoke runs
# Megatron-LM pads the vocabulary to a multiple of --make-vocab-size-divisible-by x TP (its
# default divisor: 128).  A smaller power of two that still divides the model's vocabulary
# keeps the planned embedding shape; 16 rows per rank is the floor that keeps the logits GEMM
# on Tensor Cores for every precision (NVIDIA Deep Learning Performance Guide, "Matrix
# Multiplication Background": dimensions multiples of 8 for FP16/BF16, of 16 for FP8).
MAX_VOCAB_DIVISOR = 128
MIN_VOCAB_DIVISOR = 16


def workload_model(design: Design, workload: WorkloadSpec) -> ModelArch:
    """The workload's architecture: explicit dimensions or a preset of the design's catalog."""
    if isinstance(workload.model, ModelArch):
        return workload.model
    return design.catalog.models[workload.model]


def _shape_args(arch: ModelArch, seq_length: int) -> list[str]:
    position = _POSITION_TYPES.get(arch.position_embedding)
    if position is None:
        raise GenerateError(
            f"workload.model {arch.id!r} uses {arch.position_embedding} position embeddings, "
            "which Megatron-LM does not implement; choose a model with rope or learned ones"
        )
    args = [
        f"--num-layers={arch.num_layers}",
        f"--hidden-size={arch.hidden_size}",
        f"--num-attention-heads={arch.num_heads}",
        f"--ffn-hidden-size={arch.ffn_hidden_size or 4 * arch.hidden_size}",
        f"--seq-length={seq_length}",
        f"--max-position-embeddings={max(seq_length, arch.seq_length)}",
        f"--position-embedding-type={position}",
        f"--normalization={_NORMALIZATIONS[arch.normalization]}",
    ]
    if position == "rope":
        args.append(f"--rotary-base={arch.rotary_base}")
    if not arch.linear_bias:
        args.append("--disable-bias-linear")
    if arch.num_kv_heads is not None and arch.num_kv_heads != arch.num_heads:
        args += ["--group-query-attention", f"--num-query-groups={arch.num_kv_heads}"]
    if arch.head_dim is not None:  # Megatron-LM's name for the width of one head
        args.append(f"--kv-channels={arch.head_dim}")
    if arch.gated_mlp:
        args.append("--swiglu")
    if not arch.tied_embeddings:
        args.append("--untie-embeddings-and-output-weights")
    if arch.num_experts > 1:
        args += [f"--num-experts={arch.num_experts}", f"--moe-router-topk={arch.top_k}"]
    return args


def vocab_divisor(vocab_size: int, tp: int) -> int | None:
    """The largest power-of-two ``--make-vocab-size-divisible-by`` in [16, 128] whose multiple
    by TP divides the vocabulary (Megatron then adds no padding rows); None when none does."""
    divisor = MAX_VOCAB_DIVISOR
    while divisor >= MIN_VOCAB_DIVISOR:
        if vocab_size % (divisor * tp) == 0:
            return divisor
        divisor //= 2
    return None


def _vocab_args(arch: ModelArch, tp: int) -> list[str]:
    """The tokenizer, and a padding divisor that keeps the planned vocabulary size.

    A model without a published tokenizer gets Megatron's NullTokenizer of ``--vocab-size``
    tokens, the last one the end of document (megatron-core 0.18 and later; up to 0.17 it added
    that id as one more token); pass ``--tokenizer-type`` and ``--tokenizer-model`` for a real
    run.
    """
    if arch.tokenizer is not None:
        args = [f"--tokenizer-type={HF_TOKENIZER}", f"--tokenizer-model={arch.tokenizer}"]
    else:
        args = [f"--tokenizer-type={NULL_TOKENIZER}", f"--vocab-size={arch.vocab_size}"]
    divisor = vocab_divisor(arch.vocab_size, tp)
    if divisor is not None:
        args.append(f"--make-vocab-size-divisible-by={divisor}")
    return args


def _lr_args(arch: ModelArch, global_batch: int, train_samples: int) -> list[str]:
    """The model's learning-rate schedule: warm-up steps at the planned global batch, decay
    over the whole run."""
    schedule = arch.lr_schedule
    warmup_samples = schedule.warmup_steps * global_batch
    if warmup_samples >= train_samples:
        raise GenerateError(
            f"workload.tokens_b: the run is {train_samples} sequences, shorter than the "
            f"learning-rate warm-up of model {arch.id!r} ({schedule.warmup_steps} steps x "
            f"{global_batch} sequences); train on more tokens or give the model a shorter "
            "lr_schedule.warmup_steps"
        )
    return [
        f"--lr={schedule.peak_lr}",
        f"--min-lr={schedule.min_lr}",
        f"--lr-decay-style={schedule.decay_style}",
        f"--lr-warmup-samples={warmup_samples}",
        f"--lr-decay-samples={train_samples}",
    ]


def _precision_args(w: WorkloadSpec) -> list[str]:
    match w.precision:
        case "bf16":
            return ["--bf16"]
        case "fp16":
            return ["--fp16"]
        case "fp8":
            return ["--bf16", "--fp8-format=hybrid"]
        case "mxfp8":
            return ["--bf16", "--fp8-format=e4m3", "--fp8-recipe=mxfp8"]
        case "nvfp4":
            return ["--bf16", "--fp4-format=e2m1", "--fp4-recipe=nvfp4"]
        case _:
            assert_never(w.precision)


def _dropout_args(w: WorkloadSpec) -> list[str]:
    """No dropout when the planned stack runs without it (the plan's step time and activation
    memory assume none); Megatron-LM's default is 0.1 on attention and hidden states."""
    if stack_named(w.stack).dropout:
        return []
    return ["--attention-dropout=0", "--hidden-dropout=0"]


def _recompute_args(w: WorkloadSpec) -> list[str]:
    match w.recompute:
        case "none":
            return []
        case "selective":
            return ["--recompute-granularity=selective"]
        case "full":
            return [
                "--recompute-granularity=full",
                "--recompute-method=uniform",
                "--recompute-num-layers=1",
            ]
        case _:
            assert_never(w.recompute)


def _sharding_args(w: WorkloadSpec, job: JobLayout, arch: ModelArch) -> list[str]:
    match w.zero_stage:
        case 0:
            return []
        case 1 | 2:
            return ["--use-distributed-optimizer"]
        case 3:
            _check_fsdp2(job, arch)
            return ["--use-torch-fsdp2"]
        case _:
            assert_never(w.zero_stage)


def _check_fsdp2(job: JobLayout, arch: ModelArch) -> None:
    """What Megatron-LM's ``validate_args`` refuses with ``--use-torch-fsdp2``."""
    if job.pp > 1:
        raise GenerateError(
            f"workload.zero_stage = 3 with pipeline_parallel = {job.pp}: Megatron-LM's FSDP2 "
            "does not support pipeline parallelism; use pipeline_parallel 1 or zero_stage 1"
        )
    if arch.tied_embeddings:
        raise GenerateError(
            f"workload.zero_stage = 3: Megatron-LM's FSDP2 needs untied embeddings, and model "
            f"{arch.id!r} ties them; use zero_stage 1 or 2"
        )


def _pipeline_layer_args(w: WorkloadSpec, job: JobLayout, arch: ModelArch) -> list[str]:
    """Uneven first/last stages: the only split Megatron-LM takes on the command line.

    A layout with a chunk that holds only the embedding or only the loss is Megatron-Core's
    count of both as pipeline slots (``JobLayout.accounts_embedding_and_loss``); those flags
    exclude ``--decoder-first/last-pipeline-num-layers`` (``TransformerConfig.__post_init__``
    raises on both, megatron/core/transformer/transformer_config.py, NVIDIA/Megatron-LM@b0cc2706).
    """
    if job.accounts_embedding_and_loss(arch.num_layers):
        return [
            "--account-for-embedding-in-pipeline-split",
            "--account-for-loss-in-pipeline-split",
        ]
    layers = w.pipeline_layers
    if not layers or len(set(layers)) == 1:
        return []
    middle = layers[1:-1]
    if len(set(middle)) > 1:
        raise GenerateError(
            f"workload.pipeline_layers = {layers[:8]}: Megatron-LM can make only the first "
            "and last stages different; give the middle stages the same number of layers"
        )
    return [
        f"--decoder-first-pipeline-num-layers={layers[0]}",
        f"--decoder-last-pipeline-num-layers={layers[-1]}",
    ]


def _ep_overlap_args(design: Design, w: WorkloadSpec, arch: ModelArch) -> list[str]:
    """Megatron-Core's EP all-to-all overlap (``workload.expert_parallel_overlap``), with the
    stack's token dispatcher, which the overlap needs to be ``alltoall`` or ``flex`` (Megatron's
    default is ``allgather``); a plan ``TransformerConfig`` refuses is refused here, with the
    field to change (:mod:`clusterforge.perf.ep_overlap_rules`)."""
    if not w.expert_parallel_overlap:
        return []
    _, job = design.require_workload("the training job script")
    stack = workload_stack(w)
    check_ep_overlap_model(arch, stack)
    check_ep_overlap(plan_from_workload(w, job, arch), stack)
    return [
        "--overlap-moe-expert-parallel-comm",
        f"--moe-token-dispatcher-type={stack.moe_dispatcher}",
    ]


def megatron_args(design: Design) -> tuple[str, ...]:
    """``pretrain_gpt.py`` flags for the design's workload and job layout."""
    w, job = design.require_workload("the training job script")
    arch = workload_model(design, w)
    seq_length = w.seq_length or arch.seq_length
    train_samples = round(w.tokens_b * 1e9 / seq_length)  # sequences over the whole run
    args = [
        *_shape_args(arch, seq_length),
        f"--tensor-model-parallel-size={job.tp}",
        f"--pipeline-model-parallel-size={job.pp}",
        f"--context-parallel-size={job.cp}",
        f"--expert-model-parallel-size={job.ep}",
        f"--micro-batch-size={w.micro_batch}",
        f"--global-batch-size={w.global_batch}",
        f"--train-samples={train_samples}",
        *_lr_args(arch, w.global_batch, train_samples),
        *_vocab_args(arch, job.tp),
    ]
    if job.vpp > 1:
        args.append(f"--num-virtual-stages-per-pipeline-rank={job.vpp}")
    if w.sequence_parallel and job.tp > 1:
        args.append("--sequence-parallel")
    args += _pipeline_layer_args(w, job, arch)
    args += (
        _precision_args(w) + _dropout_args(w) + _recompute_args(w) + _sharding_args(w, job, arch)
    )
    args += _ep_overlap_args(design, w, arch)
    return tuple(args)
