#!/usr/bin/env python3
"""What preallocating the log saves: small groups written with pwrite + fdatasync at the end of a file,
once growing the file (each fdatasync also writes the new size) and once inside zero bytes written
beforehand (the data and a cache flush only), alternating, ROUNDS rounds; prints the medians.
    python3 Benchmarks/fsync-prealloc.py [DIR]      (DIR: a directory on the disk to measure, default .;
                                                     WRITES=2000 ROUNDS=3 SIZE=4400, about a group of 3)"""
import os
import statistics
import sys
import tempfile
import time

DIRECTORY = sys.argv[1] if len(sys.argv) > 1 else "."
WRITES = int(os.environ.get("WRITES", "2000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
SIZE = int(os.environ.get("SIZE", "4400"))


def run(preallocated):
    """Microseconds of wall time and of CPU time per write + fdatasync."""
    with tempfile.NamedTemporaryFile(dir=DIRECTORY) as file:
        descriptor = file.fileno()
        if preallocated:
            os.pwrite(descriptor, b"\0" * (WRITES * SIZE), 0)
            os.fdatasync(descriptor)
        group = b"x" * SIZE
        wall, cpu = time.perf_counter(), time.process_time()
        for index in range(WRITES):
            os.pwrite(descriptor, group, index * SIZE)
            os.fdatasync(descriptor)
        return ((time.perf_counter() - wall) / WRITES * 1e6, (time.process_time() - cpu) / WRITES * 1e6)


results = {False: [], True: []}
for _ in range(ROUNDS):
    for preallocated in (False, True):
        results[preallocated].append(run(preallocated))
for preallocated, label in ((False, "growing the file"), (True, "inside preallocated zeros")):
    walls = [wall for wall, _ in results[preallocated]]
    cpus = [cpu for _, cpu in results[preallocated]]
    print(f"{label:26s} wall {statistics.median(walls):6.1f} us  cpu {statistics.median(cpus):5.1f} us  (per write + fdatasync; rounds: "
          + ", ".join(f"{wall:.0f}" for wall in walls) + ")")
