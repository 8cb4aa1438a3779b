"""The process heap: few malloc arenas, no cycle collection while a task builds its objects, and the memory it
freed given back to the operating system after."""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
from collections.abc import Iterator
from contextlib import contextmanager


# glibc gives each new thread a malloc arena of its own (up to 8 per core). The run's helper threads (scan
# readers, the kept graph's renumbering, fingerprints) each left one holding freed, scattered pages that trimming
# cannot return: at 100k memories the process held 695-707 MB between runs and peaked at 803-808 MB, against
# 617-629 and 733-750 MB with one or two arenas, at the same speed. Two rather than one: threads wait less on
# each other's allocations.
ARENAS = 2
_M_ARENA_MAX = -8  # mallopt's parameter number for it (malloc.h)


def _libc_function(name: str, argtypes: list, restype):
    """A glibc function, or None where the C library has none (musl, macOS)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        function = getattr(libc, name)
    except (OSError, AttributeError):
        return None
    function.argtypes, function.restype = argtypes, restype
    return function


_TRIM = _libc_function("malloc_trim", [ctypes.c_size_t], ctypes.c_int)
_MALLOPT = _libc_function("mallopt", [ctypes.c_int, ctypes.c_int], ctypes.c_int)


def bound_arenas(count: int = ARENAS) -> bool:
    """Let the threads created from now on share `count` malloc arenas; whether the C library took it."""
    return _MALLOPT is not None and _MALLOPT(_M_ARENA_MAX, count) == 1


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


def keep_out_of_collections() -> None:
    """Keep every object alive now out of the cycle collector's walks for good (gc.freeze). A serving process
    holds a store's ids in a few containers of a million items each; every full collection walked them (~100 ms
    at a million points, every request thread stopped meanwhile: at 20 recalls a second two or three a minute,
    which made POST /recall's p99 49-80 ms against 26 ms frozen). Objects made later are collected as before;
    what is frozen is still freed when nothing refers to it. No collection first: during an import of 100k
    (collections paused, so every object the import made is young) a full one took 0.33-0.36 s and a young
    one 0.22-0.94 s, with the GIL held: the slowest status replies' wait. The price: cycles that are garbage
    already when frozen are never collected (the index freezes after each of its builds, a handful in a
    store's life)."""
    gc.freeze()
