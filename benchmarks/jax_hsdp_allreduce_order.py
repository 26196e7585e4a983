"""The order of HSDP's cross-replica gradient all-reduces in JAX's partitioned module.

Builds a small Llama-shaped decoder of 12 unrolled layers (each layer's MLP a different
width, so every all-reduce names its layer), shards it as MaxText's ``base.yml`` at
efb6d9e4a shards Llama's weights on a mesh ``('data', 'fsdp')`` (``embed`` over ``fsdp``,
the batch over both), takes one AdamW step after ``optax.clip_by_global_norm`` (MaxText
``train.py`` at efb6d9e4a), compiles it for ``data x 8`` CPU host devices and prints, from
XLA's ``after_spmd-partitioning`` dump, the all-reduces over the data groups in the dump's
order (XLA prints an unscheduled computation in post order, ``HloComputation::Print``):
the order in which ``CombineInstructionsByKey`` meets them
(:mod:`clusterforge.perf.xla_combine`).

Needs ``jax[cpu]==0.4.26`` and ``optax`` (the release of the MaxText README's date; not a
project dependency). With JAX 0.4.26 it prints the layers as ``0 1 10 11 2 3 ... 9`` and
then the embedding: the parameter tree's order, not the backward's.

    python benchmarks/jax_hsdp_allreduce_order.py [--data 2]
"""

from __future__ import annotations

import argparse
import glob
import os
import re
import tempfile

__all__ = ["LAYERS", "main", "order_from_dump"]

LAYERS, HIDDEN, MLP, VOCAB = 12, 256, 512, 480


def _build(data: int):  # type: ignore[no-untyped-def]
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax
    from jax.sharding import Mesh, NamedSharding
    from jax.sharding import PartitionSpec as P

    mesh = Mesh(np.array(jax.devices()).reshape(data, 8), ("data", "fsdp"))
    specs = {"token_embedder": P(None, "fsdp"), "norm": P("fsdp"), "logits_dense": P("fsdp", None)}
    specs |= {"wq": P("fsdp", None), "wo": P(None, "fsdp"), "wi": P("fsdp", None)}
    specs["wo_mlp"] = P(None, "fsdp")
    params = {"token_embedder": jnp.zeros((VOCAB, HIDDEN)), "decoder": {}}
    dec = params["decoder"]
    dec["norm"], dec["logits_dense"] = jnp.ones((HIDDEN,)), jnp.zeros((HIDDEN, VOCAB))
    for i in range(LAYERS):
        width = MLP + 32 * i
        dec[f"layers_{i}"] = {
            "norm": jnp.ones((HIDDEN,)),
            "wq": jnp.zeros((HIDDEN, HIDDEN)),
            "wo": jnp.zeros((HIDDEN, HIDDEN)),
            "wi": jnp.zeros((HIDDEN, width)),
            "wo_mlp": jnp.zeros((width, HIDDEN)),
        }
    shard = jax.tree_util.tree_map_with_path(
        lambda path, _: NamedSharding(mesh, specs[path[-1].key]), params
    )
    batch = NamedSharding(mesh, P(("data", "fsdp"), None, None))
    return jax, jnp, optax, mesh, jax.device_put(params, shard), batch


def _step(data: int):  # type: ignore[no-untyped-def]
    jax, jnp, optax, mesh, params, batch = _build(data)
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    def loss(p, tok):  # type: ignore[no-untyped-def]
        bf = lambda a: a.astype(jnp.bfloat16)  # noqa: E731
        x = jax.lax.with_sharding_constraint(bf(p["token_embedder"])[tok], batch)
        for i in range(LAYERS):
            w = p["decoder"][f"layers_{i}"]
            x = x + jnp.tanh(x * bf(w["norm"]) @ bf(w["wq"])) @ bf(w["wo"])
            x = x + jax.nn.silu(x * bf(w["norm"]) @ bf(w["wi"])) @ bf(w["wo_mlp"])
            x = jax.lax.with_sharding_constraint(x, batch)
        logits = (x * bf(p["decoder"]["norm"])) @ bf(p["decoder"]["logits_dense"])
        return jnp.mean(jax.nn.logsumexp(logits.astype(jnp.float32), -1))

    opt, clip = optax.adamw(1e-3), optax.clip_by_global_norm(1.0)

    def step(p, o, tok):  # type: ignore[no-untyped-def]
        value, grads = jax.value_and_grad(loss)(p, tok)
        grads, _ = clip.update(grads, clip.init(p), None)
        updates, o = opt.update(grads, o, p)
        return optax.apply_updates(p, updates), o, value

    tok = jax.device_put(
        jnp.zeros((data * 16, 64), jnp.int32), NamedSharding(mesh, P(("data", "fsdp"), None))
    )
    jax.jit(step).lower(params, jax.jit(opt.init)(params), tok).compile()


def order_from_dump(text: str, data: int) -> list[str]:
    """The data-group all-reduces of a partitioned module's text, in its order: the layer
    whose MLP width a weight carries (``L<i>``), ``embedding`` (the vocabulary's width) or
    ``other`` (equal-shaped weights)."""
    group = "{" + ",".join(str(8 * d) for d in range(data)) + "}"
    out = []
    for line in text.splitlines():
        if " all-reduce(" not in line or f"replica_groups={{{group}" not in line:
            continue
        dims = [int(d) for d in re.findall(r"bf16\[(\d+),(\d+)\]", line)[0]]
        widths = [(d - MLP) // 32 for d in dims if d >= MLP and (d - MLP) % 32 == 0]
        if VOCAB in dims:
            out.append("embedding")
        else:
            out.append(f"L{widths[0]}" if widths and widths[0] < LAYERS else "other")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=int, default=2, help="replicas (data axis)")
    args = parser.parse_args()
    dump = tempfile.mkdtemp()
    os.environ["XLA_FLAGS"] = (
        f"--xla_force_host_platform_device_count={8 * args.data} --xla_dump_to={dump} "
        "--xla_dump_hlo_pass_re=spmd --xla_dump_hlo_as_text"
    )
    _step(args.data)
    path = sorted(glob.glob(f"{dump}/*jit_step*after_spmd-partitioning*"))[-1]
    with open(path) as f:
        order = order_from_dump(f.read(), args.data)
    print(" ".join(dict.fromkeys(o for o in order if o != "other")))
    print(f"{len(order)} all-reduces over the data groups; last: {order[-1]}")


if __name__ == "__main__":
    main()
