#!/usr/bin/env python3
"""Waves of users who come, change their home feed and leave (issue 52, items 3 and 5).

Starts BINARY with the demo family `home.<user>` (`--examples home --family-idle IDLE`), and for each
wave PATCHes the home feed of USERS new users (keep-alive connections from a few threads), then waits
until every member is dropped (`diffstream_family_live{family="home"}` 0 on /metrics). After each wave
it reads the process's RSS (/proc/PID/status), the size of /metrics and the time it takes to answer,
and the count of series naming a member. Prints a table, and the last wave's RSS against the first's.

    python3 Benchmarks/family-waves.py .build-release/release/diffstream --waves 10 --users 10000 --data none
    python3 Benchmarks/family-waves.py .build-release/release/diffstream --waves 10 --users 10000 --data tmp

`--data tmp` keeps members in a fresh temporary directory and also reports the member store's bytes on
disk per user ever seen, and the start time with all of them kept (a restart at the end).
Exit status 1 when `--budget` is given and the last wave's RSS passes the first's by more than it (0.10:
10%).
"""
import argparse
import concurrent.futures
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))


def metrics(port):
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request("GET", "/metrics")
    body = connection.getresponse().read().decode()
    connection.close()
    return body, time.monotonic() - started


def value(text, name):
    match = re.search(rf"^{re.escape(name)} ([0-9.e+]+)$", text, re.M)
    return float(match.group(1)) if match else None


def start(binary, port, data, idle):
    process = subprocess.Popen([binary, "--host", "127.0.0.1", "--port", str(port), "--examples", "home", "--data", data,
                                "--family-idle", str(idle), "--max-connections-per-ip", "0"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.monotonic()
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, time.monotonic() - started
        except OSError:
            if process.poll() is not None:
                raise SystemExit(f"{binary} exited with {process.returncode}")
            time.sleep(0.01)


def patch_users(port, users, threads):
    def work(chunk):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for user in chunk:
            body = json.dumps({"recommendedHeader": {"title": f"Mine, {user}"}})
            for attempt in range(3):  # the server closes a keep-alive connection after its request limit
                try:
                    connection.request("PATCH", f"/feeds/home.{user}", body=body, headers={"Content-Type": "application/json"})
                    reply = connection.getresponse()
                    reply.read()
                    break
                except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                    connection.close()
                    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            else:
                raise SystemExit(f"PATCH home.{user}: the connection closed three times")
            if reply.status != 200:
                raise SystemExit(f"PATCH home.{user}: {reply.status}")
        connection.close()
    chunks = [users[index::threads] for index in range(threads)]
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        list(pool.map(work, chunks))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("--waves", type=int, default=10)
    parser.add_argument("--users", type=int, default=10000)
    parser.add_argument("--data", default="none", help="none, or tmp for a fresh temporary directory")
    parser.add_argument("--idle", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--budget", type=float, help="fail when the last wave's RSS passes the first's by more (0.10)")
    arguments = parser.parse_args()

    directory = tempfile.mkdtemp(prefix="family-waves-") if arguments.data == "tmp" else None
    data = os.path.join(directory, "data") if directory else "none"
    port = free_port()
    process, _ = start(arguments.binary, port, data, arguments.idle)
    rows = []
    try:
        for wave in range(arguments.waves):
            users = [f"w{wave}u{index}" for index in range(arguments.users)]
            began = time.monotonic()
            patch_users(port, users, arguments.threads)
            writes = time.monotonic() - began
            while True:
                text, _ = metrics(port)
                if value(text, 'diffstream_family_live{family="home"}') == 0:
                    break
                time.sleep(0.2)  # a benchmark's poll of the server's own count, not a test's wait
            text, seconds = metrics(port)
            members = len(re.findall(r'feed="home\.', text))
            rows.append((wave + 1, (wave + 1) * arguments.users, rss_kib(process.pid), len(text), seconds, members, writes))
            print(f"wave {wave + 1:2d}: {(wave + 1) * arguments.users:7d} users ever seen, RSS {rows[-1][2] / 1024:7.1f} MiB, "
                  f"/metrics {len(text):6d} B in {seconds * 1000:6.1f} ms, member series {members}, "
                  f"{arguments.users / writes:7.0f} PATCH/s", flush=True)
        if directory:
            store = sum(os.path.getsize(os.path.join(root, name)) for root, _, names in os.walk(data) for name in names)
            print(f"store on disk: {store} B, {store / (arguments.waves * arguments.users):.0f} B per user ever seen")
            process.terminate()
            process.wait(timeout=30)
            process, seconds = start(arguments.binary, port, data, arguments.idle)
            print(f"start with {arguments.waves * arguments.users} members kept: {seconds:.2f} s to accept, RSS {rss_kib(process.pid) / 1024:.1f} MiB")
    finally:
        process.terminate()
        process.wait(timeout=30)
        if directory:
            shutil.rmtree(directory, ignore_errors=True)
    growth = rows[-1][2] / rows[0][2] - 1
    print(f"RSS after the last wave against the first: {growth * 100:+.1f}%")
    if arguments.budget is not None and growth > arguments.budget:
        raise SystemExit(f"over budget: {growth * 100:+.1f}% > {arguments.budget * 100:.0f}%")


if __name__ == "__main__":
    main()
