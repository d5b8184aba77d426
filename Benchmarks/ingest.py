#!/usr/bin/env python3
"""Ingest benchmark: a 100,000-item snapshot pair in diff-bench's generic shape (three sections, ids
"item-N", kind "card", models {"title": "item N", "n": N}; 10% deleted, 10% inserted, 5% moved, 5% updated).

In one run, alternating, it times
  1. parse + validate + diff (ingest-bench: WireCodec.decodeSnapshot + WireSnapshot.diff) built from this
     checkout ("new") and from a previous commit ("base"), and Python's json.loads on the same bytes;
  2. end to end: from the start of a PUT of the new snapshot (the feed holds the old one) to the whole
     batch event received by a subscriber, against a release server built from each of the two commits.

    python3 Benchmarks/ingest.py [--base <commit>] [--rounds 7] [--repetitions 5] [--e2e-rounds 7]

The base commit defaults to `git merge-base HEAD main`. Everything is built under .build-ingest/.
"""
import argparse
import json
import os
import random
import re
import select
import socket
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build-ingest")


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def run(command, **options):
    log("+", " ".join(command))
    return subprocess.run(command, check=True, stdout=sys.stderr, **options)


def generate(size=100_000, seed=7):
    rng = random.Random(seed)
    sections = [[] for _ in range(3)]
    for i in range(size):
        sections[i % 3].append(i)

    def document(secs, changed):
        return {"sections": [{"id": f"section-{s}", "model": {"title": f"Section {s}"},
                              "items": [{"id": f"item-{i}", "kind": "card", "model": {"title": f"item {i}", "n": i + (1 if i in changed else 0)}}
                                        for i in items]} for s, items in enumerate(secs)]}
    everything = [i for s in sections for i in s]
    deleted = set(rng.sample(everything, size // 10))
    new = [[i for i in s if i not in deleted] for s in sections]
    next_id = size
    for _ in range(size // 10):
        s = rng.randrange(3)
        new[s].insert(rng.randint(0, len(new[s])), next_id)
        next_id += 1
    survivors = [i for i in everything if i not in deleted]
    for i in rng.sample(survivors, size // 20):
        for s in new:
            if i in s:
                s.remove(i)
                break
        t = rng.randrange(3)
        new[t].insert(rng.randint(0, len(new[t])), i)
    updated = set(rng.sample(survivors, size // 20))
    dump = lambda d: json.dumps(d, separators=(",", ":")).encode()
    return dump(document(sections, set())), dump(document(new, updated))


def bench_package(name, dependency):
    """A package holding ingest-bench's source, depending on `dependency` (a checkout) by path."""
    folder = os.path.join(WORK, name)
    os.makedirs(os.path.join(folder, "Sources", "ingest-bench"), exist_ok=True)
    with open(os.path.join(ROOT, "Benchmarks", "Sources", "ingest-bench", "main.swift")) as source:
        code = source.read()
    with open(os.path.join(folder, "Sources", "ingest-bench", "main.swift"), "w") as target:
        target.write(code)
    package = os.path.basename(os.path.normpath(dependency))
    with open(os.path.join(folder, "Package.swift"), "w") as manifest:
        manifest.write(f"""// swift-tools-version:6.0
import PackageDescription
let package = Package(name: "{name}", platforms: [.macOS(.v14)],
    dependencies: [.package(path: "{dependency}")],
    targets: [.executableTarget(name: "ingest-bench", dependencies: [
        .product(name: "DiffStream", package: "{package}"), .product(name: "DiffStreamJSON", package: "{package}")],
        swiftSettings: [.swiftLanguageMode(.v6)])])
""")
    run(["swift", "build", "-c", "release", "--package-path", folder, "--scratch-path", os.path.join(folder, ".build")])
    return os.path.join(folder, ".build", "release", "ingest-bench")


def server_binary(checkout, scratch):
    run(["swift", "build", "-c", "release", "--product", "diffstream", "--package-path", checkout, "--scratch-path", scratch])
    return os.path.join(scratch, "release", "diffstream")


def time_swift(binary, old_path, new_path, repetitions):
    out = subprocess.run([binary, old_path, new_path, str(repetitions)], check=True, capture_output=True, text=True).stdout
    rows = [line.split() for line in out.strip().splitlines()]
    return [float(r[0]) for r in rows], [float(r[1]) for r in rows], [float(r[2]) for r in rows], int(rows[0][3])


PY_TIMER = """
import json, sys, time
data = open(sys.argv[1], 'rb').read()
json.loads(data)
for _ in range(int(sys.argv[2])):
    t = time.perf_counter(); json.loads(data); print((time.perf_counter() - t) * 1000)
"""


def time_python(path, repetitions):
    out = subprocess.run([sys.executable, "-c", PY_TIMER, path, str(repetitions)], check=True, capture_output=True, text=True).stdout
    return [float(x) for x in out.split()]


class Server:
    def __init__(self, binary, name):
        self.name = name
        self.process = subprocess.Popen([binary, "--port", "0", "--public", WORK, "--stream-buffer", str(256 << 20),
                                         "--max-body", str(64 << 20), "--log-level", "warning", "--compression", "off"],
                                        stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        self.port = None
        while time.time() < deadline and self.port is None:
            line = self.process.stderr.readline()
            match = re.search(r"listening on https?://[^\s]+:(\d+)", line)
            if match:
                self.port = int(match.group(1))
        assert self.port, f"{name}: no listening line"
        threading.Thread(target=lambda: [None for _ in self.process.stderr], daemon=True).start()

    def put(self, feed, body):
        """Sends the PUT; returns (seconds to send the body, the status line and body)."""
        sock = socket.create_connection(("127.0.0.1", self.port))
        head = f"PUT /feeds/{feed} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        t0 = time.perf_counter()
        sock.sendall(head.encode() + body)
        sent = time.perf_counter() - t0
        response = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            response += chunk
        sock.close()
        return sent, response

    def stop(self):
        self.process.terminate()
        self.process.wait(10)


class Subscriber:
    """Reads an event stream on its own thread; records when each event's last byte arrived."""
    def __init__(self, port, feed):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.sendall(f"GET /feeds/{feed}/events HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        self.events = []  # (arrival time, kind, size)
        self.condition = threading.Condition()
        threading.Thread(target=self.loop, daemon=True).start()

    def loop(self):
        buffer = b""
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError:  # closed by the benchmark
                return
            if not chunk:
                return
            start = max(0, len(buffer) - 1)
            buffer += chunk
            while True:
                end = buffer.find(b"\n\n", start)
                if end < 0:
                    break
                block, buffer, start = buffer[:end], buffer[end + 2:], 0
                kind = re.search(rb"^event: (\w+)", block, re.M)
                with self.condition:
                    self.events.append((time.perf_counter(), kind.group(1).decode() if kind else "", len(block)))
                    self.condition.notify_all()

    def wait_for(self, count, timeout=60):
        with self.condition:
            assert self.condition.wait_for(lambda: len(self.events) >= count, timeout), "no event"
            return self.events[count - 1]


def end_to_end(server, bodies, rounds):
    """Times PUT → batch on the wire, alternately to the new and back to the old snapshot."""
    old, new = bodies
    server.put("bench", old)
    subscriber = Subscriber(server.port, "bench")
    seen = 1
    while subscriber.wait_for(seen)[1] != "snapshot":  # the response head and `retry:` come first
        seen += 1
    results = []
    for index in range(rounds):
        body = new if index % 2 == 0 else old
        t0 = time.perf_counter()
        sent, response = server.put("bench", body)
        assert b'"ops":30000' in response or b'"ops":' in response, response[:200]
        seen += 1
        arrived, kind, size = subscriber.wait_for(seen)
        assert kind == "batch", kind
        results.append(((arrived - t0) * 1000, sent * 1000, size))
    subscriber.sock.close()
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--base", default=None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--e2e-rounds", type=int, default=7)
    args = parser.parse_args()
    base = args.base or subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    base = subprocess.run(["git", "rev-parse", "--short", base], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True, capture_output=True, text=True).stdout.strip()
    os.makedirs(WORK, exist_ok=True)

    base_source = os.path.join(WORK, "base-src")
    run(["rm", "-rf", base_source])
    os.makedirs(base_source)
    subprocess.run(f"git -C '{ROOT}' archive {base} | tar -x -C '{base_source}'", shell=True, check=True)

    old_bytes, new_bytes = generate()
    old_path, new_path = os.path.join(WORK, "old.json"), os.path.join(WORK, "new.json")
    open(old_path, "wb").write(old_bytes)
    open(new_path, "wb").write(new_bytes)

    benches = {"new": bench_package("bench-new", ROOT), "base": bench_package("bench-base", base_source)}
    servers = {"new": server_binary(ROOT, os.path.join(WORK, "server-new")), "base": server_binary(base_source, os.path.join(WORK, "server-base"))}

    # 1. parse + validate + diff, alternating the three.
    totals = {"new": [], "base": [], "python": []}
    decode = {"new": [], "base": []}
    diff = {"new": [], "base": []}
    operations = {}
    for round_index in range(args.rounds):
        order = ["new", "python", "base"]
        order = order[round_index % 3:] + order[:round_index % 3]
        for name in order:
            if name == "python":
                totals["python"] += time_python(new_path, args.repetitions)
            else:
                d, f, t, ops = time_swift(benches[name], old_path, new_path, args.repetitions)
                decode[name] += d
                diff[name] += f
                totals[name] += t
                operations[name] = ops
        log(f"round {round_index + 1}/{args.rounds} done")

    median = statistics.median
    load = open("/proc/loadavg").read().split()[:3]
    print(f"ingest benchmark: new = {head} (this checkout), base = {base}; {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; "
          f"{os.cpu_count()} cores, load average {' '.join(load)}")
    print(f"data: old {len(old_bytes):,} bytes, new {len(new_bytes):,} bytes, 100,000 items each in 3 sections; "
          f"batch: {operations['new']} operations (base: {operations['base']})")
    print()
    print("| path | median ms | runs | ratio to Python json.loads |")
    print("|---|---:|---:|---:|")
    py = median(totals["python"])
    print(f"| Python json.loads (parse only) | {py:.1f} | {len(totals['python'])} | 1.00 |")
    for name in ["new", "base"]:
        print(f"| {name}: parse + validate + diff | {median(totals[name]):.1f} | {len(totals[name])} | {median(totals[name]) / py:.2f} |")
        print(f"| {name}: of which decodeSnapshot | {median(decode[name]):.1f} | | {median(decode[name]) / py:.2f} |")
        print(f"| {name}: of which diff | {median(diff[name]):.1f} | | {median(diff[name]) / py:.2f} |")
    print()
    print(f"speed-up of parse + validate + diff, base / new: {median(totals['base']) / median(totals['new']):.2f}x")
    sys.stdout.flush()
    # 2. End to end, alternating the two servers.
    e2e = {"new": [], "base": []}
    running = {name: Server(binary, name) for name, binary in servers.items()}
    try:
        for round_index in range(args.e2e_rounds):
            for name in (["new", "base"] if round_index % 2 == 0 else ["base", "new"]):
                e2e[name] += end_to_end(running[name], (old_bytes, new_bytes), 2)
            log(f"end-to-end round {round_index + 1}/{args.e2e_rounds} done")
    finally:
        for server in running.values():
            server.stop()

    print()
    print("| server | PUT → batch received, median ms | runs | client: sending the body, median ms | batch event bytes |")
    print("|---|---:|---:|---:|---:|")
    for name in ["new", "base"]:
        rows = e2e[name]
        print(f"| {name} | {median(r[0] for r in rows):.1f} | {len(rows)} | {median(r[1] for r in rows):.1f} | {rows[0][2]:,} |")
    print()
    print(f"end to end, base / new: {median(r[0] for r in e2e['base']) / median(r[0] for r in e2e['new']):.2f}x faster")


if __name__ == "__main__":
    main()
