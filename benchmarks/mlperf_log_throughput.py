"""Training throughput (tokens/s per GPU) from MLPerf Training MLLOG result logs.

Reads the ``result_*.txt`` files of one system's benchmark directory in a git clone of an
``mlcommons/training_results_vX.Y`` repository and prints, per run and as the median over the
runs, tokens/s per GPU measured over training intervals only (evaluation and initialisation
excluded). The rule, the same one ``validation/pub_mlperf_training_llm.toml`` states:

* ``blocks`` (GPT-3 logs of v3.1 to v4.1): where the log has at least two
  ``block_start``/``block_stop`` intervals (the training between two evaluations), the
  tokens of every block after the first (``epoch_count``, in tokens in these logs) divided
  by those blocks' summed wall time (``time_ms``).
* ``steps`` (GPT-3 logs of v3.0, whose one block spans the whole run with the evaluations
  inside; Llama 3.1 logs of v5.0 and v5.1, whose blocks carry a ``samples_count`` that is
  0 or not the block's size): ``global_batch_size x max_sequence_length`` over the median
  of the per-step ``tracked_stats`` timings (``train_step_timing``,
  ``train_step_timing in s`` or ``train_step_time``, seconds per step) after the first
  logged step.

Usage: ``python benchmarks/mlperf_log_throughput.py GIT_DIR RESULTS_DIR GPUS [blocks|steps]``
"""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
from typing import Any

STEP_KEYS = ("train_step_timing", "train_step_timing in s", "train_step_time")


def _git(git_dir: str, *args: str) -> str:
    done = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def mllog_events(text: str) -> list[dict[str, Any]]:
    """The ``:::MLLOG`` events of one log, in order."""
    marker = ":::MLLOG "
    return [
        json.loads(ln[ln.find(marker) + len(marker) :]) for ln in text.splitlines() if marker in ln
    ]


def _value(events: list[dict[str, Any]], key: str) -> Any:
    return next(e["value"] for e in events if e["key"] == key)


def blocks_tokens_per_s(events: list[dict[str, Any]]) -> float | None:
    """Tokens per second over the training blocks after the first, or None below two blocks."""
    blocks: list[tuple[float, float]] = []
    start = None
    for event in events:
        if event["key"] == "block_start":
            start = event
        elif event["key"] == "block_stop" and start is not None:
            if "epoch_count" not in start["metadata"]:
                return None
            size = float(start["metadata"]["epoch_count"])
            blocks.append(((event["time_ms"] - start["time_ms"]) / 1000.0, size))
            start = None
    if len(blocks) < 2:
        return None
    return sum(size for _, size in blocks[1:]) / sum(t_s for t_s, _ in blocks[1:])


def steps_tokens_per_s(events: list[dict[str, Any]]) -> float | None:
    """Tokens per second from the median logged step time after the first, or None."""
    steps_s = [
        e["value"][key]
        for e in events
        if e["key"] == "tracked_stats"
        for key in STEP_KEYS
        if key in e["value"]
    ]
    if len(steps_s) < 2:
        return None
    tokens = _value(events, "global_batch_size") * _value(events, "max_sequence_length")
    return float(tokens) / statistics.median(steps_s[1:])


def main(argv: list[str]) -> None:
    git_dir, results_dir, gpus = argv[0], argv[1].rstrip("/"), int(argv[2])
    method = argv[3] if len(argv) > 3 else "blocks"
    names = _git(git_dir, "ls-tree", "--name-only", "HEAD", results_dir + "/").split()
    per_gpu: list[float] = []
    for name in sorted(n for n in names if re.search(r"result_\d+\.txt$", n)):
        events = mllog_events(_git(git_dir, "show", f"HEAD:{name}"))
        rate = blocks_tokens_per_s(events) if method == "blocks" else steps_tokens_per_s(events)
        if rate is None:
            print(f"{name}: no {method} measurement")
            continue
        per_gpu.append(rate / gpus)
        print(f"{name}: {rate / gpus:.1f} tokens/s per GPU ({method})")
    if not per_gpu:
        return
    print(f"median of {len(per_gpu)} runs: {statistics.median(per_gpu):.1f} tokens/s per GPU")


if __name__ == "__main__":
    main(sys.argv[1:])
