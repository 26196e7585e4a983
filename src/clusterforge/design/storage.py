"""Shared-storage sizing from the workload.

* checkpoint = parameters × 14 B (BF16 weights 2 B + FP32 master 4 B + Adam moments 8 B);
  writing it within ``checkpoint_write_s`` sets the aggregate write bandwidth;
* read bandwidth = GPUs × ``read_mbyte_per_s_per_gpu`` (Meta Llama 3: 2 TB/s sustained for
  16K GPUs ≈ 125 MB/s per GPU, arXiv 2407.21783);
* dataset = tokens × bytes per token id (2 B while the vocabulary fits 16 bits, else 4 B);
* capacity = kept checkpoints + dataset, with 20 % headroom for file-system fill limits;
* the block: a parallel file system by default; a single NFS server when one server meets
  every need (small clusters; NVIDIA's DGX BasePOD reference architecture serves 2-16 nodes
  from NFS-class storage).
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field

from clusterforge.catalog import Catalog, ModelArch, StorageBlock
from clusterforge.spec import ClusterSpec

__all__ = [
    "CHECKPOINT_BYTES_PER_PARAM",
    "StorageDesign",
    "model_arch",
    "model_params",
    "size_storage",
]

CHECKPOINT_BYTES_PER_PARAM = 14.0  # 2 (bf16 weights) + 4 (fp32 master) + 8 (Adam m, v)
CAPACITY_HEADROOM = 1.2


class StorageDesign(BaseModel):
    model_config = ConfigDict(frozen=True)
    block: StorageBlock
    num_blocks: int
    model_params: float = Field(description="Parameters of the workload model")
    checkpoint_tbyte: float
    dataset_tbyte: float
    required_capacity_tbyte: float
    required_read_gbyte_per_s: float
    required_write_gbyte_per_s: float
    capacity_tbyte: float
    read_gbyte_per_s: float
    write_gbyte_per_s: float
    checkpoint_write_s: float = Field(
        description="Time to write one checkpoint at full write bandwidth"
    )
    sized_by: str = Field(description="Which requirement set the number of blocks")


def model_arch(spec: ClusterSpec, catalog: Catalog) -> ModelArch | None:
    """The workload's model (None for a fabric-only spec)."""
    if spec.workload is None:
        return None
    model = spec.workload.model
    return catalog.models[model] if isinstance(model, str) else model


def model_params(arch: ModelArch) -> float:
    """Parameter count of a (possibly MoE, GQA, gated) decoder-only transformer.

    Per layer: attention q/o (2h²) + k/v (2·h·h_kv) and an MLP of 2 (or 3 when gated)
    h×ffn matrices per expert; plus input embedding (and output unless tied).  Norms and
    biases are < 0.1 % and left out.
    """
    h = arch.hidden_size
    kv = arch.num_kv_heads or arch.num_heads
    head_dim = arch.head_dim or h // arch.num_heads
    attn = 2 * h * arch.num_heads * head_dim + 2 * h * kv * head_dim
    ffn = arch.ffn_hidden_size or 4 * h
    mlp = (3 if arch.gated_mlp else 2) * h * ffn * arch.num_experts
    embed = arch.vocab_size * h * (1 if arch.tied_embeddings else 2)
    return float(arch.num_layers * (attn + mlp) + embed)


def _workload_state(spec: ClusterSpec, catalog: Catalog) -> tuple[float, float]:
    """(parameters, dataset TB) of the workload; a fabric-only spec has no checkpoint and
    only the dataset size it states."""
    w, arch = spec.workload, model_arch(spec, catalog)
    if w is None or arch is None:
        return 0.0, spec.storage.dataset_tbyte or 0.0
    params = w.params_b * 1e9 if w.params_b else model_params(arch)
    token_bytes = 2 if arch.vocab_size <= 65536 else 4
    return params, spec.storage.dataset_tbyte or w.tokens_b * 1e9 * token_bytes / 1e12


def _blocks_needed(block: StorageBlock, cap_tb: float, read: float, write: float) -> dict[str, int]:
    return {
        "capacity": math.ceil(cap_tb / block.usable_tbyte),
        "read bandwidth": math.ceil(read / block.read_gbyte_per_s),
        "write bandwidth": math.ceil(write / block.write_gbyte_per_s),
    }


def _choose_block(
    spec: ClusterSpec, catalog: Catalog, need: tuple[float, float, float]
) -> tuple[StorageBlock, dict[str, int]]:
    """The spec's block when it names one; otherwise the cheapest of the default parallel
    file system and any single server (NFS) that meets every need alone: an NFS server is
    one namespace on one box, so it never scales out by count."""
    default = catalog.storage[spec.storage.block]
    options = [(default, _blocks_needed(default, *need))]
    if "block" not in spec.storage.model_fields_set:
        for block in catalog.storage:
            counts = _blocks_needed(block, *need)
            if not block.parallel and max(counts.values()) <= 1:
                options.append((block, counts))
    return min(options, key=lambda o: max(1, max(o[1].values())) * o[0].price_usd)


def size_storage(spec: ClusterSpec, catalog: Catalog, num_gpus: int) -> StorageDesign:
    """Blocks for the workload's capacity, read and write needs (the largest count wins)."""
    s = spec.storage
    params, dataset_tb = _workload_state(spec, catalog)
    ckpt_tb = params * CHECKPOINT_BYTES_PER_PARAM / 1e12
    need_cap = s.capacity_tbyte or (s.checkpoints_kept * ckpt_tb + dataset_tb) * CAPACITY_HEADROOM
    need_read = s.read_gbyte_per_s or num_gpus * s.read_mbyte_per_s_per_gpu / 1000
    need_write = s.write_gbyte_per_s or ckpt_tb * 1000 / s.checkpoint_write_s
    block, counts = _choose_block(spec, catalog, (need_cap, need_read, need_write))
    sized_by = max(counts, key=lambda k: counts[k])
    n = max(1, counts[sized_by])
    if s.num_blocks is not None:
        n, sized_by = s.num_blocks, "storage.num_blocks (fixed)"
    write = n * block.write_gbyte_per_s
    return StorageDesign(
        block=block,
        num_blocks=n,
        model_params=params,
        checkpoint_tbyte=ckpt_tb,
        dataset_tbyte=dataset_tb,
        required_capacity_tbyte=need_cap,
        required_read_gbyte_per_s=need_read,
        required_write_gbyte_per_s=need_write,
        capacity_tbyte=n * block.usable_tbyte,
        read_gbyte_per_s=n * block.read_gbyte_per_s,
        write_gbyte_per_s=write,
        checkpoint_write_s=ckpt_tb * 1000 / write,
        sized_by=sized_by,
    )
