"""The input embedding on the first pipeline stage: an index lookup, or a one-hot matmul.

Most stacks look the token table up by index: the forward writes ``tokens x hidden``
activations and the backward scatters their gradient into the table (memory-bound,
:func:`clusterforge.perf.stage.embedding_s`). The JAX stacks the ``maxtext`` stack stands for
run every table lookup as a matmul of a one-hot encoding with the table
(``Stack.embedding_onehot``):

- MaxText's ``Embed`` with ``use_iota_embed``: ``one_hot = inputs[..., None] == iota`` in the
  compute dtype, then ``jnp.dot(one_hot, embedding)`` (``MaxText/layers/embeddings.py``,
  AI-Hypercomputer/maxtext at efb6d9e4a and 8e55ab1). Every MaxText GPU recipe of the
  ``maxtext`` runs sets it: ``use_iota_embed=true`` in NVIDIA/dgxc-benchmarking
  ``maxtext/configure.sh`` (35a9aec, 143b90d, 8f5cbb3, 741c886) and in MaxText's A3 scripts
  ``MaxText/configs/a3/llama_2_7b/*vm.sh`` (efb6d9e4a); the table is the same class for
  learned positions.
- Paxml's GPT configurations: ``TransformerLmSpmdAdam`` sets ``EMBEDDING_LOOKUP_STYLE =
  'matmul'`` (``paxml/tasks/lm/params/c4.py``), applied to the tied softmax's
  ``emb_lookup`` (``jax.nn.one_hot(ids, num_classes)`` then an einsum with the table) and
  to the learned positions (``TrainablePositionalEmbedding``, ``lookup_style = 'matmul'``),
  praxis ``layers/embedding_softmax.py`` (nvjax-svc-0/praxis at 5c5d5d3, 2024-03-03).

Priced per table (the vocabulary, and the sequence positions when they are learned): the
forward GEMM ``tokens x hidden x rows`` in BF16, the table's weight gradient ``rows x hidden
x tokens`` in the backward (the one-hot of integer ids has no gradient of its own), and the
BF16 one-hot itself: written and read by the forward GEMM, read again by the weight
gradient (XLA materialises it for cuBLAS). A vocabulary sharded over TP is looked up by
each rank on its ``V / t`` rows, as the output layer is. Not priced: the one-hot kept in
HBM between the forward and the backward (``2 x tokens x rows`` bytes).
"""

from __future__ import annotations

from clusterforge.catalog import ModelArch
from clusterforge.perf.parallel import ParallelPlan, tokens_per_gpu
from clusterforge.perf.roofline import GpuPerf, gemm_time_s, load_constants, memory_time_s
from clusterforge.perf.stack import Stack
from clusterforge.perf.stage import embedding_s

__all__ = ["embedding_times", "onehot_table_rows"]

# Bytes per one-hot element: the forward writes it and its GEMM reads it (2 + 2), the
# weight gradient reads it again (2), BF16.
ONEHOT_FORWARD_BYTES = 4.0
ONEHOT_BACKWARD_BYTES = 2.0


def onehot_table_rows(arch: ModelArch, plan: ParallelPlan) -> tuple[float, ...]:
    """Rows of each table looked up by one-hot matmul on one GPU: the vocabulary (its TP
    shard) and, with learned positions, the sequence positions."""
    rows: tuple[float, ...] = (arch.vocab_size / plan.layout.tp,)
    if arch.position_embedding == "learned":
        rows += (float(plan.seq_length),)
    return rows


def embedding_times(
    arch: ModelArch, plan: ParallelPlan, perf: GpuPerf, stack: Stack
) -> tuple[float, float]:
    """Forward and backward seconds per micro-batch of the input embedding (first stage)."""
    if not stack.embedding_onehot:
        lookup = embedding_s(
            arch, plan, perf.hbm_gbyte_per_s * 1e9 * load_constants().hbm_efficiency
        )
        return lookup / 3, 2 * lookup / 3
    bf16 = perf.at_bf16()
    tokens = tokens_per_gpu(plan)
    forward = backward = 0.0
    for rows in onehot_table_rows(arch, plan):
        onehot = tokens * rows
        forward += gemm_time_s(tokens, arch.hidden_size, rows, bf16)
        forward += memory_time_s(ONEHOT_FORWARD_BYTES * onehot, bf16)
        backward += gemm_time_s(rows, arch.hidden_size, tokens, bf16)
        backward += memory_time_s(ONEHOT_BACKWARD_BYTES * onehot, bf16)
    return forward, backward
