"""The process heap: threads share the few malloc arenas the service allows (glibc)."""

import subprocess
import sys
from pathlib import Path

import pytest

from consolidation import heap

# Eight threads alive at once, each allocating blocks under glibc's mmap threshold (so they come from its arena),
# then glibc's own statistics, which list one "Arena N:" per arena the process made.
THREADS = """
import ctypes, sys, threading
from consolidation import heap
if sys.argv[1] == "bounded":
    assert heap.bound_arenas()
started, done = threading.Barrier(9), threading.Event()
def allocate():
    held = [bytearray(64 * 1024) for _ in range(16)]
    started.wait()
    done.wait()
threads = [threading.Thread(target=allocate) for _ in range(8)]
for thread in threads:
    thread.start()
started.wait()
done.set()
for thread in threads:
    thread.join()
ctypes.CDLL("libc.so.6").malloc_stats()
"""


def arenas_made(mode: str) -> int:
    finished = subprocess.run([sys.executable, "-c", THREADS, mode], capture_output=True, text=True, timeout=60,
                              cwd=Path(__file__).parent.parent, check=True)
    return sum(line.startswith("Arena ") for line in finished.stderr.splitlines())


@pytest.mark.skipif(heap._MALLOPT is None, reason="mallopt is glibc's; other C libraries have no arenas to bound")
def test_threads_share_the_bounded_arenas():
    assert arenas_made("bounded") <= heap.ARENAS
    assert arenas_made("default") > heap.ARENAS  # without the bound, glibc gives the threads arenas of their own
