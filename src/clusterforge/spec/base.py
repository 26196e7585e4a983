"""Shared vocabulary of the spec: literal types, range limits and the section base model."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
)

Topology = Literal[
    "rail-optimized", "leaf-spine", "fat-tree", "dragonfly", "rail-only", "single-switch"
]
Cooling = Literal["air", "rear-door", "direct-to-chip", "immersion"]
SpareAttach = Literal["spare-ports", "spare-pool", "counted"]

# Upper bounds of the spec's ranges.  Every numeric field has a physical range so that an
# absurd value is refused at the boundary instead of costing minutes downstream.  GPUs: 2^20
# (1,048,576), five times the largest training cluster announced (xAI Colossus: 100,000 H100
# being doubled to 200,000, NVIDIA press release 2024-10-28).

MAX_GPUS = 2**20
MAX_LAYERS = 1000

# A custom model's dimensions: each admits the largest published models several times over
# (Llama 3.1 405B: 126 layers, hidden 16,384, 128 heads, vocab 128,256, Llama Team 2024
# Table 3; DeepSeek-V3: 256 routed experts with top-8, DeepSeek-AI 2024 §2.1).
MODEL_LIMITS: dict[str, int] = {
    "num_layers": MAX_LAYERS,
    "hidden_size": 131_072,
    "num_heads": 4096,
    "num_kv_heads": 4096,
    "ffn_hidden_size": 1_048_576,
    "vocab_size": 4_194_304,
    "seq_length": 2**24,
    "num_experts": 4096,
    "top_k": 256,
}

__all__ = [
    "MAX_GPUS",
    "MAX_LAYERS",
    "MODEL_LIMITS",
    "Cooling",
    "Section",
    "SpareAttach",
    "Topology",
]


class Section(BaseModel):
    # Infinity and NaN are refused: no physical quantity here is unbounded, and JSON (the
    # design.json output) cannot carry them (RFC 8259 §6).
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)
