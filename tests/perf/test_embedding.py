"""The input embedding: an index lookup (memory-bound), or, on the JAX stacks, one-hot matmuls.

MaxText's GPU recipes set ``use_iota_embed=true`` (``jnp.dot(one_hot, embedding)``,
``MaxText/layers/embeddings.py``) and Paxml's GPT configurations look their tied table and
learned positions up with ``lookup_style = 'matmul'`` (praxis ``embedding_softmax.py``):
each test fails on a model that prices those lookups as an index gather.
"""

from __future__ import annotations

from dataclasses import replace

from clusterforge.job import JobLayout
from clusterforge.perf import ParallelPlan, predict_step
from clusterforge.perf.embedding import embedding_times, onehot_table_rows
from clusterforge.perf.roofline import gemm_time_s, gpu_perf, load_constants
from clusterforge.perf.stack import STACK_NAMES, stack_named
from clusterforge.perf.stage import embedding_s

MAXTEXT = stack_named("maxtext")


def _plan(tp: int = 1) -> ParallelPlan:
    """Per-device batch 2 at 4,096 tokens, sharded data parallelism over 64 GPUs."""
    return ParallelPlan(
        JobLayout(dp=64 // tp, tp=tp),
        global_batch=128 // tp,
        micro_batch=2,
        seq_length=4096,
        recompute="selective",
        zero_stage=3,
    )


def test_only_the_jax_stack_looks_embeddings_up_by_one_hot_matmul() -> None:
    assert MAXTEXT.embedding_onehot
    others = [stack_named(n) for n in STACK_NAMES if n != "maxtext"]
    assert not any(s.embedding_onehot for s in others)


def test_index_lookup_keeps_the_memory_bound_gather_and_scatter(models, h100) -> None:
    arch, plan, perf = models["llama2-70b"], _plan(), gpu_perf(h100, "bf16")
    forward, backward = embedding_times(arch, plan, perf, stack_named("torchtitan"))
    hbm = perf.hbm_gbyte_per_s * 1e9 * load_constants().hbm_efficiency
    lookup = embedding_s(arch, plan, hbm)
    assert forward == lookup / 3 and backward == 2 * lookup / 3


def test_one_hot_lookup_is_a_vocabulary_gemm_each_way(models, h100) -> None:
    """Forward: tokens x hidden x V; backward: the table's weight gradient V x hidden x
    tokens, both in BF16 even in FP8 runs; plus the one-hot's HBM traffic, a fraction of the
    GEMMs. Either way far above the index lookup it replaces."""
    arch, plan = models["llama2-70b"], _plan()
    perf = gpu_perf(h100, "fp8")
    bf16 = perf.at_bf16()
    tokens = plan.micro_batch * plan.seq_length
    forward, backward = embedding_times(arch, plan, perf, MAXTEXT)
    gemm_f = gemm_time_s(tokens, arch.hidden_size, arch.vocab_size, bf16)
    gemm_b = gemm_time_s(arch.vocab_size, arch.hidden_size, tokens, bf16)
    assert gemm_f < forward < 1.5 * gemm_f
    assert gemm_b < backward < 1.5 * gemm_b
    index_f, index_b = embedding_times(arch, plan, perf, replace(MAXTEXT, embedding_onehot=False))
    assert forward > 10 * index_f and backward > 5 * index_b


def test_learned_positions_add_a_table_and_tp_splits_the_vocabulary(models) -> None:
    gpt3, llama = models["gpt3-175b"], models["llama2-70b"]
    assert onehot_table_rows(llama, _plan()) == (llama.vocab_size,)
    assert onehot_table_rows(gpt3, _plan()) == (gpt3.vocab_size, 4096.0)
    assert onehot_table_rows(gpt3, _plan(tp=8)) == (gpt3.vocab_size / 8, 4096.0)


def test_one_hot_lookup_lengthens_a_maxtext_step_by_its_own_time(models, h100, h100_comm) -> None:
    arch, plan = models["llama2-70b"], _plan()
    index = replace(MAXTEXT, embedding_onehot=False)
    with_onehot = predict_step(arch, plan, h100, h100_comm, 8, MAXTEXT)
    without = predict_step(arch, plan, h100, h100_comm, 8, index)
    perf = gpu_perf(h100, "bf16")
    added = sum(embedding_times(arch, plan, perf, MAXTEXT))
    removed = sum(embedding_times(arch, plan, perf, index))
    step_delta = with_onehot.step_time_s - without.step_time_s
    assert abs(step_delta - (added - removed)) < 1e-3 * added
