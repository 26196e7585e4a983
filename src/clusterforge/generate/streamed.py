"""Files too large to hold in memory: written piece by piece, rendered again when read.

A :class:`StreamedFile` keeps a recipe for its text, not the text: ``chunks()`` yields it in
pieces, so that writing a 50 MB cable list costs the memory of one batch of rows.  Its
``content`` joins the pieces for callers that want the whole text (tests, small designs).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice

__all__ = ["CSV_BATCH_ROWS", "StreamedFile", "csv_chunks", "csv_file"]

CSV_BATCH_ROWS = 5000  # rows formatted per chunk: about 0.5 MB of text for a cable list


@dataclass(frozen=True)
class StreamedFile:
    """One output file whose text ``chunks()`` yields, rendered anew on each call."""

    path: str
    chunks: Callable[[], Iterable[str]]
    mode: int = 0o644

    @property
    def content(self) -> str:
        return "".join(self.chunks())


def csv_chunks(header: Sequence[str], rows: Iterable[Sequence[object]]) -> Iterator[str]:
    """CSV text (RFC 4180 quoting, ``\\n`` line ends) of ``header`` and ``rows``, in batches.

    Each row lists its values in ``header``'s order; the first row of each batch is checked
    for its length (a generator that mixes up its columns fails at once).
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    it = iter(rows)
    while batch := list(islice(it, CSV_BATCH_ROWS)):
        if len(batch[0]) != len(header):  # a bug in a generator, not bad input
            raise ValueError(f"row {batch[0]!r} does not match the header {list(header)}")
        writer.writerows(batch)
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def csv_file(
    path: str, header: Sequence[str], rows: Callable[[], Iterable[Sequence[object]]]
) -> StreamedFile:
    """A CSV file whose rows ``rows()`` yields each time the file is written or read."""
    return StreamedFile(path, lambda: csv_chunks(header, rows()))
