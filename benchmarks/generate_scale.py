"""Wall time, peak memory and bytes written of ``clusterforge generate`` on the examples.

Run by hand: ``python benchmarks/generate_scale.py [SPEC ...]`` (default: the 512-GPU and the
100,000-GPU examples). Each spec runs ``clusterforge generate SPEC -o TMP`` in a fresh
process, so peak RSS (the child's ``ru_maxrss``) belongs to that run alone; the time covers
the whole command, interpreter start and planning included; CPU time (user + system) is
the steadier figure on a busy machine. Target for the 100,000-GPU example: peak RSS under
300 MB.
"""

from __future__ import annotations

import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = "import sys; from clusterforge.cli.main import main; sys.argv[0] = 'clusterforge'; main()"
DEFAULT_SPECS = [ROOT / "examples/colo-512-h100.yaml", ROOT / "examples/colossus-100k-h100.yaml"]


def _bytes_and_files(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files), len(files)


def _run(spec: Path) -> tuple[float, float, float, int, int]:
    """(wall s, CPU s, peak RSS MiB, bytes written, files written) of one ``generate`` run."""
    with tempfile.TemporaryDirectory(prefix="cf-generate-bench-") as tmp:
        out = Path(tmp) / "out"
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", CHILD, "generate", str(spec), "-o", str(out)],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wall_s = time.perf_counter() - start
        # RUSAGE_CHILDREN holds the largest peak of the children waited for so far; each
        # spec runs in its own benchmark process (see main) so that figure is this run's.
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        size, count = _bytes_and_files(out)
    return wall_s, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, size, count


def main() -> None:
    specs = [Path(a) for a in sys.argv[1:]] or DEFAULT_SPECS
    if len(specs) > 1:  # one process per spec: ru_maxrss of children is a running maximum
        for spec in specs:
            subprocess.run([sys.executable, __file__, str(spec)], check=True)
        return
    wall_s, cpu_s, rss_mib, size, count = _run(specs[0])
    print(
        f"{specs[0].name:<28} wall {wall_s:6.2f} s   CPU {cpu_s:6.2f} s   "
        f"peak RSS {rss_mib:6.0f} MiB   "
        f"wrote {size / 1e6:7.1f} MB in {count:,} files"
    )


if __name__ == "__main__":
    main()
