"""Drawn pictures kept by what they show, so an unchanged picture is not drawn again.

The planner (``clusterforge serve``) re-renders the whole report on every form change, and
each matplotlib picture costs up to a second to draw; most changes alter only a few of them
(a new price redraws no rack). :func:`~clusterforge.report.figure_file.draw_picture` looks a
picture up here by a :func:`digest` of its *key*: the data its painter reads (the fabric
diagram's boxes and links, the drawn racks' devices, a chart's series), never an object's
identity, so a redrawn design that shows the same thing finds the picture and one that shows
anything else does not. The same key always gives the same bytes (pictures are drawn
deterministically), so a picture from the cache is the picture drawing would give.

The cache is bounded: the least recently used picture is dropped beyond
:data:`MAX_PICTURES` pictures or :data:`MAX_BYTES` bytes, so a long session does not grow.
"""

from __future__ import annotations

import dataclasses
import hashlib
import struct
import threading
from collections import OrderedDict
from collections.abc import Callable
from enum import Enum

import numpy as np

__all__ = ["MAX_BYTES", "MAX_PICTURES", "PictureCache", "digest"]

MAX_PICTURES = 48  # a report holds about a dozen pictures: a few reports' worth
MAX_BYTES = 64 * 2**20  # the floor of a 100,000-GPU hall is a few MB of SVG


def digest(key: object) -> str:
    """A stable hex digest (SHA-256) of ``key``: plain values (None, bool, int, float, str,
    bytes), tuples, lists, dicts, enums, dataclasses and numpy arrays, nested. Equal content
    gives an equal digest in every process; a type it cannot read by value raises
    :class:`TypeError` rather than fall back on identity."""
    h = hashlib.sha256()
    _feed(h, key)
    return h.hexdigest()


def _feed(h: hashlib._Hash, value: object) -> None:
    # every value is tagged with its type, and every sequence with its length, so that
    # ("ab",) and ("a", "b"), 1 and 1.0 and "1" all differ
    match value:
        case None:
            h.update(b"N")
        case bool():
            h.update(b"T" if value else b"F")
        case Enum():
            h.update(f"E{type(value).__qualname__}.{value.name};".encode())
        case int():
            h.update(f"i{value};".encode())
        case float():
            h.update(b"f" + struct.pack("<d", value))
        case str():
            data = value.encode("utf-8")
            h.update(b"s%d:" % len(data) + data)
        case bytes():
            h.update(b"b%d:" % len(value) + value)
        case tuple() | list():
            h.update(b"(%d:" % len(value))
            for item in value:
                _feed(h, item)
        case dict():
            h.update(b"{%d:" % len(value))
            for k, v in value.items():  # insertion order: a palette's order is drawn
                _feed(h, k)
                _feed(h, v)
        case np.ndarray() if value.dtype.kind != "O":  # an object array's bytes are addresses
            data = np.ascontiguousarray(value).tobytes()
            h.update(f"a{value.dtype.str}{value.shape}:{len(data)}:".encode() + data)
        case np.generic():
            _feed(h, value.item())
        case _ if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = dataclasses.fields(value)
            h.update(f"D{type(value).__module__}.{type(value).__qualname__}{len(fields)}:".encode())
            for f in fields:
                _feed(h, f.name)
                _feed(h, getattr(value, f.name))
        case _:
            raise TypeError(
                f"picture key: cannot digest a {type(value).__qualname__} by value; "
                "key the picture by the plain data it draws"
            )


class PictureCache:
    """Pictures (bytes) by key digest, least recently used dropped first beyond
    ``max_pictures`` pictures or ``max_bytes`` bytes. Safe to share between threads; two
    threads missing the same picture at once both draw it (the same bytes)."""

    def __init__(self, max_pictures: int = MAX_PICTURES, max_bytes: int = MAX_BYTES) -> None:
        self.max_pictures = max_pictures
        self.max_bytes = max_bytes
        self._pictures: OrderedDict[str, bytes] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._pictures)

    @property
    def num_bytes(self) -> int:
        return self._bytes

    def get_or_draw(self, key: object, draw: Callable[[], bytes]) -> bytes:
        """The picture cached for ``key``, else ``draw()`` (then kept)."""
        name = digest(key)
        with self._lock:
            picture = self._pictures.get(name)
            if picture is not None:
                self._pictures.move_to_end(name)
                self.hits += 1
                return picture
            self.misses += 1
        picture = draw()
        with self._lock:
            if name not in self._pictures:
                self._pictures[name] = picture
                self._bytes += len(picture)
            while self._pictures and (
                len(self._pictures) > self.max_pictures or self._bytes > self.max_bytes
            ):
                _, dropped = self._pictures.popitem(last=False)
                self._bytes -= len(dropped)
        return picture

    def clear(self) -> None:
        with self._lock:
            self._pictures.clear()
            self._bytes = 0
            self.hits = self.misses = 0
