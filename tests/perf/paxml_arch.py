"""Paxml's GPT5BBase as a model architecture, shared by the XLA-stack tests."""

from __future__ import annotations

from clusterforge.catalog import ModelArch

__all__ = ["GPT5B"]

# Paxml's GPT5BBase (nvjax-svc-0/paxml configs.py): 24 layers of 4,096, MLP 16,384.
GPT5B = ModelArch(
    id="test-gpt5b",
    name="GPT5BBase-like",
    num_layers=24,
    hidden_size=4096,
    num_heads=32,
    ffn_hidden_size=16384,
    vocab_size=50304,
    seq_length=2048,
    position_embedding="learned",
    normalization="layernorm",
    linear_bias=True,
    tied_embeddings=True,
)
