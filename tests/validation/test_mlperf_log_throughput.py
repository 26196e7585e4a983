"""The MLLOG throughput rule of validation/pub_mlperf_training_llm.toml on synthetic logs."""

from __future__ import annotations

import json

from benchmarks.mlperf_log_throughput import (
    blocks_tokens_per_s,
    mllog_events,
    steps_tokens_per_s,
)


def _line(key: str, time_ms: int, value: object = None, **metadata: object) -> str:
    event = {"time_ms": time_ms, "key": key, "value": value, "metadata": metadata}
    return ":::MLLOG " + json.dumps(event)


def _log(lines: list[str]) -> list[dict[str, object]]:
    head = [_line("global_batch_size", 0, 4), _line("max_sequence_length", 0, 100)]
    return mllog_events("\n".join(["noise", *head, *lines]))


def test_blocks_skip_the_first_and_the_evaluations() -> None:
    events = _log(
        [
            _line("block_start", 1_000, epoch_count=800),
            _line("block_stop", 11_000),  # first block (warm-up): left out
            _line("eval_start", 11_000),
            _line("eval_stop", 50_000),  # evaluation: outside every block
            _line("block_start", 50_000, epoch_count=800),
            _line("block_stop", 52_000),
            _line("block_start", 60_000, epoch_count=1_200),
            _line("block_stop", 62_000),
        ]
    )
    assert blocks_tokens_per_s(events) == 2_000 / 4.0


def test_blocks_need_two_blocks_and_token_counts() -> None:
    one = _log([_line("block_start", 0, epoch_count=8), _line("block_stop", 1_000)])
    assert blocks_tokens_per_s(one) is None
    samples = [_line("block_start", 0, samples_count=8), _line("block_stop", 1_000)]
    assert blocks_tokens_per_s(_log(samples * 2)) is None


def test_steps_take_the_median_after_the_first() -> None:
    steps = [9.0, 2.0, 2.0, 4.0]  # the first logged step (warm-up) is left out
    events = _log([_line("tracked_stats", i, {"train_step_time": s}) for i, s in enumerate(steps)])
    assert steps_tokens_per_s(events) == 4 * 100 / 2.0
    v41 = _log([_line("tracked_stats", i, {"train_step_timing in s": 5.0}) for i in range(3)])
    assert steps_tokens_per_s(v41) == 4 * 100 / 5.0
