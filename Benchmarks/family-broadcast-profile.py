#!/usr/bin/env python3
"""Instructions per member of one family-wide change (issue 52), counted by callgrind.

Runs `diffstream --demo --data none --examples home` under `valgrind --tool=callgrind`, opens N streams
of `home.u00000`…, waits until each has its snapshot, zeroes the counters (`callgrind_control -z`),
waits until each stream has its first `event: batch` (the demo's catalogue edition, every 20 s, applied
to every live member), then dumps the counters (`callgrind_control -d`). The dump (`OUT/cg.PID.1`) holds
the edition's work: per member, the update, render, wire form, diff, encoding and delivery, plus the
idle loop's few instructions. Instruction counts do not depend on the machine's load.

    swift build -c release --static-swift-stdlib --product diffstream --scratch-path .build-static
    objcopy --strip-debug .build-static/release/diffstream /tmp/diffstream-nodebug   # valgrind 3.19 cannot read DWARF 5
    BIN=/tmp/diffstream-nodebug N=500 OUT=/tmp/cg python3 Benchmarks/family-broadcast-profile.py
    callgrind_annotate --inclusive=yes /tmp/cg/cg.*.1 | swift demangle --simplified | less

A binary linked to the toolchain's shared libdispatch crashes valgrind 3.19: build with
--static-swift-stdlib. Prints the dump's total and the total per member.
"""
import glob
import os
import re
import selectors
import signal
import socket
import subprocess
import sys
import time

N = int(os.environ.get("N", "500"))
BIN = os.environ.get("BIN", "/tmp/diffstream-nodebug")
OUT = os.environ.get("OUT", "/tmp/cg")


def main():
    os.makedirs(OUT, exist_ok=True)
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={OUT}/cg.%p", BIN, "--demo", "--data", "none",
               "--examples", "home", "--port", "0", "--max-connections-per-ip", "0", "--log-level", "warning"]
    env = dict(os.environ, SWIFT_DETERMINISTIC_HASHING="1")
    server = subprocess.Popen(command, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env, text=True)
    port = None
    for line in server.stderr:  # valgrind's banner, then the server's announcement
        match = re.search(r"listening on http://[^:/]+:(\d+)", line)
        if match:
            port = int(match.group(1))
            break
    if port is None:
        sys.exit("the server did not announce its port (valgrind's output above)")
    selector = selectors.DefaultSelector()
    streams = {}
    for index in range(N):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.sendall(f"GET /feeds/home.u{index:05d}/events HTTP/1.1\r\nHost: bench\r\n\r\n".encode())
        sock.setblocking(False)
        streams[sock] = {"text": b"", "snapshot": False, "batch": False}
        selector.register(sock, selectors.EVENT_READ)

    def pump(done, timeout):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for key, _ in selector.select(1):
                state = streams[key.fileobj]
                try:
                    state["text"] += key.fileobj.recv(65536)
                except BlockingIOError:
                    continue
                state["snapshot"] |= b"event: snapshot" in state["text"]
                state["batch"] |= b"event: batch" in state["text"]
            if done():
                return True
        return False

    if not pump(lambda: all(s["snapshot"] for s in streams.values()), 600):
        sys.exit("not every stream got its snapshot")
    for state in streams.values():
        state["text"] = b""
    subprocess.run(["callgrind_control", "-z", str(server.pid)], capture_output=True, check=True)
    if not pump(lambda: all(s["batch"] for s in streams.values()), 600):
        sys.exit("not every stream got the edition's batch")
    subprocess.run(["callgrind_control", "-d", str(server.pid)], capture_output=True, check=True)
    server.send_signal(signal.SIGTERM)
    server.wait(120)
    dump = f"{OUT}/cg.{server.pid}.1"
    total = next(int(line.split()[1]) for line in open(dump) if line.startswith("summary:") or line.startswith("totals:"))
    print(f"{dump}: {total:,} instructions, {total // N:,} per member ({N} members)")


if __name__ == "__main__":
    main()
