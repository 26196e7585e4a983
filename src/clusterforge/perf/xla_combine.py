"""HSDP's replica all-reduces on unrolled XLA layers, merged by XLA's all-reduce combiner.

Under hybrid sharding on JAX (a mesh of a data axis across nodes and an FSDP axis inside
them, as MaxText's ``dcn_data_parallelism`` and ``ici_fsdp_parallelism``), the SPMD
partitioner reduces every weight's gradient in two all-reduces: one over the FSDP group
(made a reduce-scatter with its dynamic-slice by ``ReduceScatterCreator``), then one of the
shard over the data group (JAX 0.4.26, the partitioned module of a Llama-shaped model on
that mesh, ``clip_by_global_norm`` and AdamW as MaxText's ``train.py`` at efb6d9e4a
applies them). With the layers scanned, each layer's data-group all-reduce is one call
behind the next layer's backward (:func:`~clusterforge.perf.sharded.zero3_exposed_s`).

With the layers unrolled (MaxText ``scan_layers=false``), XLA's ``AllReduceCombiner``
merges those calls across layers: ``CombineInstructionsByKey``
(``xla/service/collective_combiner_utils.h``, openxla/xla) walks the computation in post
order and adds all-reduces of one key (the same replica groups) to a call until the next
would take it past ``--xla_gpu_all_reduce_combine_threshold_bytes``; a merged call starts
once every operand exists. In the partitioned module the data-group all-reduces are in post
order in the order of the flattened parameter tree, keys sorted as strings
(``layers_0, layers_1, layers_10, ..., layers_19, layers_2, ...``, then the output layer
and the embedding), not in the order the backward produces them, since every update waits
for the global gradient norm, whose sum visits the gradients in that order (the HLO text
of the dump is that post order: ``HloComputation::Print`` "Use post-order if order is not
specified"). So a call of many layers holds one the backward reaches late, and starts late.

:func:`merged_sync_s` prices that: the stage's weights in tree order
(:func:`parameter_tree`, MaxText's ``layers/models.py`` names at efb6d9e4a), each
gradient shard in ``grad_reduce_bytes``, merged greedily up to
``Stack.unrolled_all_reduce_combine_bytes``; each merged call issued once the layer that
produces its last member has finished its backward, one at a time on XLA's collective
stream, at the all-reduce time over the replica groups. What runs past the end of the
backward is exposed (the optimizer waits for the global norm); what overlaps the backward
slows it by ``overlap_interference`` as every overlapped collective does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from clusterforge.catalog import ModelArch
from clusterforge.perf.comm import CommModel
from clusterforge.perf.compute import LayerTimes, overlapped_s
from clusterforge.perf.parallel import ParallelPlan, shard_groups
from clusterforge.perf.stack import Stack

__all__ = [
    "MergedCall",
    "TreeTensor",
    "merged_calls",
    "merged_sync_s",
    "parameter_tree",
    "stage_calls",
]

MergeOrder = Literal["tree", "backward"]


@dataclass(frozen=True)
class TreeTensor:
    """One weight of the parameter tree: its path, parameters (unsharded, one TP rank) and
    the layers of backward after which its gradient exists (0: before the layers' backward,
    the final norm and the output layer; ``layers``: the embedding, after all of them)."""

    path: str
    params: float
    ready_layers: int


def parameter_tree(arch: ModelArch, layers: int) -> list[TreeTensor]:
    """The weights of an unrolled MaxText decoder in the flattened tree's order:
    ``decoder/decoder_norm``, ``decoder/layers_<i>`` with ``i`` sorted as a string (inside
    a layer: MLP, the two norms, attention key, out, query, value), ``decoder/logits_dense``
    (untied models), ``token_embedder``."""
    h, heads = arch.hidden_size, arch.num_heads
    head_dim = arch.head_dim or h // heads
    kv = arch.num_kv_heads or heads
    ffn = arch.ffn_hidden_size or 4 * h
    mlp = ["wi_0", "wi_1", "wo"] if arch.gated_mlp else ["wi", "wo"]
    per_layer = [(f"mlp/{m}", float(h * ffn)) for m in mlp] + [
        ("post_self_attention_layer_norm", float(h)),
        ("pre_self_attention_layer_norm", float(h)),
        ("self_attention/key", float(h * kv * head_dim)),
        ("self_attention/out", float(heads * head_dim * h)),
        ("self_attention/query", float(h * heads * head_dim)),
        ("self_attention/value", float(h * kv * head_dim)),
    ]
    out = [TreeTensor("decoder/decoder_norm", float(h), 0)]
    for i in sorted(range(layers), key=lambda k: f"layers_{k}"):
        # the backward runs the layers last to first: layer i's gradients exist once the
        # layers above it and itself are done
        out += [TreeTensor(f"decoder/layers_{i}/{n}", p, layers - i) for n, p in per_layer]
    if not arch.tied_embeddings:
        out.append(TreeTensor("decoder/logits_dense", float(h * arch.vocab_size), 0))
    out.append(TreeTensor("token_embedder", float(h * arch.vocab_size), layers))
    return out


@dataclass(frozen=True)
class MergedCall:
    """One merged all-reduce: its bytes, members, and the layers of backward before it."""

    size_bytes: float
    members: int
    ready_layers: int


def merged_calls(shards: list[tuple[float, int]], threshold_bytes: float) -> list[MergedCall]:
    """``CombineInstructionsByKey``'s greedy calls over ``(bytes, ready layers)`` in post
    order: a call closes before the member that would take it past the threshold, and a
    member above the threshold is a call of its own."""
    calls: list[MergedCall] = []
    size, count, ready = 0.0, 0, 0
    for nbytes, at in shards:
        if count and size + nbytes > threshold_bytes:
            calls.append(MergedCall(size, count, ready))
            size, count, ready = 0.0, 0, 0
        size, count, ready = size + nbytes, count + 1, max(ready, at)
    if count:
        calls.append(MergedCall(size, count, ready))
    return calls


def stage_calls(
    arch: ModelArch, plan: ParallelPlan, stack: Stack, layers: int, order: MergeOrder = "tree"
) -> list[MergedCall]:
    """The merged replica all-reduces of a stage of ``layers`` layers: every gradient shard
    (1 / shard group of the weight, ``grad_reduce_bytes`` each) in tree order, or in the
    order the backward produces them (``backward``, the contrast)."""
    shard_n = shard_groups(plan)[0].shape[1]
    shards = [
        (t.params / plan.layout.tp / shard_n * stack.grad_reduce_bytes, t.ready_layers)
        for t in parameter_tree(arch, layers)
    ]
    if order == "backward":
        shards.sort(key=lambda s: s[1])
    return merged_calls(shards, stack.unrolled_all_reduce_combine_bytes)


def merged_sync_s(
    arch: ModelArch,
    plan: ParallelPlan,
    comm: CommModel,
    stack: Stack,
    times: LayerTimes,
    layers: int,
    order: MergeOrder = "tree",
) -> float:
    """Exposed seconds per micro-batch of the merged replica all-reduces: past the end of
    the backward, plus ``overlap_interference`` on the part that overlaps it."""
    replicas: np.ndarray = shard_groups(plan)[1]
    unit_s = times.backward_s + times.recompute_s
    end_s = layers * unit_s
    t, inside, after = 0.0, 0.0, 0.0
    for call in stage_calls(arch, plan, stack, layers, order):
        start = max(t, call.ready_layers * unit_s)
        t = start + comm.collective_time_s("all_reduce", call.size_bytes, replicas)
        inside += max(0.0, min(t, end_s) - start)
        after = max(0.0, t - end_s)
    return after + overlapped_s(inside, inside)
