"""The job's launch: HCA names per rail from the catalog, RoCE QoS, Megatron-LM flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterforge.catalog import load_catalog
from clusterforge.cli.main import main
from clusterforge.design import Design, plan
from clusterforge.errors import GenerateError
from clusterforge.generate import render
from clusterforge.generate.training.launch import (
    ROCE_TRAFFIC_CLASS,
    hca_names,
    hca_names_assumed,
    launch_plan,
)
from clusterforge.generate.training.megatron import megatron_args, vocab_divisor
from clusterforge.spec import load_spec
from tests.generate.conftest import SPECS

# DGX H100/H200 User Guide, network modules table: compute ports of GPUs 0-7.
DGX_H100_COMPUTE_HCAS = [f"mlx5_{i}" for i in (0, 3, 4, 5, 6, 9, 10, 11)]


def _replanned(design: Design, **changes: object) -> Design:
    """The design planned again with a changed workload (the job layout follows)."""
    assert design.spec.workload is not None
    workload = design.spec.workload.model_copy(update=changes)
    return plan(design.spec.model_copy(update={"workload": workload}))


def _with_workload(design: Design, **changes: object) -> Design:
    assert design.spec.workload is not None
    workload = design.spec.workload.model_copy(update=changes)
    return design.model_copy(update={"spec": design.spec.model_copy(update={"workload": workload})})


@pytest.mark.parametrize("node", load_catalog().nodes.ids())
def test_catalog_hca_names_cover_every_compute_nic_with_a_source(node: str) -> None:
    row = load_catalog().nodes[node]
    if row.compute_hca_names:
        assert len(row.compute_hca_names) == row.num_compute_nics
        assert len(set(row.compute_hca_names)) == row.num_compute_nics
        assert row.compute_hca_source.startswith("[")


def test_dgx_h100_nccl_uses_the_compute_ports_not_storage(lab_design: Design) -> None:
    assert lab_design.compute.node.id == "dgx-h100"
    env = dict(launch_plan(lab_design, 1).nccl_env)
    assert env["NCCL_IB_HCA"] == "=" + ",".join(f"{n}:1" for n in DGX_H100_COMPUTE_HCAS)
    assert not hca_names_assumed(lab_design)


def test_prometheus_rail_label_follows_the_hca_names(lab_design: Design) -> None:
    files = {f.path: f.content for f in render(lab_design, ["monitoring"])}
    prometheus = files["monitoring/prometheus.yml"]
    assert "regex: mlx5_3\n" in prometheus and "replacement: '1'" in prometheus
    assert "mlx5_(\\d+)" not in prometheus


def test_node_without_published_names_says_the_names_are_assumed(lab_design: Design) -> None:
    node = lab_design.compute.node.model_copy(update={"compute_hca_names": []})
    design = lab_design.model_copy(
        update={"compute": lab_design.compute.model_copy(update={"node": node})}
    )
    assert hca_names(design) == [f"mlx5_{i}" for i in range(8)]
    script = {f.path: f.content for f in render(design, ["slurm"])}["slurm/train.sbatch"]
    assert "ibdev2netdev" in script


def test_roce_job_env_carries_the_lossless_traffic_class() -> None:
    roce = plan(load_spec(SPECS / "roce-rail-optimized.yaml"))
    env = dict(launch_plan(roce, 1).nccl_env)
    assert env["NCCL_IB_TC"] == str(ROCE_TRAFFIC_CLASS) == "104"  # DSCP 26 << 2
    script = {f.path: f.content for f in render(roce, ["slurm"])}["slurm/train.sbatch"]
    assert "--trust dscp --pfc 0,0,0,1,0,0,0,0" in script


def test_infiniband_job_env_has_no_roce_settings(lab_design: Design) -> None:
    env = dict(launch_plan(lab_design, 1).nccl_env)
    assert "NCCL_IB_TC" not in env and "NCCL_IB_GID_INDEX" not in env


def test_megatron_args_carry_the_model_and_the_recipe(lab_design: Design) -> None:
    args = megatron_args(lab_design)
    w = lab_design.spec.workload
    assert w is not None and w.model == "llama3-8b"
    for flag in (
        "--num-layers=32",
        "--hidden-size=4096",
        "--num-attention-heads=32",
        "--num-query-groups=8",
        "--ffn-hidden-size=14336",
        "--swiglu",
        "--seq-length=8192",
        "--position-embedding-type=rope",
        f"--tensor-model-parallel-size={lab_design.job.tp if lab_design.job else 0}",
        "--bf16",
        "--recompute-granularity=selective",
        "--normalization=RMSNorm",
        "--disable-bias-linear",
        "--rotary-base=500000",
        "--untie-embeddings-and-output-weights",
        "--tokenizer-type=HuggingFaceTokenizer",
        "--tokenizer-model=meta-llama/Meta-Llama-3-8B",
        "--lr=0.0003",
        "--min-lr=3e-06",
        "--lr-decay-style=cosine",
        f"--lr-warmup-samples={8000 * w.global_batch}",
        "--attention-dropout=0",
        "--hidden-dropout=0",
    ):
        assert flag in args, flag
    train_samples = round(w.tokens_b * 1e9 / 8192)
    assert f"--train-samples={train_samples}" in args
    assert f"--lr-decay-samples={train_samples}" in args


def test_gpt3_keeps_megatrons_layernorm_biases_and_learned_positions(lab_design: Design) -> None:
    args = megatron_args(_with_workload(lab_design, model="gpt3-1.3b", seq_length=None))
    assert "--normalization=LayerNorm" in args
    assert "--position-embedding-type=learned_absolute" in args
    assert not any(a.startswith(("--rotary-base", "--disable-bias", "--swiglu")) for a in args)
    assert "--tokenizer-model=openai-community/gpt2" in args
    assert not any(a.startswith("--make-vocab-size-divisible-by") for a in args)  # odd: padded


@pytest.mark.parametrize(
    ("vocab", "tp", "divisor"),
    [(128256, 1, 128), (128256, 8, 32), (32000, 8, 32), (32000, 2, 128), (50257, 1, None)],
)
def test_vocab_divisor_keeps_the_planned_vocabulary(vocab: int, tp: int, divisor: int) -> None:
    assert vocab_divisor(vocab, tp) == divisor


def test_model_without_tokenizer_gets_the_null_tokenizer(lab_design: Design) -> None:
    arch = lab_design.catalog.models["llama3-8b"].model_copy(update={"tokenizer": None})
    args = megatron_args(_with_workload(lab_design, model=arch))
    assert "--tokenizer-type=NullTokenizer" in args
    assert "--vocab-size=128256" in args
    design = _with_workload(lab_design, model=arch)
    script = {f.path: f.content for f in render(design, ["slurm"])}["slurm/train.sbatch"]
    assert "# The model names no tokenizer" in script


def test_run_shorter_than_the_warm_up_is_refused(lab_design: Design) -> None:
    with pytest.raises(GenerateError, match="warm-up"):
        megatron_args(_with_workload(lab_design, tokens_b=1))


def test_fsdp2_with_pipeline_parallelism_is_refused(lab_design: Design) -> None:
    assert lab_design.job is not None and lab_design.job.pp > 1
    with pytest.raises(GenerateError, match="FSDP2"):
        megatron_args(_with_workload(lab_design, zero_stage=3))


def test_fsdp2_shards_parameters_and_keeps_cuda_connections(lab_design: Design) -> None:
    fsdp = _replanned(lab_design, zero_stage=3, pipeline_parallel=1)
    args = megatron_args(fsdp)
    assert "--use-torch-fsdp2" in args and "--use-distributed-optimizer" not in args
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in dict(launch_plan(fsdp, 1).nccl_env)


def test_tensor_parallel_job_limits_cuda_connections(lab_design: Design) -> None:
    env = dict(launch_plan(lab_design, 1).nccl_env)
    assert env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    data_parallel = _replanned(lab_design, tensor_parallel=1, global_batch=96)
    assert "CUDA_DEVICE_MAX_CONNECTIONS" not in dict(launch_plan(data_parallel, 1).nccl_env)


@pytest.mark.parametrize(
    ("changes", "present", "absent"),
    [
        ({"precision": "fp8"}, ["--bf16", "--fp8-format=hybrid"], ["--fp16"]),
        (
            {"precision": "mxfp8"},
            ["--bf16", "--fp8-format=e4m3", "--fp8-recipe=mxfp8"],
            ["--fp8-format=hybrid", "--fp4-format=e2m1"],
        ),
        (
            {"precision": "nvfp4"},
            ["--bf16", "--fp4-format=e2m1", "--fp4-recipe=nvfp4"],
            ["--fp8-format=hybrid", "--fp8-format=e4m3"],
        ),
        ({"precision": "fp16"}, ["--fp16"], ["--bf16"]),
        (
            {"recompute": "full"},
            ["--recompute-granularity=full", "--recompute-method=uniform"],
            ["--recompute-granularity=selective"],
        ),
        ({"recompute": "none"}, [], ["--recompute-granularity=selective"]),
        ({"seq_length": 4096}, ["--seq-length=4096", "--max-position-embeddings=8192"], []),
    ],
)
def test_megatron_args_follow_the_workload(
    lab_design: Design, changes: dict[str, object], present: list[str], absent: list[str]
) -> None:
    args = megatron_args(_with_workload(lab_design, **changes))
    assert all(flag in args for flag in present), args
    assert not any(flag in args for flag in absent), args


def test_job_script_passes_the_model_flags(lab_design: Design) -> None:
    script = {f.path: f.content for f in render(lab_design, ["slurm"])}["slurm/train.sbatch"]
    assert "    --num-layers=32 \\\n" in script
    assert "    --recompute-granularity=selective \\\n" in script


def test_uneven_middle_pipeline_stages_are_refused(lab_design: Design) -> None:
    design = _with_workload(lab_design, pipeline_parallel=4, pipeline_layers=[7, 8, 9, 8])
    with pytest.raises(GenerateError, match="pipeline_layers"):
        megatron_args(design)


def test_cli_warns_when_hca_names_are_assumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = tmp_path / "hgx.yaml"
    spec.write_text((SPECS / "lab-leaf-spine.yaml").read_text().replace("dgx-h100", "hgx-h100"))
    assert main(["generate", str(spec), "-o", str(tmp_path / "out"), "--only", "slurm"]) == 0
    err = capsys.readouterr().err
    assert "warning: slurm: node 'hgx-h100' has no published HCA names" in err
