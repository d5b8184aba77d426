#!/usr/bin/env python3
"""Start time with a full store: FEEDS feeds of ITEMS items each on disk, then the time from exec to the
"listening" line (the server has loaded, decoded and restored every feed), RUNS times; prints the median.
With a second binary, both start on the same store, alternating, and the ratio of the medians is printed.
    python3 Benchmarks/store-start.py [BINARY [OTHER]]      (FEEDS=1000 ITEMS=1000 RUNS=3)"""
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

BINARY = sys.argv[1] if len(sys.argv) > 1 else ".build/release/diffstream"
BINARIES = [BINARY] + sys.argv[2:3]
FEEDS = int(os.environ.get("FEEDS", "1000"))
ITEMS = int(os.environ.get("ITEMS", "1000"))
RUNS = int(os.environ.get("RUNS", "3"))


def start(data, binary=BINARY):
    began = time.monotonic()
    process = subprocess.Popen([binary, "--port", "0", "--public", "Public", "--log-level", "warning", "--data", data], stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
        if "listening on http://" in line:
            return process, int(line.rsplit(":", 1)[1]), time.monotonic() - began, line
    raise SystemExit("the server did not start")


def fill(port, names):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    for name in names:
        body = json.dumps({"sections": [{"id": "s", "model": {"title": name}, "items": [
            {"id": f"item-{i}", "kind": "card", "model": {"title": f"Item {i} of {name}", "value": i}} for i in range(ITEMS)]}]})
        connection.request("PUT", f"/feeds/{name}", body=body)
        response = connection.getresponse()
        response.read()
        assert response.status == 201, response.status


with tempfile.TemporaryDirectory(dir=os.environ.get("DATA_BASE", "/tmp")) as work:
    data = os.environ.get("KEEP_DATA") or os.path.join(work, "data")  # KEEP_DATA=DIR keeps the filled store
    process, port, _, _ = start(data)
    names = [f"feed-{n:04d}" for n in range(FEEDS)]
    began = time.monotonic()
    writers = [threading.Thread(target=fill, args=(port, names[k::8])) for k in range(8)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    print(f"filled {FEEDS} feeds x {ITEMS} items in {time.monotonic() - began:.1f} s")
    process.terminate()
    process.wait()
    size = sum(os.path.getsize(os.path.join(data, f)) for f in os.listdir(data))
    print(f"store size on disk: {size / 1e6:.1f} MB")
    times = {binary: [] for binary in BINARIES}
    for _ in range(RUNS):
        for binary in BINARIES:
            process, port, seconds, _ = start(data, binary)
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            connection.request("GET", f"/feeds/{names[-1]}")
            document = json.loads(connection.getresponse().read())
            assert len(document["sections"][0]["items"]) == ITEMS
            times[binary].append(seconds)
            process.terminate()
            process.wait()
    for binary in BINARIES:
        print(f"{binary}: start to serving, {RUNS} runs: {', '.join(f'{t:.2f}' for t in times[binary])} s; median {statistics.median(times[binary]):.2f} s")
    if len(BINARIES) == 2:
        print(f"ratio {BINARIES[0]} / {BINARIES[1]}: {statistics.median(times[BINARIES[0]]) / statistics.median(times[BINARIES[1]]):.2f}")
