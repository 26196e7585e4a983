"""Parsers for the outputs of the tools an acceptance run drives.

Each takes the tool's own text (or JSON) and returns plain data; a malformed output raises
:class:`AcceptError` naming the tool and what was missing, never a traceback.

- nccl-tests (github.com/NVIDIA/nccl-tests, ``doc/PERFORMANCE.md``): one row per size with
  out-of-place and in-place time (us), algbw and busbw (GB/s) and #wrong.
- perftest ``ib_*_bw`` (github.com/linux-rdma/perftest): the row under
  ``#bytes #iterations BW peak BW average MsgRate``; units in the header (Gb/sec with
  ``--report_gbits``, else MB/sec).
- perftest ``ib_*_lat``: the row under ``#bytes #iterations t_min[usec] t_max[usec]
  t_typical[usec] ...`` (perftest prints half the round trip; t_typical is the median;
  iteration runs add t_avg, t_stdev and the 99 % / 99.9 % percentiles).  Warnings the tool
  prints between the header and the row ("Conflicting CPU frequency values detected") are
  skipped.
- fio ``--output-format=json``: ``jobs[].read|write.clat_ns.percentile`` and ``bw`` (KiB/s).
- iperf3 ``-J``: ``end.sum_received.bits_per_second``.
- ``dcgmi diag`` table: one ``| test | result |`` row per test (DCGM user guide).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from clusterforge.errors import AcceptError

__all__ = [
    "DcgmRow",
    "NcclRow",
    "parse_dcgmi_diag",
    "parse_fio",
    "parse_iperf3",
    "parse_nccl_tests",
    "parse_perftest_bw",
    "parse_perftest_lat",
]


@dataclass(frozen=True)
class NcclRow:
    """One size of an nccl-tests sweep (out-of-place figures, as nccl-tests reports)."""

    size_bytes: int
    count: int
    dtype: str
    time_us: float
    algbw_gbyte_per_s: float
    busbw_gbyte_per_s: float
    wrong: int | None  # None when the tool printed N/A (validation off)

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


_NCCL_ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)"
)


def parse_nccl_tests(text: str) -> list[NcclRow]:
    """Rows of an nccl-tests run (all_reduce_perf, all_gather_perf, ...)."""
    rows = []
    for line in text.splitlines():
        match = _NCCL_ROW.match(line)
        if not match or line.lstrip().startswith("#"):
            continue
        wrong = match[9]
        rows.append(
            NcclRow(
                size_bytes=int(match[1]),
                count=int(match[2]),
                dtype=match[3],
                time_us=float(match[6]),
                algbw_gbyte_per_s=float(match[7]),
                busbw_gbyte_per_s=float(match[8]),
                wrong=int(wrong) if wrong.isdigit() else None,
            )
        )
    if not rows:
        raise AcceptError("nccl-tests: no result rows in the output (did the run fail?)")
    return rows


def parse_perftest_bw(text: str) -> dict[str, float]:
    """Average and peak bandwidth (Gb/s) and message size of an ``ib_*_bw`` report."""
    header = re.search(r"BW peak\[(Gb|MB)/sec\]", text)
    if header is None:
        raise AcceptError("perftest: no 'BW peak[...]' header in the output")
    lines = text[header.end() :].splitlines()
    for line in lines:
        fields = line.split()
        if len(fields) >= 4 and fields[0].isdigit():
            peak, average = float(fields[2]), float(fields[3])
            scale = 1.0 if header[1] == "Gb" else 8e-3  # MB/s -> Gb/s
            return {
                "size_bytes": float(fields[0]),
                "peak_gbit_per_s": peak * scale,
                "average_gbit_per_s": average * scale,
            }
    raise AcceptError("perftest: no result row under the bandwidth header")


_LAT_COLUMNS = {
    "t_min[usec]": "min_us",
    "t_max[usec]": "max_us",
    "t_typical[usec]": "typical_us",
    "t_avg[usec]": "avg_us",
    "t_stdev[usec]": "stdev_us",
    "99% percentile[usec]": "p99_us",
    "99.9% percentile[usec]": "p999_us",
}


def parse_perftest_lat(text: str) -> dict[str, float]:
    """Latency figures (µs, one way) of an ``ib_*_lat`` report, keyed ``typical_us`` etc."""
    header = re.search(r"^\s*#bytes\s+#iterations\s+(.*t_typical\[usec\].*)$", text, re.M)
    if header is None:
        raise AcceptError("perftest: no 't_typical[usec]' header in the latency output")
    columns = [c for c in re.split(r"\s{2,}|\t", header[1].strip()) if c]
    for line in text[header.end() :].splitlines():
        fields = line.split()
        if len(fields) >= 2 + len(columns) and fields[0].isdigit() and fields[1].isdigit():
            out = {"size_bytes": float(fields[0])}
            for column, value in zip(columns, fields[2:], strict=False):
                if column in _LAT_COLUMNS:
                    out[_LAT_COLUMNS[column]] = float(value)
            if "typical_us" in out:
                return out
    raise AcceptError("perftest: no result row under the latency header")


def _load_json(text: str, tool: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AcceptError(f"{tool}: output is not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict):
        raise AcceptError(f"{tool}: expected a JSON object")
    return data


def parse_fio(text: str) -> dict[str, float]:
    """Read/write bandwidth (MB/s), IOPS and completion-latency percentiles (ms) of fio."""
    data = _load_json(text, "fio")
    try:
        job = data["jobs"][0]
    except (KeyError, IndexError):
        raise AcceptError("fio: no 'jobs' in the JSON output") from None
    out: dict[str, float] = {}
    for direction in ("read", "write"):
        stats = job.get(direction, {})
        if not stats or not stats.get("io_bytes"):
            continue
        out[f"{direction}_mbyte_per_s"] = stats["bw"] * 1024 / 1e6  # fio reports KiB/s
        out[f"{direction}_iops"] = float(stats["iops"])
        percentiles = stats.get("clat_ns", {}).get("percentile", {})
        for key, label in (("99.000000", "p99"), ("99.900000", "p999")):
            if key in percentiles:
                out[f"{direction}_{label}_ms"] = percentiles[key] / 1e6
    if not out:
        raise AcceptError("fio: the job moved no data")
    return out


def parse_iperf3(text: str) -> float:
    """Received throughput of an iperf3 run, Gb/s."""
    data = _load_json(text, "iperf3")
    if "error" in data:
        raise AcceptError(f"iperf3: {data['error']}")
    try:
        return float(data["end"]["sum_received"]["bits_per_second"]) / 1e9
    except (KeyError, TypeError):
        raise AcceptError("iperf3: no end.sum_received in the JSON output") from None


@dataclass(frozen=True)
class DcgmRow:
    test: str
    result: str  # Pass, Fail, Warn, Skip
    detail: str


def parse_dcgmi_diag(text: str) -> list[DcgmRow]:
    """Test rows of a ``dcgmi diag`` table; section rules and warning lines are skipped."""
    rows = []
    for line in text.splitlines():
        match = re.match(
            r"^\|\s*([^|-][^|]*?)\s*\|\s*(Pass|Fail|Warn|Skip)\b\s*-?\s*([^|]*?)\s*\|", line
        )
        if match:
            rows.append(DcgmRow(test=match[1], result=match[2], detail=match[3]))
    if not rows:
        raise AcceptError("dcgmi diag: no result table in the output")
    return rows
