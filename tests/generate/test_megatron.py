"""Megatron-LM's own argument parser and model builder read the generated training flags.

Every example spec and a few workload variants go through ``megatron_harness`` (a separate
process): each flag must be accepted, the parsed arguments must describe the planned model,
layout, batch and schedule, and the GPT model Megatron builds from them (2 layers, one rank)
must hold the performance model's parameter count within 0.1 %.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clusterforge.catalog import ModelArch
from clusterforge.design import Design, plan
from clusterforge.generate.training.launch import launch_plan
from clusterforge.generate.training.megatron import (
    MAX_VOCAB_DIVISOR,
    vocab_divisor,
    workload_model,
)
from clusterforge.perf.flops import num_params
from clusterforge.perf.stack import stack_named
from clusterforge.spec import ClusterSpec, load_spec
from tests.generate.conftest import GOLDEN_SPEC

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
BUILD_LAYERS = 2  # layers of the model built on the CPU (its shapes do not depend on depth)
PARAM_TOLERANCE = 1e-3
MEGATRON_DROPOUT = 0.1  # Megatron-LM's default attention and hidden dropout
NORMALIZATIONS = {"rmsnorm": "RMSNorm", "layernorm": "LayerNorm"}
POSITIONS = {"rope": "rope", "learned": "learned_absolute"}
# Workload variants of the golden design: each changes what Megatron must be told.
VARIANTS: dict[str, dict[str, Any]] = {
    "gpt3-1.3b-megatron-2021": {"model": "gpt3-1.3b", "seq_length": None, "stack": "megatron-2021"},
    "mixtral-8x7b": {
        "model": "mixtral-8x7b",
        "tensor_parallel": 4,
        "pipeline_parallel": 1,
        "expert_parallel": 4,
    },
    "custom-null-tokenizer": {
        "model": ModelArch(
            num_layers=4, hidden_size=1024, num_heads=8, vocab_size=50000, seq_length=2048
        ),
        "tokens_b": 50,
    },
    "interleaved-fp16-full": {
        "virtual_pipeline_stages": 2,
        "precision": "fp16",
        "recompute": "full",
    },
    "fsdp2": {"zero_stage": 3, "pipeline_parallel": 1},
    # 6 layers + embedding + loss = 8 slots on PP 2, VP 4: the first chunk of stage 0 holds
    # only the embedding, the last chunk of stage 1 only the loss (Megatron-Core's
    # account_for_embedding/loss_in_pipeline_split)
    "embedding-loss-slots": {
        "model": ModelArch(
            num_layers=6, hidden_size=1024, num_heads=8, vocab_size=50000, seq_length=2048
        ),
        "tokens_b": 50,
        "virtual_pipeline_stages": 4,
    },
    # Megatron-Core's EP all-to-all overlap: EP > 1, interleaving with PP > 1, no full
    # recomputation, an all-to-all dispatcher (TransformerConfig.__post_init__ asserts each)
    "mixtral-8x7b-ep-overlap": {
        "model": "mixtral-8x7b",
        "tensor_parallel": 2,
        "pipeline_parallel": 2,
        "virtual_pipeline_stages": 2,
        "expert_parallel": 4,
        "expert_parallel_overlap": True,
    },
}
# Block-scaled precisions of the golden design, flags only: planning them needs a Blackwell
# GPU, Megatron's parser does not look at the GPU for them. The value is the Transformer
# Engine release validate_args is told is installed (``--fp4-format`` asks for 2.7 or later;
# 2.9 is the NeMo 25.11 container's), None: its check left alone.
PRECISIONS: dict[str, str | None] = {"mxfp8": None, "nvfp4": "2.9.0"}

if any(importlib.util.find_spec(name) is None for name in ("torch", "triton", "megatron.training")):
    pytest.skip(
        "needs Megatron-LM's parser: pip install --no-deps --ignore-requires-python "
        "megatron-core==0.19.2 triton==3.9.0 (see .ci/run)",
        allow_module_level=True,
    )


@dataclass(frozen=True)
class Case:
    name: str
    design: Design
    te_version: str | None = None

    @property
    def arch(self) -> ModelArch:
        assert self.design.spec.workload is not None
        return workload_model(self.design, self.design.spec.workload)

    def harness_input(self) -> dict[str, Any]:
        launch = launch_plan(self.design, 1)
        return {
            "name": self.name,
            "args": list(launch.train_args),
            "env": dict(launch.nccl_env),
            "world_size": launch.num_gpus,
            "vocab_size": self.arch.vocab_size,
            "build_layers": BUILD_LAYERS,
            "te_version": self.te_version,
        }


def _variant(spec: ClusterSpec, changes: dict[str, Any]) -> Design:
    assert spec.workload is not None
    workload = spec.workload.model_copy(update=changes)
    return plan(spec.model_copy(update={"workload": workload}))


def _cases() -> list[Case]:
    cases = [Case(path.stem, plan(load_spec(path))) for path in EXAMPLES]
    golden = load_spec(GOLDEN_SPEC)
    cases += [Case(name, _variant(golden, changes)) for name, changes in VARIANTS.items()]
    planned = plan(golden)
    for precision, te_version in PRECISIONS.items():
        cases.append(Case(f"precision-{precision}", _flags_only(planned, precision), te_version))
    return cases


def _flags_only(design: Design, precision: str) -> Design:
    """The design with another workload precision, not planned again."""
    assert design.spec.workload is not None
    workload = design.spec.workload.model_copy(update={"precision": precision})
    return design.model_copy(update={"spec": design.spec.model_copy(update={"workload": workload})})


CASES = {case.name: case for case in _cases()}


@pytest.fixture(scope="module")
def parsed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """What Megatron made of every case's flags, by case name (one process for all)."""
    folder = tmp_path_factory.mktemp("megatron")
    (folder / "cases.json").write_text(json.dumps([c.harness_input() for c in CASES.values()]))
    run = subprocess.run(
        [sys.executable, "-m", "tests.generate.megatron_harness", "cases.json", "out.json"],
        cwd=folder,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *_pythonpath()])},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return {r["name"]: r for r in json.loads((folder / "out.json").read_text())}


def _pythonpath() -> list[str]:
    return [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def _result(parsed: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    result = parsed[name]
    assert "error" not in result, result.get("error")
    return result


def test_every_example_is_a_case() -> None:
    assert EXAMPLES, "no example specs"
    assert {p.stem for p in EXAMPLES} <= set(CASES)


@pytest.mark.parametrize("name", list(CASES))
def test_megatron_parses_the_planned_model(parsed: dict[str, dict[str, Any]], name: str) -> None:
    case, ns = CASES[name], _result(parsed, name)["namespace"]
    arch = case.arch
    assert ns["num_layers"] == arch.num_layers
    assert ns["hidden_size"] == arch.hidden_size
    assert ns["num_attention_heads"] == arch.num_heads
    grouped = arch.num_kv_heads not in (None, arch.num_heads)
    assert ns["group_query_attention"] is grouped
    if grouped:
        assert ns["num_query_groups"] == arch.num_kv_heads
    assert ns["ffn_hidden_size"] == (arch.ffn_hidden_size or 4 * arch.hidden_size)
    assert ns["normalization"] == NORMALIZATIONS[arch.normalization]
    assert ns["swiglu"] is arch.gated_mlp
    assert ns["add_bias_linear"] is arch.linear_bias
    assert ns["position_embedding_type"] == POSITIONS[arch.position_embedding]
    if arch.position_embedding == "rope":
        assert ns["rotary_base"] == arch.rotary_base
    assert ns["untie_embeddings_and_output_weights"] is not arch.tied_embeddings
    assert (ns["num_experts"] or 1) == arch.num_experts
    if arch.num_experts > 1:
        assert ns["moe_router_topk"] == arch.top_k


@pytest.mark.parametrize("name", list(CASES))
def test_megatron_config_is_the_planned_architecture(
    parsed: dict[str, dict[str, Any]], name: str
) -> None:
    result, arch = _result(parsed, name), CASES[name].arch
    config = result["config"]
    assert config["normalization"] == NORMALIZATIONS[arch.normalization]
    assert config["gated_linear_unit"] is arch.gated_mlp
    assert result["activation"] == ("silu" if arch.gated_mlp else "gelu")
    assert config["add_bias_linear"] is arch.linear_bias
    assert config["num_query_groups"] == (arch.num_kv_heads or arch.num_heads)


@pytest.mark.parametrize("name", list(CASES))
def test_megatron_parses_the_planned_layout_and_batch(
    parsed: dict[str, dict[str, Any]], name: str
) -> None:
    design, ns = CASES[name].design, _result(parsed, name)["namespace"]
    w, job = design.require_workload("test")
    seq_length = w.seq_length or CASES[name].arch.seq_length
    assert (ns["tensor_model_parallel_size"], ns["pipeline_model_parallel_size"]) == (
        job.tp,
        job.pp,
    )
    assert (ns["context_parallel_size"], ns["expert_model_parallel_size"]) == (job.cp, job.ep)
    assert (ns["virtual_pipeline_model_parallel_size"] or 1) == job.vpp
    assert ns["data_parallel_size"] == job.dp
    assert ns["seq_length"] == seq_length
    assert ns["max_position_embeddings"] >= seq_length
    assert (ns["micro_batch_size"], ns["global_batch_size"]) == (w.micro_batch, w.global_batch)
    assert ns["train_samples"] == round(w.tokens_b * 1e9 / seq_length)
    assert ns["sequence_parallel"] is (w.sequence_parallel and job.tp > 1)
    assert ns["bf16"] is (w.precision != "fp16")
    assert ns["fp16"] is (w.precision == "fp16")
    assert ns["use_torch_fsdp2"] is (w.zero_stage == 3)
    dropout = MEGATRON_DROPOUT if stack_named(w.stack).dropout else 0.0
    assert ns["attention_dropout"] == ns["hidden_dropout"] == dropout
    assert ns["overlap_moe_expert_parallel_comm"] is w.expert_parallel_overlap
    slots = job.accounts_embedding_and_loss(CASES[name].arch.num_layers)
    assert ns["account_for_embedding_in_pipeline_split"] is slots
    assert ns["account_for_loss_in_pipeline_split"] is slots


def test_megatron_core_counts_the_embedding_and_loss_slots(
    parsed: dict[str, dict[str, Any]],
) -> None:
    # the whole model's TransformerConfig passed the slot asserts: 6 + 2 = 8 slots divide by
    # PP 2 and each stage's 4 by VP 4
    config = _result(parsed, "embedding-loss-slots")["config"]
    assert config["account_for_embedding_in_pipeline_split"] is True
    assert config["account_for_loss_in_pipeline_split"] is True


def test_megatron_core_builds_the_ep_overlap_config(parsed: dict[str, dict[str, Any]]) -> None:
    # the TransformerConfig of the whole model passed the overlap's asserts
    config = _result(parsed, "mixtral-8x7b-ep-overlap")["config"]
    assert config["overlap_moe_expert_parallel_comm"] is True
    assert config["moe_token_dispatcher_type"] == "alltoall"


@pytest.mark.parametrize("name", list(CASES))
def test_megatron_parses_the_learning_rate_schedule(
    parsed: dict[str, dict[str, Any]], name: str
) -> None:
    design, ns = CASES[name].design, _result(parsed, name)["namespace"]
    schedule = CASES[name].arch.lr_schedule
    w, _ = design.require_workload("test")
    assert (ns["lr"], ns["min_lr"]) == (schedule.peak_lr, schedule.min_lr)
    assert ns["lr_decay_style"] == schedule.decay_style
    assert ns["lr_warmup_samples"] == schedule.warmup_steps * w.global_batch
    assert ns["lr_decay_samples"] == ns["train_samples"]


@pytest.mark.parametrize("name", list(CASES))
def test_megatron_vocabulary_is_the_planned_one(
    parsed: dict[str, dict[str, Any]], name: str
) -> None:
    result, arch = _result(parsed, name), CASES[name].arch
    ns = result["namespace"]
    if arch.tokenizer is None:
        assert ns["tokenizer_type"] == "NullTokenizer"
        assert result["tokenizer_vocab_size"] == arch.vocab_size
    else:
        assert (ns["tokenizer_type"], ns["tokenizer_model"]) == (
            "HuggingFaceTokenizer",
            arch.tokenizer,
        )
    tp = ns["tensor_model_parallel_size"]
    if vocab_divisor(arch.vocab_size, tp) is not None:
        assert result["padded_vocab_size"] == arch.vocab_size
    else:  # no divisor keeps the vocabulary: Megatron pads it to its default multiple
        multiple = MAX_VOCAB_DIVISOR * tp
        assert result["padded_vocab_size"] == -(-arch.vocab_size // multiple) * multiple


def _relative(a: float, b: float) -> float:
    return abs(a - b) / b


def _planned_params(arch: ModelArch, num_layers: int) -> float:
    return num_params(arch.model_copy(update={"num_layers": num_layers}))


@pytest.mark.parametrize("name", list(CASES))
def test_megatron_layer_has_the_planned_parameter_count(
    parsed: dict[str, dict[str, Any]], name: str
) -> None:
    """Per layer the count holds for every case: GPT-3's biases are 0.05 % of a layer."""
    arch, params = CASES[name].arch, _result(parsed, name)["params"]
    per_layer = _planned_params(arch, 2) - _planned_params(arch, 1)
    for index in range(BUILD_LAYERS):
        assert _relative(params[f"layer{index}"], per_layer) < PARAM_TOLERANCE


@pytest.mark.parametrize("name", [p.stem for p in EXAMPLES])
def test_megatron_model_has_the_planned_parameter_count(
    parsed: dict[str, dict[str, Any]], name: str
) -> None:
    """Embedding, output layer and final norm too (the examples train Llama 3: no padding
    rows, no learned positions, which the performance model does not count)."""
    arch, params = CASES[name].arch, _result(parsed, name)["params"]
    built = _planned_params(arch, BUILD_LAYERS)
    per_layer = built - _planned_params(arch, 1)
    assert _relative(params["total"], built) < PARAM_TOLERANCE
    outside = params["embedding"] + params["output"] + params["final_norm"]
    assert _relative(outside, built - BUILD_LAYERS * per_layer) < PARAM_TOLERANCE
    full = outside + arch.num_layers * params["layer0"]
    assert _relative(full, num_params(arch)) < PARAM_TOLERANCE


def test_a_head_width_apart_from_hidden_over_heads_is_passed_as_kv_channels() -> None:
    from clusterforge.catalog import load_catalog
    from clusterforge.generate.training.megatron import _shape_args

    models = load_catalog().models
    assert "--kv-channels=128" in _shape_args(models["qwen3-30b-a3b"], 4096)
    assert not any(a.startswith("--kv-channels") for a in _shape_args(models["llama3-8b"], 8192))


@pytest.mark.parametrize("precision", list(PRECISIONS))
def test_megatron_parses_the_block_scaled_precisions(
    parsed: dict[str, dict[str, Any]], precision: str
) -> None:
    ns = _result(parsed, f"precision-{precision}")["namespace"]
    assert ns["bf16"] is True and not ns["fp16"]
    if precision == "mxfp8":  # MXFP8BlockScaling, E4M3 values
        assert (ns["fp8"], ns["fp8_recipe"], ns["fp4"]) == ("e4m3", "mxfp8", None)
    else:  # NVFP4BlockScaling, E2M1 values
        assert (ns["fp4"], ns["fp4_recipe"], ns["fp8"]) == ("e2m1", "nvfp4", None)
