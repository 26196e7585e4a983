"""Time to refuse each hostile spec (one-line error, exit 1), in-process.

Run by hand: ``python benchmarks/spec_refusals.py``.  Target: every refusal well under a
second (they stop at validation).  The first line warms the imports and is not counted.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
import time
from pathlib import Path

from clusterforge.cli.main import main

BASE = "num_gpus: 64\nnode: dgx-h100\n"
BOMB = "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]\n" for i in range(1, 10))
CASES = {
    "storage.num_blocks 1e8": "storage: {num_blocks: 100000000}",
    "checkpoints_kept 1e9": "storage: {checkpoints_kept: 1000000000}",
    "dataset_tbyte 1e30": "storage: {dataset_tbyte: 1.0e+30}",
    "capacity_tbyte 1e9": "storage: {capacity_tbyte: 1.0e+9}",
    "read_gbyte_per_s 1e12": "storage: {read_gbyte_per_s: 1.0e+12}",
    "tokens_b 1e15": "workload: {tokens_b: 1.0e+15}",
    "tokens_b .inf": "workload: {tokens_b: .inf}",
    "1e6 layers x 1e6 hidden": "workload: {model: {num_layers: 1000000, hidden_size: 1000000, "
    "num_heads: 8, vocab_size: 1000}}",
    "nics_per_node 100000": "network: {nics_per_node: 100000}",
    "breaker_a 0.01": "facility: {breaker_a: 0.01}",
    "voltage_v 1": "facility: {voltage_v: 1}",
    "1e9 GPUs": "workload: {global_batch: 125000000}\nnum_gpus: 1000000000",
    "nesting 5,000 deep": "name: " + "[" * 5000 + "]" * 5000,
    "alias bomb (9^10)": 'a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", '
    '"lol"]\n' + BOMB + "name: *a9",
    "duplicate key": "num_gpus: 128",
    "5,000-digit integer": "storage: {checkpoints_kept: " + "9" * 5000 + "}",
    "checkpoint every 1 ns": "reliability: {checkpoint_interval_s: 1.0e-9}",
    "markup key": '"[/red]": 1',
}


def refuse(text: str, folder: Path) -> tuple[int, float, str]:
    spec = folder / "spec.yaml"
    spec.write_text(text)
    err = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["plan", str(spec), "-o", str(folder / "out")])
    return code, time.perf_counter() - start, err.getvalue().strip()


def main_() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        refuse(BASE + "num_gpus: 0\n", folder)  # warm the imports
        print(f"{'case':28s} {'exit':>4s} {'ms':>8s}  message")
        for name, extra in CASES.items():
            text = BASE.replace("num_gpus: 64\n", "") if "1e9 GPUs" in name else BASE
            code, elapsed_s, message = refuse(text + extra + "\n", folder)
            print(f"{name:28s} {code:4d} {elapsed_s * 1000:8.1f}  {message[:90]}")


if __name__ == "__main__":
    main_()
