#!/usr/bin/env python3
"""Memory per idle event-stream subscriber, with a budget (issue 35).

Starts each binary given with `--data none` on a free port, PUTs a 20-item feed, and holds idle
subscribers on it (`GET /feeds/F/events`, each read until its opening snapshot has arrived):

- `start`: the process's resident memory (VmRSS) once it serves and holds the feed;
- per subscriber: the growth of VmRSS from N to 2N subscribers, divided by N (the budget's figure);
  also the growth from none to 2N divided by 2N, as Benchmarks/run-fanout.sh measures it. Measuring the second N
  rather than the first leaves out what the first connections make once (per-loop buffers, the
  first pages of each malloc arena, the timer heap's first growths), so the figure is the marginal
  cost of a subscriber and is stable from run to run.

With several binaries the runs alternate (A B A B ...), and medians are printed. With `--budget KIB`,
the exit status is 1 when the median for any binary is over it (CI runs this on the release binary).

    python3 Benchmarks/idle-memory.py --subscribers 10000 --runs 3 /tmp/diffstream-3bc9fc7 .build-release/release/diffstream
    python3 Benchmarks/idle-memory.py --subscribers 2000 --budget 1.3 .build-release/release/diffstream
"""
import argparse
import http.client
import os
import re
import resource
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def start(binary, subscribers):
    args = [binary, "--host", "127.0.0.1", "--port", "0", "--data", "none", "--public", tempfile.mkdtemp(prefix="idle-memory-"),
            "--max-connections", str(subscribers + 100), "--max-connections-per-ip", "0", "--log-level", "warning",
            "--loops", "2"]  # two event loops on any machine: per-loop buffers are part of the figure
    process = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    for line in process.stderr:
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", line)
        if match:
            return process, int(match.group(1))
        if time.monotonic() > deadline:
            break
    process.kill()
    raise RuntimeError(f"{binary} did not say where it listens")


def request(port, method, path, body=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request(method, path, body=body)
    reply = connection.getresponse()
    data = reply.read()
    connection.close()
    return reply.status, data


def snapshot(items):
    listed = ",".join(f'{{"id":"i{n}","kind":"row","model":{{"title":"Item {n}","n":{n}}}}}' for n in range(items))
    return f'{{"sections":[{{"id":"s","model":null,"items":[{listed}]}}]}}'


def subscribe(port, count, feed, batch=64):
    """Opens `count` subscribers, `batch` at a time (each batch once the one before has its opening
    snapshots, so the server's transient allocations for requests in flight stay few and the same
    from run to run), and returns their sockets."""
    selector = selectors.DefaultSelector()
    sockets = []
    wire = f"GET /feeds/{feed}/events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n".encode()
    deadline = time.monotonic() + 120
    while len(sockets) < count:
        pending = {}
        for _ in range(min(batch, count - len(sockets))):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(wire)
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
            pending[sock] = b""
            sockets.append(sock)
        while pending:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(pending)} subscribers got no snapshot")
            drain(selector, pending, timeout=1)
    for sock in sockets:
        selector.unregister(sock)
    return sockets, selector


def drain(selector, pending, timeout):
    for key, _ in selector.select(timeout):
        sock = key.fileobj
        try:
            data = sock.recv(65536)
        except BlockingIOError:
            continue
        if not data:
            raise RuntimeError("the server closed a subscriber")
        if sock in pending:
            pending[sock] += data
            if b"event: snapshot" in pending[sock] and pending[sock].endswith(b"\n\n"):
                del pending[sock]


def settle(pid):
    """VmRSS once it stops moving (two reads 200 ms apart within 64 KiB; at most 3 s)."""
    last = rss_kib(pid)
    for _ in range(15):
        time.sleep(0.2)
        now = rss_kib(pid)
        if abs(now - last) <= 64:
            return now
        last = now
    return last


def run(binary, subscribers, items):
    process, port = start(binary, 2 * subscribers)
    opened = []
    try:
        status, body = request(port, "PUT", "/feeds/idle", snapshot(items))
        if status not in (200, 201):
            raise RuntimeError(f"PUT /feeds/idle answered {status}: {body[:200]!r}")
        started = settle(process.pid)
        first, _ = subscribe(port, subscribers, "idle")
        opened += first
        at_n = settle(process.pid)
        second, _ = subscribe(port, subscribers, "idle")
        opened += second
        at_2n = settle(process.pid)
        if process.poll() is not None:
            raise RuntimeError(f"{binary} exited with {process.returncode}")
        return started / 1024, (at_2n - at_n) / subscribers, (at_2n - started) / (2 * subscribers)
    finally:
        for sock in opened:
            sock.close()
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binaries", nargs="+")
    parser.add_argument("--subscribers", type=int, default=2000, help="N: the figure is the growth from N to 2N (default 2000)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--budget", type=float, help="KiB per subscriber; exit 1 when a binary's median is over it")
    options = parser.parse_args()
    wanted = 4 * options.subscribers + 256
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))  # the server inherits it

    results = {binary: [] for binary in options.binaries}
    for number in range(options.runs):
        for binary in options.binaries:
            started, per, average = run(binary, options.subscribers, options.items)
            results[binary].append((started, per, average))
            print(f"run {number + 1} {binary}: starts at {started:.1f} MiB, {per:.3f} KiB per idle subscriber "
                  f"({average:.3f} averaged over all {2 * options.subscribers})", flush=True)

    over = False
    print(f"\nmedians of {options.runs} runs, growth from {options.subscribers} to {2 * options.subscribers} subscribers:")
    print(f"| build | idle process MiB | KiB per idle subscriber ({options.subscribers} to {2 * options.subscribers}) | KiB averaged over all {2 * options.subscribers} |")
    print("|---|---:|---:|---:|")
    for binary, runs in results.items():
        started = statistics.median(run[0] for run in runs)
        per = statistics.median(run[1] for run in runs)
        average = statistics.median(run[2] for run in runs)
        print(f"| {binary} | {started:.1f} | {per:.3f} | {average:.3f} |")
        if options.budget is not None and per > options.budget:
            print(f"idle-memory: {binary} holds {per:.3f} KiB per idle subscriber, over the budget of {options.budget} KiB", file=sys.stderr)
            over = True
    sys.exit(1 if over else 0)


if __name__ == "__main__":
    main()
