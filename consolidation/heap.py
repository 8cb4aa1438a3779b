"""The process heap around a task: no cycle collection while it builds its objects, and the memory it freed
given back to the operating system after."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Iterator
from contextlib import contextmanager


def _libc_trim():
    """glibc's malloc_trim, or None where the C library has none (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


_TRIM = _libc_trim()


def release_free_memory() -> None:
    """A task builds and drops hundreds of megabytes of small objects and arrays; glibc keeps the freed pages
    for reuse, so the process's resident size would stay at its largest. Trimming returns them (a few ms)."""
    if _TRIM is not None:
        _TRIM(0)


@contextmanager
def collection_paused() -> Iterator[None]:
    """Pause Python's cycle collector for a task. A task builds hundreds of thousands of small objects that
    hold no cycles; each collection walks every object the process holds (the kept graph, the fact cache), so
    at 100k memories half the time of reading memories as facts went to collections that freed nothing."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()
