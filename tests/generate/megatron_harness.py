"""Megatron-LM reads the generated training flags: ``python -m tests.generate.megatron_harness
CASES.json RESULTS.json``.

Runs in its own process (Megatron keeps its arguments, its process group and its warnings in
global state) and imports nothing from clusterforge: it reports what Megatron made of the
flags, and the tests compare that with the plan.  For each case it

1. parses the flags with ``megatron.training.arguments.parse_args`` and checks them with
   ``validate_args`` under the job's ``WORLD_SIZE`` and environment, as on a Hopper GPU (the
   stricter of Megatron's two paths: Blackwell drops the CUDA_DEVICE_MAX_CONNECTIONS rule),
   then builds the ``TransformerConfig`` of the whole model;
2. builds the GPT model with the local (non-Transformer Engine) layer spec on the meta device
   (shapes, no memory) in a one-rank gloo group, TP = PP = CP = EP = 1 and ``build_layers``
   layers, and counts its parameters by part.

The CPU stand-ins change kernels only, never a parameter: no RoPE fusion (Transformer Engine),
no persistent LayerNorm kernel (Apex), no gradient-accumulation fusion, CPU initialisation
skipped, Megatron's all-gather token dispatcher (the all-to-all one opens a CUDA stream) and
no EP all-to-all overlap in the one-rank build (the whole model's config still checks both).  megatron-core 0.19 asks for Python 3.12 for one name only, ``typing.override`` (a
decorator that returns its argument), which Python 3.11 gets from ``typing_extensions``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import typing
import warnings
from pathlib import Path
from typing import Any

if not hasattr(typing, "override"):  # Python 3.11
    import typing_extensions

    typing.override = typing_extensions.override  # type: ignore[attr-defined]

HOPPER = 9  # compute-capability major that validate_args is told it runs on
NAMESPACE_FIELDS = (
    "num_layers",
    "hidden_size",
    "ffn_hidden_size",
    "num_attention_heads",
    "group_query_attention",
    "num_query_groups",
    "kv_channels",
    "normalization",
    "swiglu",
    "add_bias_linear",
    "position_embedding_type",
    "rotary_base",
    "untie_embeddings_and_output_weights",
    "num_experts",
    "moe_router_topk",
    "seq_length",
    "max_position_embeddings",
    "micro_batch_size",
    "global_batch_size",
    "train_samples",
    "tensor_model_parallel_size",
    "pipeline_model_parallel_size",
    "context_parallel_size",
    "expert_model_parallel_size",
    "virtual_pipeline_model_parallel_size",
    "decoder_first_pipeline_num_layers",
    "decoder_last_pipeline_num_layers",
    "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
    "data_parallel_size",
    "sequence_parallel",
    "bf16",
    "fp16",
    "fp8",
    "fp8_recipe",
    "fp4",
    "fp4_recipe",
    "attention_dropout",
    "hidden_dropout",
    "recompute_granularity",
    "use_distributed_optimizer",
    "use_torch_fsdp2",
    "lr",
    "min_lr",
    "lr_decay_style",
    "lr_warmup_samples",
    "lr_decay_samples",
    "tokenizer_type",
    "tokenizer_model",
    "vocab_size",
    "make_vocab_size_divisible_by",
    "overlap_moe_expert_parallel_comm",
    "moe_token_dispatcher_type",
)
CONFIG_FIELDS = (
    "num_layers",
    "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
    "hidden_size",
    "ffn_hidden_size",
    "num_attention_heads",
    "num_query_groups",
    "normalization",
    "gated_linear_unit",
    "add_bias_linear",
    "num_moe_experts",
    "overlap_moe_expert_parallel_comm",
    "moe_token_dispatcher_type",
)
CPU_FLAGS = ("--no-rope-fusion", "--no-persist-layer-norm", "--no-gradient-accumulation-fusion")
SINGLE_RANK = {
    "tensor_model_parallel_size": 1,
    "pipeline_model_parallel_size": 1,
    "context_parallel_size": 1,
    "expert_model_parallel_size": 1,
    "expert_tensor_parallel_size": 1,
    "virtual_pipeline_model_parallel_size": None,
    "decoder_first_pipeline_num_layers": None,
    "decoder_last_pipeline_num_layers": None,
    "account_for_embedding_in_pipeline_split": False,
    "account_for_loss_in_pipeline_split": False,
    "sequence_parallel": False,
    "recompute_granularity": None,
    "recompute_method": None,
    "recompute_num_layers": None,
    "fp8": None,
    # the overlap needs EP > 1 (the whole model's config checks it); the all-to-all
    # dispatcher opens a CUDA stream: Megatron's default one holds the same (no) parameters
    "overlap_moe_expert_parallel_comm": False,
    "moe_token_dispatcher_type": "allgather",
    "fp4": None,
    "use_cpu_initialization": True,
    "perform_initialization": False,
}


def _parse(
    flags: list[str], env: dict[str, str], world_size: int, te_version: str | None = None
) -> argparse.Namespace:
    """``te_version``: the Transformer Engine release ``validate_args`` is told is installed
    (none is here; ``--fp4-format`` asks for 2.7 or later), None to leave its check alone."""
    from megatron.training import arguments

    arguments.get_device_arch_version = lambda: HOPPER  # no GPU here
    for name in ("CUDA_DEVICE_MAX_CONNECTIONS", *env):
        os.environ.pop(name, None)
    os.environ.update(env, WORLD_SIZE=str(world_size), RANK="0")
    sys.argv = ["pretrain_gpt.py", *flags, *CPU_FLAGS]
    original = arguments.is_te_min_version
    if te_version is not None:
        arguments.is_te_min_version = _te_at(te_version)
    try:
        return arguments.validate_args(arguments.parse_args())
    finally:
        arguments.is_te_min_version = original


def _te_at(installed: str) -> Any:
    from packaging.version import Version

    def is_te_min_version(version: str, check_equality: bool = True) -> bool:
        if check_equality:
            return Version(installed) >= Version(version)
        return Version(installed) > Version(version)

    return is_te_min_version


def _config(args: argparse.Namespace) -> Any:
    from megatron.training.arguments import core_transformer_config_from_args

    return core_transformer_config_from_args(args)


def _padded_vocab(args: argparse.Namespace, vocab_size: int) -> int:
    from megatron.core.tokenizers.utils.build_tokenizer import vocab_size_with_padding

    return int(vocab_size_with_padding(vocab_size, args, logging_enabled=False))


def _tokenizer_vocab(args: argparse.Namespace) -> int | None:
    """NullTokenizer's vocabulary as Megatron builds it; None for a Hub tokenizer (offline)."""
    if args.tokenizer_type != "NullTokenizer":
        return None
    from megatron.core.tokenizers.utils.build_tokenizer import build_tokenizer

    return int(build_tokenizer(args).vocab_size)


def _init_single_rank() -> None:
    import torch
    from megatron.core import parallel_state

    if not torch.distributed.is_initialized():  # an in-memory store: no port to collide on
        store = torch.distributed.HashStore()
        torch.distributed.init_process_group("gloo", store=store, world_size=1, rank=0)
    if not parallel_state.model_parallel_is_initialized():
        parallel_state.initialize_model_parallel(1, 1)


def _build_counts(args: argparse.Namespace, vocab_size: int, layers: int) -> dict[str, int]:
    """Parameters of the model built with ``layers`` layers on one rank, by part."""
    import torch
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec

    _init_single_rank()
    small = argparse.Namespace(**{**vars(args), **SINGLE_RANK, "num_layers": layers})
    config = _config(small)
    spec = get_gpt_layer_local_spec(
        num_experts=small.num_experts, moe_grouped_gemm=False, normalization=small.normalization
    )
    with torch.device("meta"):
        model = GPTModel(
            config=config,
            transformer_layer_spec=spec,
            vocab_size=_padded_vocab(small, vocab_size),
            max_sequence_length=small.max_position_embeddings,
            share_embeddings_and_output_weights=not small.untie_embeddings_and_output_weights,
            position_embedding_type=small.position_embedding_type,
            rotary_base=small.rotary_base,
        )
    counts: dict[str, int] = {"total": 0, "embedding": 0, "output": 0, "final_norm": 0}
    for index in range(layers):
        counts[f"layer{index}"] = 0
    for name, param in model.named_parameters():
        counts["total"] += param.numel()
        counts[_part(name)] += param.numel()
    return counts


def _part(name: str) -> str:
    if name.startswith("embedding."):
        return "embedding"
    if name.startswith("output_layer."):
        return "output"
    if name.startswith("decoder.final_layernorm."):
        return "final_norm"
    return "layer" + name.split(".")[2]  # decoder.layers.<i>.…


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if dataclasses.is_dataclass(value) or callable(value):
        return getattr(value, "__name__", repr(value))
    return str(value)


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    args = _parse(case["args"], case["env"], case["world_size"], case.get("te_version"))
    config = _config(args)
    return {
        "name": case["name"],
        "namespace": {f: _plain(getattr(args, f, None)) for f in NAMESPACE_FIELDS},
        "config": {f: _plain(getattr(config, f)) for f in CONFIG_FIELDS},
        "activation": config.activation_func.__name__,
        "padded_vocab_size": _padded_vocab(args, case["vocab_size"]),
        "tokenizer_vocab_size": _tokenizer_vocab(args),
        "params": _build_counts(args, case["vocab_size"], case["build_layers"]),
    }


def main(argv: list[str]) -> int:
    warnings.simplefilter("ignore")  # Megatron warns of every missing optional kernel
    cases = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    results = []
    for case in cases:
        try:
            results.append(run_case(case))
        except (SystemExit, Exception) as exc:  # argparse exits on a flag it refuses
            results.append({"name": case["name"], "error": f"{type(exc).__name__}: {exc}"})
    Path(argv[1]).write_text(json.dumps(results), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
